"""A child started through ``dies_with_parent`` ends when its parent is killed with SIGKILL."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from rmqtwin.children import dies_with_parent

PARENT = """
import subprocess, sys
from rmqtwin.children import dies_with_parent
child = subprocess.Popen(dies_with_parent(["sleep", "60"]), start_new_session=True)
print(child.pid, flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(shutil.which("setpriv") is None, reason="needs util-linux setpriv (Linux)")
def test_the_child_of_a_killed_parent_is_gone() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child_pid = int(parent.stdout.readline())
    # setpriv asks for the signal, then execs: killed before that, the parent leaves an unmarked child
    deadline = time.monotonic() + 10
    while _command(child_pid) != "sleep":
        assert time.monotonic() < deadline, f"the child is still {_command(child_pid)!r}"
        time.sleep(0.01)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _alive(child_pid):
        time.sleep(0.05)
    assert not _alive(child_pid)


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as comm:
            return comm.read().strip()
    except FileNotFoundError:
        return ""


def _alive(pid: int) -> bool:
    """Running, not a zombie waiting for init to reap it."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_without_setpriv_the_command_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert dies_with_parent(["java", "-version"]) == ["java", "-version"]
