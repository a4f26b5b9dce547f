"""Open a page in Debian's headless Chromium (scripts/setup.d/30-chromium.sh) and read the DOM it leaves:
reports people would rather see than read are checked as a browser renders them, scripts run."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


def dump_dom(page: Path) -> str:
    """The page's DOM once its scripts ran (5 s of virtual time: a page's onload counts what it drew);
    skips the test when Chromium is not installed. Each run has a profile of its own, so that runs at
    the same time (xdist workers) do not share one."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (scripts/setup.d/30-chromium.sh)")
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--user-data-dir={profile}",
                "--allow-file-access-from-files",
                "--virtual-time-budget=5000",
                "--dump-dom",
                page.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=180,
            check=True,
        ).stdout
