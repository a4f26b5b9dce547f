"""Suite-wide fixtures: each area's pytest plugin is loaded when that area provides one."""

from __future__ import annotations

import importlib.util
import subprocess

import pytest

_OPTIONAL_PLUGINS = ("rmqtwin.conformance.pytest_plugin",)

pytest_plugins = [name for name in _OPTIONAL_PLUGINS if importlib.util.find_spec(name) is not None]


def _docker_engine_problem() -> str | None:
    """Why no Docker engine can be used here, or None when one answers (the client alone is not enough)."""
    try:
        import docker
    except ImportError:
        return "the docker SDK is not installed"
    try:
        docker.from_env(timeout=3).ping()
    except Exception as exc:
        return f"no reachable Docker engine ({type(exc).__name__}: {exc})"
    compose = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if compose.returncode != 0:
        return "the Docker engine answers but the 'docker compose' plugin is missing"
    return None


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Skips the test, with the reason, unless a Docker engine and compose are reachable."""
    problem = _docker_engine_problem()
    if problem is not None:
        pytest.skip(problem)
