"""``rmqtwin.logs``: the store's ``logging`` records and the servers' Twisted events reach stderr alike."""

from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import logging
from twisted.logger import Logger
from rmqtwin.logs import begin_logging
begin_logging({level!r})
logging.getLogger("rmqtwin.store_mirror.commitlog").warning("torn tail at %d", 42)
Logger(namespace="rmqtwin.fakes.server").warn("closing {{peer}}", peer="127.0.0.1:5")
Logger(namespace="rmqtwin.fakes.server").info("accepted {{peer}}", peer="127.0.0.1:6")
try:
    1 / 0
except ZeroDivisionError:
    Logger(namespace="rmqtwin.fakes.server").failure("handler failed")
"""


def run(level: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM.format(level=level)], capture_output=True, text=True, check=True
    )
    return done.stderr.splitlines()


def test_both_sides_log_in_one_format_at_one_level() -> None:
    lines = run("warning")
    assert any(line.endswith("WARNING rmqtwin.store_mirror.commitlog: torn tail at 42") for line in lines)
    assert any(line.endswith("WARNING rmqtwin.fakes.server: closing 127.0.0.1:5") for line in lines)
    assert not any("accepted" in line for line in lines)
    assert any(line.endswith("CRITICAL rmqtwin.fakes.server: handler failed") for line in lines)
    assert "ZeroDivisionError: division by zero" in lines


def test_a_lower_level_lets_info_through() -> None:
    assert any(line.endswith("INFO rmqtwin.fakes.server: accepted 127.0.0.1:6") for line in run("info"))
