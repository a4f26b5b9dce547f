"""``rmqtwin spark replay`` on local[2]: Parquet rows, summary, and the HTML report in headless Chromium."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from rmqtwin.cli import main
from rmqtwin.fakes.pytest_plugin import RocketMQFactory
from tests.spark import traffic
from tests.spark.traffic import recorded

__all__ = ["recorded"]  # the fixture


def test_a_target_that_is_down_fails_before_spark_starts(
    recorded: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["spark", "replay", str(recorded), "--target", "127.0.0.1:1", "--out", str(tmp_path / "o")])
    assert code == 1
    assert "target namesrv 127.0.0.1:1 does not answer" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


@pytest.mark.spark
def test_replay_job_writes_rows_summary_and_a_report_chromium_renders(
    recorded: Path, rocketmq_factory: RocketMQFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyspark")
    target = rocketmq_factory()
    traffic.create_topic(target, prefill=2)
    out = tmp_path / "out"
    code = main(
        [
            "spark",
            "replay",
            str(recorded),
            "--target",
            target.namesrv_addr,
            "--speed",
            "10",
            "--out",
            str(out),
        ]
    )
    printed = capsys.readouterr()
    assert code == 0, printed
    assert "REPLAY SAME: all 12 requests answered as recorded" in printed.out
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "requests").to_pylist()
    assert len(rows) == 12
    assert {r["verdict"] for r in rows} == {"same"}
    assert {r["code_name"] for r in rows} >= {"SEND_MESSAGE_V2", "PULL_MESSAGE", "UPDATE_CONSUMER_OFFSET"}
    summary = json.loads((out / "summary.json").read_text())
    assert summary["queues"][0]["same_bodies_in_order"] is True
    assert traffic.max_offset(target) == 7
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium not installed (scripts/setup.d/30-chromium.sh)")
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--dump-dom",
            (out / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "REPLAY SAME: all 12 requests" in dom
    assert dom.count('src="data:image/png;base64,') == 2
