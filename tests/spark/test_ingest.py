"""``rmqtwin spark ingest`` on local[2]: tables against ``capture stats``, the pcap path against the
capture path, idempotence, damage accounting."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rmqtwin.proxy.pcap import to_pcap
from rmqtwin.proxy.stats import CaptureStats, percentile
from rmqtwin.proxy.synth import synthesize

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]


@pytest.fixture(scope="module")
def ingested(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    from rmqtwin.spark.ingest import ingest

    root = tmp_path_factory.mktemp("ingest")
    capture = root / "c.rmqcap"
    synthesize(capture, frames=1500, seed=11)
    pcap = root / "c.pcap"
    to_pcap(capture, pcap)
    out = root / "tables"
    ingest(spark, [str(capture), str(pcap)], out, progress=None)
    return capture, pcap, out


def test_exchanges_give_capture_stats_counts_and_percentiles(
    spark: Any, ingested: tuple[Path, Path, Path]
) -> None:
    capture, _, out = ingested
    stats = CaptureStats.of(capture)
    ex = spark.read.parquet(str(out / "exchanges")).where("capture = 'c.rmqcap'")
    ex.createOrReplaceTempView("ex")
    rows = spark.sql(
        "SELECT request_code, count(*) AS n, percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ns) AS p50, "
        "percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ns) AS p99 FROM ex GROUP BY request_code"
    ).collect()
    got = {r["request_code"]: (r["n"], r["p50"], r["p99"]) for r in rows}
    want = {}
    for code, row in stats.by_code.items():
        lat = sorted(row.latencies)
        want[code] = (row.count, percentile(lat, 50) if lat else None, percentile(lat, 99) if lat else None)
    assert got == want
    frames = spark.read.parquet(str(out / "frames")).where("capture = 'c.rmqcap'").count()
    assert frames == stats.frames


def test_pcap_path_gives_the_same_exchanges(spark: Any, ingested: tuple[Path, Path, Path]) -> None:
    _, _, out = ingested
    ex = spark.read.parquet(str(out / "exchanges"))
    cols = (
        "request_code, response_code, topic, consumer_group, producer_group, queue_id, queue_offset, remark"
    )
    by_capture = {
        name: sorted(
            tuple(r) for r in ex.where(f"capture = '{name}'").selectExpr(*cols.split(", ")).collect()
        )
        for name in ("c.rmqcap", "c.pcap")
    }
    assert by_capture["c.rmqcap"] == by_capture["c.pcap"]
    assert len(by_capture["c.pcap"]) > 500


def test_ingest_again_replaces(spark: Any, ingested: tuple[Path, Path, Path]) -> None:
    from rmqtwin.spark.ingest import ingest

    capture, _, out = ingested
    before = spark.read.parquet(str(out / "messages")).count()
    result = ingest(spark, [str(capture)], out, progress=None)
    assert spark.read.parquet(str(out / "messages")).count() == before == result.rows["messages"]


def test_damaged_input_is_counted_not_fatal(spark: Any, tmp_path: Path) -> None:
    from rmqtwin.spark.ingest import IngestError, ingest

    good, bad = tmp_path / "good.rmqcap", tmp_path / "bad.rmqcap"
    synthesize(good, frames=300, seed=1)
    synthesize(bad, frames=300, seed=2)
    bad.write_bytes(bad.read_bytes()[:-5])
    result = ingest(spark, [str(good), str(bad)], tmp_path / "out", progress=None)
    assert [(s["input"].endswith("bad.rmqcap"), s["reason"]) for s in result.skipped] == [
        (True, "truncated last record")
    ]
    assert result.rows["frames"] == 599
    with pytest.raises(IngestError):
        ingest(spark, [str(bad)], tmp_path / "out2", strict=True, progress=None)
