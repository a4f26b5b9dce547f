"""How ``make test`` groups tests on its xdist workers (``conformance/pytest_plugin.py``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqtwin.conformance.pytest_plugin import DOCKER_TESTS, FIRST, OWN_BROKER_TESTS, scope_order, xdist_scope

TESTS = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    ("nodeid", "scope"),
    [
        ("tests/docker/test_containers.py::test_restart[twin]", "docker"),
        ("tests/docker/test_new.py::test_x[real-5]", "docker"),
        ("tests/fakes/test_x.py::test_y[rocketmq-4.9]", "real-4.9"),
        ("tests/spark/test_replay_java.py::test_z[real-5]", "real-5"),
        ("tests/spark/test_ingest.py::test_w", "spark"),
        ("tests/codec/test_c.py::test_v[docker]", "tests/codec/test_c.py"),
        ("tests/golden/test_g.py::test_u[v5]", "golden"),
        (
            "tests/store_mirror/test_interop_real.py::test_t[real-5]",
            "tests/store_mirror/test_interop_real.py[real-5]",
        ),
        (
            "tests/conformance/test_launcher_ready.py::test_s[real-4.9]",
            "tests/conformance/test_launcher_ready.py[real-4.9]",
        ),
    ],
)
def test_xdist_scope(nodeid: str, scope: str) -> None:
    assert xdist_scope(nodeid) == scope


def test_own_broker_modules_exist_and_start_their_own_broker() -> None:
    """A module named there leaves its line's group: it must not use the line's shared cluster."""
    for module in OWN_BROKER_TESTS:
        text = (TESTS.parent / module).read_text()
        assert "RealRocketMQ(" in text and "real_rocketmq" not in text, module


def test_the_longest_groups_go_first_then_the_modules_that_start_processes() -> None:
    scopes = ["tests/codec/test_a.py", "tests/fakes/test_b.py", "tests/x.py[real-5]", *FIRST[::-1]]
    spawning = {"tests/fakes/test_b.py", "tests/x.py"}
    assert scope_order(scopes, spawning.__contains__) == [
        *FIRST,
        "tests/fakes/test_b.py",
        "tests/x.py[real-5]",
        "tests/codec/test_a.py",
    ]


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
