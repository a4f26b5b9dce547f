"""``rmqtwin spark ingest`` on local[2]: tables against ``capture stats``, the pcap path against the
capture path, idempotence, damage accounting. All read the session's one ingest (``conftest.ingested``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import Ingested, assert_tables_give_capture_stats

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]


def test_exchanges_give_capture_stats_counts_and_percentiles(spark: Any, ingested: Ingested) -> None:
    assert_tables_give_capture_stats(spark, ingested.capture, ingested.out)


def test_pcap_path_gives_the_same_exchanges(spark: Any, ingested: Ingested) -> None:
    ex = spark.read.parquet(str(ingested.out / "exchanges"))
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
    assert len(by_capture["c.pcap"]) > 400


def test_ingest_again_replaces(spark: Any, ingested: Ingested) -> None:
    from rmqtwin.spark.ingest import ingest

    def counts() -> dict[str, int]:
        return {
            table: spark.read.parquet(str(ingested.out / table)).where("capture = 'd.rmqcap'").count()
            for table in ("frames", "exchanges", "messages")
        }

    before = counts()
    result = ingest(spark, [str(ingested.damaged)], ingested.out, progress=None)
    assert counts() == before
    assert before["frames"] == 99
    assert result.rows == ingested.result.rows  # nothing of the other inputs lost or doubled


def test_damaged_input_is_counted_not_fatal(spark: Any, ingested: Ingested, tmp_path: Path) -> None:
    from rmqtwin.spark.ingest import IngestError, ingest

    assert [(s["input"], s["reason"]) for s in ingested.result.skipped] == [
        ("d.rmqcap", "truncated last record")
    ]
    skipped = spark.read.json(str(ingested.out / "skipped")).collect()
    assert [(r["input"], r["reason"]) for r in skipped] == [("d.rmqcap", "truncated last record")]
    with pytest.raises(IngestError):
        ingest(spark, [str(ingested.damaged)], tmp_path / "out2", strict=True, progress=None)
    assert not (tmp_path / "out2").exists()  # strict fails before writing anything


def test_the_data_sources_read_captures_pcaps_and_stores(
    spark: Any, ingested: Ingested, tmp_path: Path
) -> None:
    """``spark.read.format(...)`` of ``rmqcap``, ``pcap`` and ``rocketmq-store`` (the ingest plans its own
    partitions): every record of the capture once however it is split, the pcap's frames the capture's,
    a store's messages in order."""
    from rmqtwin.proxy.capture import REC_FRAME, read_records
    from tests.store_mirror.conftest import StoreFactory, make_msg

    records = list(read_records(ingested.capture))
    frames = sorted(r.data for r in records if r.type == REC_FRAME)
    whole = spark.read.format("rmqcap").load(str(ingested.capture))
    quarter = ingested.capture.stat().st_size // 4  # a few splits: each is a Python task
    split = spark.read.format("rmqcap").option("splitBytes", str(quarter)).load(str(ingested.capture))
    assert split.rdd.getNumPartitions() > whole.rdd.getNumPartitions()
    for df in (whole, split):
        assert df.where("skip_reason IS NULL").count() == len(records)
    pcap = spark.read.format("pcap").load(str(ingested.pcap)).where(f"type = {REC_FRAME}")
    assert sorted(bytes(r.data) for r in pcap.select("data").collect()) == frames

    stores = StoreFactory(str(tmp_path / "store"))
    store = stores.open()
    for i in range(5):
        store.put_message(make_msg(body=b"m%d" % i))
    stores.close_all()
    messages = spark.read.format("rocketmq-store").load(str(tmp_path / "store"))
    assert [r.body for r in messages.orderBy("commitlog_offset").select("body").collect()] == [
        b"m%d" % i for i in range(5)
    ]
