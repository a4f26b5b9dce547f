"""The README's pytest example, run as a user would: its block copied to a file and run by pytest."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.docker, pytest.mark.java, pytest.mark.xdist_group("docker")]

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    """The python block after the README's ``pytest-example`` marker."""
    match = re.search(r"<!-- pytest-example:.*?-->\s*```python\n(.*?)```", README.read_text(), re.S)
    assert match, "README.md has no pytest-example block"
    return match.group(1)


def test_readme_example_passes(docker_engine: None, tmp_path: Path) -> None:
    """Both runs pass only if the twin starts, answers the real Java client and reset() empties it
    (the second run would otherwise consume the first run's orders, or none, with the group's offset)."""
    (tmp_path / "test_example.py").write_text(readme_example())
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "test_example.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "2 passed" in run.stdout, run.stdout[-2000:]
