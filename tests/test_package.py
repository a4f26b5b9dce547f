"""The fixed folders install under the ``rmqtwin`` namespace and shadow nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

AREAS = ("codec", "fakes", "store_mirror", "proxy", "conformance", "spark")


@pytest.mark.parametrize("area", AREAS)
def test_area_imports_under_namespace(area: str) -> None:
    module = __import__(f"rmqtwin.{area}", fromlist=["_"])
    assert Path(module.__file__).parent.name == area


def test_installed_package_does_not_shadow_top_level_names(tmp_path: Path) -> None:
    """From a directory outside the tree, ``spark``/``proxy``/``fakes`` are not rmqtwin's."""
    probe = (
        "import importlib.util, json\n"
        "names = ['codec', 'fakes', 'store_mirror', 'proxy', 'conformance', 'spark']\n"
        "found = {n: (s.origin if (s := importlib.util.find_spec(n)) else None) for n in names}\n"
        "import rmqtwin.codec\n"
        "print(json.dumps(found))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    root = str(Path(__file__).resolve().parent.parent)
    found = json.loads(out.stdout)
    for name, origin in found.items():
        assert origin is None or not origin.startswith(root), f"{name} shadowed by {origin}"


def test_cli_help_and_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rmqtwin", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("rmqtwin ")


def test_wheel_holds_every_module(tmp_path: Path) -> None:
    """A wheel built from a clean copy ships every module, not only what the editable install finds."""
    import shutil
    import zipfile

    root = Path(__file__).resolve().parent.parent
    source = tmp_path / "src"
    source.mkdir()
    skip = shutil.ignore_patterns("target", "build", "__pycache__", "*.egg-info")
    for name in ("setup.py", "pyproject.toml", "README.md", "rmqtwin", *AREAS):
        if (root / name).is_dir():
            shutil.copytree(root / name, source / name, ignore=skip)
        else:
            shutil.copy2(root / name, source / name)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            ".",
        ],
        cwd=source,
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("rmqtwin-*.whl")
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.endswith(".py")}
    expected = {
        f"rmqtwin/{p.relative_to(source)}"
        for area in AREAS
        for p in (source / area).rglob("*.py")
        if "java" not in p.relative_to(source).parts
    }
    assert expected - shipped == set()
