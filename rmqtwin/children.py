"""Child processes that do not outlive whoever started them.

A JVM started in its own session (so that a test's Ctrl-C does not reach it first) survives its
parent's SIGKILL or a CI timeout, and an orphaned 5.5.0 broker whose transaction thread spins costs
a core for every run after it. util-linux's ``setpriv --pdeathsig`` asks the kernel to send the
child SIGTERM when its parent dies, then execs the command (same pid, nothing else changes).
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence

__all__ = ["dies_with_parent"]


def dies_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` prefixed with ``setpriv --pdeathsig TERM`` where Linux's setpriv exists, else unchanged.

    The kernel ties the signal to the forking *thread*: start such children from a thread that lives
    as long as they should (the main thread, or the test's).
    """
    setpriv = shutil.which("setpriv") if sys.platform.startswith("linux") else None
    return [setpriv, "--pdeathsig", "TERM", *argv] if setpriv else list(argv)
