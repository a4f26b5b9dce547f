"""Session fixtures for the golden vectors: the Maven build, one generator JVM and one verifier JVM per
RocketMQ line (4.9.8 and 5.5.0), shared by every test of the session."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

JAVA_DIR = Path(__file__).parent / "java"
LINES = {"v4": "4.9.8", "v5": "5.5.0"}
"""Maven module -> the Apache RocketMQ release its vectors come from."""

_BUILD_TIMEOUT = 900
_RUN_TIMEOUT = 300
_JVM_OPTS = ["-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]


def classpath(line: str) -> str:
    target = JAVA_DIR / line / "target"
    return f"{target / f'golden-{line}.jar'}{os.pathsep}{target / 'lib' / '*'}"


def _newest_source(module: Path) -> float:
    newest = 0.0
    for path in [JAVA_DIR / "pom.xml", module / "pom.xml", *(JAVA_DIR / "shared").rglob("*.java")]:
        newest = max(newest, path.stat().st_mtime)
    for path in (module / "src").rglob("*"):
        newest = max(newest, path.stat().st_mtime)
    return newest


def _build_is_current() -> bool:
    for line in LINES:
        module = JAVA_DIR / line
        jar = module / "target" / f"golden-{line}.jar"
        lib = module / "target" / "lib"
        if not jar.exists() or not lib.is_dir() or jar.stat().st_mtime < _newest_source(module):
            return False
    return True


def ensure_build() -> None:
    """Build tests/golden/java once (as scripts/setup.sh does) when a jar is missing or stale.

    A lock file serializes concurrent pytest sessions sharing this tree, so only one Maven runs.
    """
    if _build_is_current():
        return
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


def run_java(line: str, *args: str) -> None:
    done = subprocess.run(
        ["java", *_JVM_OPTS, "-cp", classpath(line), "rmqtwin.golden.Main", *args],
        capture_output=True,
        text=True,
        timeout=_RUN_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"golden {line} {args[0]} failed ({done.returncode}):\n{done.stderr[-6000:]}")


@dataclass
class PythonEncoded:
    """What the Python codec encoded for one vector (or why it could not), and what Java read back."""

    sent: dict[str, Any] | None = None
    error: str | None = None
    java: dict[str, Any] | None = None


@dataclass
class GoldenLine:
    """The vectors of one RocketMQ line, generated once; the reverse direction verified once."""

    line: str
    workdir: Path
    _manifest: dict[str, Any] | None = None
    _verified: dict[str, PythonEncoded] | None = None
    _by_name: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def rocketmq_version(self) -> str:
        return LINES[self.line]

    def manifest(self) -> dict[str, Any]:
        if self._manifest is None:
            out = self.workdir / "generated"
            run_java(self.line, "generate", str(out))
            self._manifest = json.loads((out / "vectors.json").read_text("utf-8"))
            self._by_name = {v["name"]: v for v in self._manifest["vectors"]}
        return self._manifest

    def vector(self, name: str) -> dict[str, Any]:
        self.manifest()
        if name not in self._by_name:
            pytest.fail(f"RocketMQ {self.rocketmq_version} generator wrote no vector {name!r}")
        return self._by_name[name]

    def java_result(self, name: str) -> dict[str, Any]:
        """What the verifier reported for one Python-sent vector."""
        result = self.verified()[name].java
        if result is None:
            pytest.fail(f"the RocketMQ {self.rocketmq_version} verifier wrote no result for {name!r}")
        return result

    def verified(self) -> dict[str, PythonEncoded]:
        """One JVM decodes, for this line, Python's own encoding of every vector's intended fields and
        the Python-originated vectors (names starting ``originated.``)."""
        if self._verified is None:
            from tests.golden.vectors import encode_for_java, python_originated

            results: dict[str, PythonEncoded] = {}
            sent = []
            for vector in self.manifest()["vectors"]:
                try:
                    item = encode_for_java(self.line, vector)
                except Exception as exc:  # reported per vector by the test that reads it
                    results[vector["name"]] = PythonEncoded(error=f"{type(exc).__name__}: {exc}")
                    continue
                results[vector["name"]] = PythonEncoded(sent=item)
                sent.append(item)
            for item in python_originated(self.line):
                results[item["name"]] = PythonEncoded(sent=item)
                sent.append(item)
            indir = self.workdir / "python"
            indir.mkdir(parents=True, exist_ok=True)
            (indir / "vectors.json").write_text(json.dumps({"vectors": sent}), "utf-8")
            outfile = self.workdir / "verified.json"
            run_java(self.line, "verify", str(indir), str(outfile))
            for name, java in json.loads(outfile.read_text("utf-8"))["results"].items():
                results[name].java = java
            self._verified = results
        return self._verified


@pytest.fixture(scope="session")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], GoldenLine]]:
    """``golden("v4")`` / ``golden("v5")``: the generated vectors of that line (built and run on demand)."""
    if shutil.which("java") is None or shutil.which("mvn") is None:
        pytest.skip("golden vectors need Java 17 and Maven on PATH")
    ensure_build()
    lines: dict[str, GoldenLine] = {}

    def get(line: str) -> GoldenLine:
        if line not in lines:
            lines[line] = GoldenLine(line, tmp_path_factory.mktemp(f"golden-{line}"))
        return lines[line]

    yield get
