"""One logging system for the long-running commands: Python's ``logging``.

The store knows no reactor and logs through ``logging``; the Twisted servers log through
``twisted.logger``. ``begin_logging`` configures ``logging`` once and hands every Twisted event to
the ``logging`` logger its namespace names, so a warning from either side reaches stderr in one
format, filtered by one level, and a test's ``caplog`` sees both.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping
from typing import cast

from twisted.logger import ILogObserver, LogLevel, formatEvent, globalLogBeginner

__all__ = ["LEVELS", "begin_logging"]

LEVELS = ("debug", "info", "warning", "error")
"""The ``--log-level`` choices."""


_TO_LOGGING = {
    LogLevel.debug: logging.DEBUG,
    LogLevel.info: logging.INFO,
    LogLevel.warn: logging.WARNING,
    LogLevel.error: logging.ERROR,
    LogLevel.critical: logging.CRITICAL,
}


def _to_logging(event: Mapping[str, object]) -> None:
    """A Twisted event as a ``logging`` record of the logger its namespace names (its failure's
    traceback included)."""
    logger = logging.getLogger(str(event.get("log_namespace") or "twisted"))
    level = _TO_LOGGING.get(event.get("log_level", LogLevel.info), logging.INFO)
    if not logger.isEnabledFor(level):
        return
    failure = event.get("log_failure")
    exc_info = None
    if failure is not None:
        exc_info = (failure.type, failure.value, failure.getTracebackObject())  # type: ignore[attr-defined]
    logger.log(level, "%s", formatEvent(dict(event)), exc_info=exc_info)


def begin_logging(level: str = "warning") -> None:
    """Send ``logging`` records at ``level`` and above to stderr, and Twisted's events into ``logging``."""
    logging.basicConfig(
        stream=sys.stderr,
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    globalLogBeginner.beginLoggingTo([cast(ILogObserver, _to_logging)], redirectStandardIO=False)
