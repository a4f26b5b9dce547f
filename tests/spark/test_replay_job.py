"""``rmqtwin spark replay`` on local[2]: Parquet rows, summary, and the HTML report in headless Chromium."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.cli import main
from rmqtwin.fakes.pytest_plugin import RocketMQFactory
from tests.chromium import dump_dom
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
    dom = dump_dom(out / "report.html")
    assert "REPLAY SAME: all 12 requests" in dom
    assert dom.count('src="data:image/png;base64,') == 2


@pytest.mark.spark
def test_an_ingested_parquet_directory_plans_as_its_capture(
    recorded: Path, spark: Any, tmp_path: Path
) -> None:
    from rmqtwin.proxy.capture import CaptureFormatError
    from rmqtwin.spark.ingest import ingest
    from rmqtwin.spark.replay.plan import load_plan

    ingest(spark, [str(recorded)], tmp_path / "raw", raw=True, progress=None)
    ingest(spark, [str(recorded)], tmp_path / "plain", progress=None)
    direct, parquet = load_plan(recorded), load_plan(tmp_path / "raw")
    assert [(c.kind, c.server, c.broker_name, len(c.steps)) for c in parquet.connections] == [
        (c.kind, c.server, c.broker_name, len(c.steps)) for c in direct.connections
    ]
    assert [s.frame for c in parquet.connections for s in c.steps] == [
        s.frame for c in direct.connections for s in c.steps
    ]
    assert [s.answer for c in parquet.connections for s in c.steps] == [
        s.answer for c in direct.connections for s in c.steps
    ]
    assert (parquet.recorded_bases, parquet.client_ids) == (direct.recorded_bases, direct.client_ids)
    with pytest.raises(CaptureFormatError, match="ingest the capture with --raw"):
        load_plan(tmp_path / "plain")


def _replay_rows(out: Path) -> tuple[dict[tuple[int, int, int], tuple[str, str, str]], int]:
    """Each request's (verdict, detail, normalisers) by (connection, copy, seq); how many part files
    (tasks) wrote them."""
    import pyarrow.parquet as pq

    rows = pq.read_table(out / "requests").to_pylist()
    verdicts = {
        (r["conn_id"], r["copy"], r["seq"]): (r["verdict"], r["detail"], r["normalisers"]) for r in rows
    }
    return verdicts, len(list((out / "requests").glob("part-*.parquet")))


@pytest.mark.spark
@pytest.mark.slow  # make test-all: a second standalone cluster; make test ran 30 min 41 s with it in
@pytest.mark.timeout(900)
def test_a_standalone_cluster_of_two_workers_replays_with_the_verdicts_of_local(
    recorded: Path,
    rocketmq_factory: RocketMQFactory,
    standalone_cluster: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``--scale 2 --scale-topics suffixed``: two copies linked by no topic, so two tasks, one per
    worker (each has one core and both run at once from the agreed start)."""
    cluster = standalone_cluster(2)
    before = len(cluster.completed_apps())
    outcomes: dict[str, tuple[dict[tuple[int, int, int], tuple[str, str, str]], int]] = {}
    for where in ("local", "standalone"):
        target = rocketmq_factory()
        traffic.create_topic(target, prefill=2)
        traffic.create_topic(target, prefill=0, topic=f"{traffic.TOPIC}-1")
        out = tmp_path / where
        argv = ["spark", "replay", str(recorded), "--target", target.namesrv_addr, "--speed", "4"]
        argv += ["--scale", "2", "--scale-topics", "suffixed", "--out", str(out)]
        if where == "local":
            assert main(argv) == 0, capsys.readouterr()
        else:
            cli = [sys.executable, "-m", "rmqtwin", *argv, "--master", cluster.master_url]
            proc = subprocess.run(cli, capture_output=True, text=True, timeout=600, check=False)
            assert proc.returncode == 0, proc.stderr[-4000:]
            assert "REPLAY SAME: all 24 requests answered as recorded" in proc.stdout
        outcomes[where] = _replay_rows(out)
        summary = json.loads((out / "summary.json").read_text())
        queues = sorted((q["copy"], q["same_bodies_in_order"]) for q in summary["queues"])
        assert queues == [(0, True), (1, True)]
        assert traffic.max_offset(target) == 7
        assert traffic.max_offset(target, topic=f"{traffic.TOPIC}-1") == 5
    deadline = time.monotonic() + 30  # the master learns a moment after the driver exits
    while len(apps := cluster.completed_apps()) <= before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(apps) == before + 1 and "rmqtwin replay" in apps  # it ran on the cluster, not local[*]
    local, remote = outcomes["local"], outcomes["standalone"]
    assert remote == local
    assert len(local[0]) == 24 and {v[0] for v in local[0].values()} == {"same"}
    assert local[1] == remote[1] == 2
