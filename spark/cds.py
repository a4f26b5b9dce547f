"""A class-data archive of the Spark driver JVM, so a ``rmqtwin spark`` command starts warm.

Most of a short job's time on a small machine is its JVM coming up: some 20,000 classes of Spark's
280 jars found, read, verified and linked, then again for the first query. HotSpot's application
class-data sharing (AppCDS, JDK 13+) writes the classes one run loaded into an archive that the next
runs map instead (``-XX:SharedArchiveFile``): a training run of an ingest and a report of a small
synthetic capture, with ``-XX:ArchiveClassesAtExit``, as ``rmqtwin spark cds`` (scripts/setup.sh runs
it). The archive is valid for one JVM and one classpath only, so its name is a key of both: a new
JDK or PySpark finds no archive and starts as before, never with a stale one.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["archive_path", "build", "java_options"]


def _java() -> Path | None:
    """The ``java`` that ``spark-class`` starts: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_path() -> Path | None:
    """Where the archive of this JVM and this PySpark's jars lives (None without a ``java``)."""
    import pyspark

    java = _java()
    if java is None:
        return None
    jars = Path(pyspark.__file__).parent / "jars"
    key = hashlib.sha256()
    for part in (str(java), str(java.stat().st_mtime_ns), pyspark.__version__):
        key.update(part.encode() + b"\0")
    for jar in sorted(jars.glob("*.jar")):  # the JVM refuses an archive whose jars changed size or mtime
        stat = jar.stat()
        key.update(f"{jar.name}:{stat.st_size}:{stat.st_mtime_ns}\0".encode())
    root = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "rmqtwin" / "spark-cds"
    return root / f"driver-{_digest(str(jars))}-{key.hexdigest()[:16]}.jsa"


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def java_options() -> str | None:
    """The driver's JVM option that maps the archive, or None when it has not been built here."""
    path = archive_path()
    if path is None or not path.is_file():
        return None
    return f"-XX:SharedArchiveFile={path}"


def build(path: Path, *, frames: int = 3000) -> float:
    """Write the archive at ``path`` from a training run in a fresh process; its seconds.

    The JVM writes the archive as it exits, after PySpark closed its standard input: the training
    process waits for that, and the archive is moved into place only when whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=".train-", dir=path.parent) as work:
        partial = Path(work) / "driver.jsa"
        subprocess.run(
            [sys.executable, "-m", "rmqtwin.spark.cds", work, str(partial), str(frames)],
            check=True,
        )
        if not partial.is_file():
            raise RuntimeError(f"the JVM wrote no class-data archive at {partial}")
        os.replace(partial, path)
    # an archive for these jars' earlier install is stale for good: 175 MiB each
    for stale in path.parent.glob(path.name.rsplit("-", 1)[0] + "-*.jsa"):
        if stale != path:
            stale.unlink(missing_ok=True)
    return time.monotonic() - started


def _train(work: Path, partial: Path, frames: int) -> None:
    """An ingest and a report of a small synthetic capture: the classes real jobs load."""
    from pyspark import SparkContext

    from rmqtwin.proxy.synth import synthesize
    from rmqtwin.spark.ingest import ingest
    from rmqtwin.spark.report import write_report
    from rmqtwin.spark.session import spark_session

    capture = work / "train.rmqcap"
    synthesize(capture, frames=frames, seed=7)
    # the warnings name each class it cannot keep (signed jars, generated classes): hundreds of lines
    spark = spark_session(java_options=f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds*=error")
    ingest(spark, [str(capture)], work / "tables", progress=None)
    write_report(spark, work / "tables", work / "report.html")
    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None:  # the JVM exits on end of input, then writes the archive
        proc.stdin.close()
        proc.wait(timeout=300)


if __name__ == "__main__":
    _train(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]))
