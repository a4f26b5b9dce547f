"""``rmqtwin capture synth``: the CLI writes what ``synthesize`` writes for the same seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqtwin.cli import main
from rmqtwin.proxy.stats import CaptureStats
from rmqtwin.proxy.synth import synthesize


def test_synth_cli_writes_the_seeds_capture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, ref = tmp_path / "cli.rmqcap", tmp_path / "ref.rmqcap"
    assert main(["capture", "synth", str(out), "--frames", "400", "--seed", "9"]) == 0
    stats = synthesize(ref, frames=400, seed=9)
    assert f"wrote {stats.frames} frames on {stats.connections} connections" in capsys.readouterr().out
    assert out.read_bytes() == ref.read_bytes()
    assert CaptureStats.of(out).frames == stats.frames >= 400
