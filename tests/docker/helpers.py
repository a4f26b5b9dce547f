"""What the docker tests share: the message ids a Java driver reports, and a capture read back on the host."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def msg_ids(events: list[dict[str, object]]) -> set[object]:
    """The ``msgId`` of each event a Java driver reported (sent or received)."""
    return {e["msgId"] for e in events}


def capture_show(capture: Path) -> str:
    """``rmqtwin capture show CAPTURE`` by the host's rmqtwin: what a user reads of a container's capture."""
    return subprocess.run(
        [sys.executable, "-m", "rmqtwin", "capture", "show", str(capture)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
