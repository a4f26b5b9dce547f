"""How ``make test`` groups tests on its xdist workers (``conformance/pytest_plugin.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqtwin.conformance.pytest_plugin import DOCKER_TESTS, xdist_scope

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("nodeid", "scope"),
    [
        ("tests/docker/test_containers.py::test_restart[twin]", "docker"),
        ("tests/docker/test_new.py::test_x[real-5]", "docker"),
        ("tests/fakes/test_x.py::test_y[rocketmq-4.9]", "real-4.9"),
        ("tests/spark/test_replay_java.py::test_z[real-5]", "real-5"),
        ("tests/spark/test_ingest.py::test_w", "spark"),
        ("tests/codec/test_c.py::test_v[docker]", "tests/codec/test_c.py::test_v[docker]"),
    ],
)
def test_xdist_scope(nodeid: str, scope: str) -> None:
    assert xdist_scope(nodeid) == scope


def test_every_test_that_starts_containers_is_under_the_docker_directory() -> None:
    """Only there are they kept on one worker: a module elsewhere would start a second stack on the same
    fixed ports at the same time."""
    docker_dir = TESTS.parent / DOCKER_TESTS
    outside = [
        path.relative_to(TESTS.parent).as_posix()
        for path in TESTS.rglob("test_*.py")
        if docker_dir not in path.parents
        and path != Path(__file__).resolve()
        and ("mark.docker" in (text := path.read_text()) or "docker_engine" in text)
    ]
    assert outside == []
    inside = sorted(docker_dir.glob("test_*.py"))
    assert inside
    assert [path.name for path in inside if "pytest.mark.docker" not in path.read_text()] == []
