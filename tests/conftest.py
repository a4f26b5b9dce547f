"""Suite-wide fixtures: each area's pytest plugin is loaded when that area provides one."""

from __future__ import annotations

import importlib.util

import pytest

_OPTIONAL_PLUGINS = ("rmqtwin.conformance.pytest_plugin",)

pytest_plugins = [name for name in _OPTIONAL_PLUGINS if importlib.util.find_spec(name) is not None]


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Skips the test, with the reason, unless a Docker engine, compose and the project's images are there
    (scripts/setup.d/40-docker.sh provides them, or says why it could not)."""
    from rmqtwin.containers import docker_problem

    problem = docker_problem()
    if problem is not None:
        pytest.skip(problem)
