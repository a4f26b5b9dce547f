"""The tests that start containers. Their containers publish fixed loopback ports (a broker's advertised
port must be the one its container publishes), so two of them at once collide: ``make test`` keeps every
test of this directory on one xdist worker (``conformance/pytest_plugin.py``, by this path). A module
that starts containers belongs here, marked ``docker``.
"""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def docker_engine() -> None:
    """Skips the test, with the reason, unless a Docker engine, compose and the project's images are there
    (scripts/setup.d/40-docker.sh provides them, or says why it could not)."""
    from rmqtwin.containers import docker_problem

    problem = docker_problem()
    if problem is not None:
        pytest.skip(problem)
