"""Session fixtures for the golden vectors: the Maven build, one generator JVM and one verifier JVM per
RocketMQ line (4.9.8 and 5.5.0), shared by every test of the session."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.golden.oracle import LINES, ensure_build, run_golden


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
            run_golden(self.line, "generate", str(out))
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
            run_golden(self.line, "verify", str(indir), str(outfile))
            for name, java in json.loads(outfile.read_text("utf-8"))["results"].items():
                results[name].java = java
            self._verified = results
        return self._verified


@pytest.fixture(scope="session")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], GoldenLine]]:
    """``golden("v4")`` / ``golden("v5")``: the generated vectors of that line (built and run on demand)."""
    ensure_build()
    lines: dict[str, GoldenLine] = {}

    def get(line: str) -> GoldenLine:
        if line not in lines:
            lines[line] = GoldenLine(line, tmp_path_factory.mktemp(f"golden-{line}"))
        return lines[line]

    yield get
