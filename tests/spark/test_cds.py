"""The driver JVM's class-data archive (``rmqtwin.spark.cds``): keyed by the JVM and PySpark's jars,
mapped by every session ``spark_session`` starts once setup has built it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from rmqtwin.spark import cds

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="PySpark needs Java 17+")


def test_no_option_until_the_archive_is_built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cds.archive_path()
    assert path is not None and path.is_relative_to(tmp_path)
    assert cds.java_options() is None
    path.parent.mkdir(parents=True)
    path.write_bytes(b"archive")
    assert cds.java_options() == f"-XX:SharedArchiveFile={path}"


def test_another_jvm_has_another_archive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    java = Path(shutil.which("java") or "").resolve()
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    shutil.copy(java, home / "bin" / "java")
    before = cds.archive_path()
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert cds.archive_path() != before


def test_a_session_maps_the_archive_setup_built(tmp_path: Path) -> None:
    """Spark's classes come from the archive ("shared objects file (top)" is the dynamic archive), not
    from its jars: the archive matches this JVM and classpath."""
    options = cds.java_options()
    assert options is not None, "no class-data archive: scripts/setup.sh builds it (rmqtwin spark cds)"
    log = tmp_path / "classes.log"
    code = (
        "from rmqtwin.spark.session import spark_session\n"
        f"s = spark_session(sources=False, java_options={options + f' -Xlog:class+load=info:file={log}'!r})\n"
        "s.range(3).count()\n"
        "s.stop()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ, timeout=300)
    loaded = [line for line in log.read_text().splitlines() if " org.apache.spark.SparkContext " in line]
    assert loaded and "source: shared objects file (top)" in loaded[0], loaded


def test_a_new_archive_replaces_the_stale_ones_of_the_same_jars(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reinstalled PySpark (same place, new jar mtimes) has a new key; building for it removes the
    archive of the old install, and leaves another install's alone."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = cds.archive_path()
    assert path is not None
    path.parent.mkdir(parents=True)
    jars_digest = path.name.split("-")[1]
    stale = path.parent / f"driver-{jars_digest}-0123456789abcdef.jsa"
    other = path.parent / "driver-000000000000-0123456789abcdef.jsa"
    for f in (stale, other):
        f.write_bytes(b"old")

    def train(argv: list[str], check: bool) -> None:
        Path(argv[4]).write_bytes(b"archive")  # the training process's archive path

    monkeypatch.setattr(cds.subprocess, "run", train)
    cds.build(path)
    assert path.read_bytes() == b"archive"
    assert not stale.exists() and other.exists()
