"""The Java testcontainers module (docker/testcontainers-java): its JUnit 5 test starts RmqtwinContainer
and round-trips messages with the real RocketMQ 5.5.0 producer and push consumer, run by Maven."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rmqtwin.containers import RMQTWIN_IMAGE

pytestmark = [pytest.mark.docker, pytest.mark.java, pytest.mark.xdist_group("docker")]

MODULE = Path(__file__).resolve().parents[2] / "docker" / "testcontainers-java"


def test_junit_test_of_the_java_module_passes(docker_engine: None) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        pytest.skip("no mvn on PATH (Maven builds the Java testcontainers module)")
    run = subprocess.run(
        [mvn, "-B", "-q", f"-Drmqtwin.image={RMQTWIN_IMAGE}", "test"],
        cwd=MODULE,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    reports = MODULE / "target" / "surefire-reports"
    text = (reports / "TEST-io.rmqtwin.testcontainers.RmqtwinContainerTest.xml").read_text()
    assert 'tests="1"' in text and 'failures="0"' in text and 'errors="0"' in text, text[:2000]
