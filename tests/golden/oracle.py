"""The one way tests run the Java oracle: the Maven project in tests/golden/java, built once, and its
modules' ``rmqtwin.golden.Main`` commands.

Modules: ``v4`` / ``v5`` (rocketmq-remoting + rocketmq-common 4.9.8 / 5.5.0: ``generate``, ``verify``,
``commands``, ``messages``, ``bodies``, ``fastjson``, ``headers``) and ``store-v4`` / ``store-v5``
(rocketmq-store 4.9.7 / 5.5.0, the broker's record encoder: ``encoder``). A command prints tab-separated
rows on standard output.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

JAVA_DIR = Path(__file__).parent / "java"
LINES = {"v4": "4.9.8", "v5": "5.5.0"}
"""Line module -> the Apache RocketMQ client release its classes come from."""
MODULES = (*LINES, "store-v4", "store-v5")
_SHARED: dict[str, tuple[str, ...]] = {
    "v4": ("shared", "shared-template"),
    "v5": ("shared", "shared-template"),
    "store-v4": ("shared-store",),
    "store-v5": ("shared-store",),
}
"""Module -> the source folders of tests/golden/java it compiles besides its own src/."""

_BUILD_TIMEOUT = 900
_RUN_TIMEOUT = 300
_JVM_OPTS = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def module_for(version: str) -> str:
    """The line module of a client release: ``module_for("5.5.0") == "v5"``."""
    (module,) = [m for m, v in LINES.items() if v == version]
    return module


def classpath(module: str) -> str:
    target = JAVA_DIR / module / "target"
    return f"{target / f'golden-{module}.jar'}{os.pathsep}{target / 'lib' / '*'}"


def _newest_source(module: Path) -> float:
    sources = [JAVA_DIR / "pom.xml", module / "pom.xml", *(module / "src").rglob("*")]
    sources += [p for d in _SHARED[module.name] for p in (JAVA_DIR / d).rglob("*.java")]
    return max(path.stat().st_mtime for path in sources)


def _build_is_current() -> bool:
    for name in MODULES:
        module = JAVA_DIR / name
        jar = module / "target" / f"golden-{name}.jar"
        lib = module / "target" / "lib"
        if not jar.exists() or not lib.is_dir() or jar.stat().st_mtime < _newest_source(module):
            return False
    return True


def ensure_build() -> None:
    """Build tests/golden/java (as scripts/setup.sh does) when a jar is missing or older than its sources.

    Skips the test when Java (or, for a build, Maven) is missing. A lock file serializes concurrent pytest
    sessions sharing this tree, so only one Maven runs.
    """
    if shutil.which("java") is None:
        pytest.skip("the Java oracle needs Java 17 on PATH")
    if _build_is_current():
        return
    if shutil.which("mvn") is None:
        pytest.skip(f"the Java oracle in {JAVA_DIR} is not built and Maven is not on PATH (scripts/setup.sh)")
    lock_path = Path(tempfile.gettempdir()) / "rmqtwin-golden-maven.lock"
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _build_is_current():
            return
        done = subprocess.run(
            ["mvn", "-q", "-B", "-DskipTests", "package"],
            cwd=JAVA_DIR,
            capture_output=True,
            text=True,
            timeout=_BUILD_TIMEOUT,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"Maven build of {JAVA_DIR} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}")


def run_golden(module: str, command: str, *args: str, stdin: str | None = None) -> list[list[str]]:
    """Run ``rmqtwin.golden.Main command args...`` of a module (built first if needed) in one JVM.

    ``stdin`` is sent as UTF-8 text. Returns the printed rows, each split at tabs; fails the test with
    Java's standard error when the JVM exits with an error.
    """
    assert module in MODULES, module
    ensure_build()
    done = subprocess.run(
        ["java", *_JVM_OPTS, "-cp", classpath(module), "rmqtwin.golden.Main", command, *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=_RUN_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"golden {module} {command} failed ({done.returncode}):\n{done.stderr[-6000:]}")
    lines = done.stdout.split("\n")  # not splitlines(): a value may hold U+2028 or U+0085
    if lines[-1] == "":
        lines.pop()
    return [line.split("\t") for line in lines]
