"""``rmqtwin spark report``: one self-contained page, opened in headless Chromium; every plot renders
and has data."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest

from tests.chromium import dump_dom
from tests.spark.conftest import Ingested

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]


def test_report_renders_in_chromium_with_data_in_every_plot(
    spark: Any, ingested: Ingested, tmp_path: Path
) -> None:
    from rmqtwin.spark.report import write_report

    page = tmp_path / "report.html"
    data = write_report(spark, ingested.out, page, json_out=tmp_path / "report.json")
    text = page.read_text()
    assert not re.search(r'(src|href)="(?!data:)', text)  # nothing loaded from anywhere
    assert [(s["input"], s["reason"]) for s in data["skipped"]] == [("d.rmqcap", "truncated last record")]
    points = [int(p) for p in re.findall(r'<figure data-points="(\d+)"', text)]
    assert len(points) == 7 and all(points), points
    dom = dump_dom(page)
    assert 'data-plots-rendered="7/7"' in dom
    assert "truncated last record" in dom
    assert "TOPIC_NOT_EXIST" in dom


def test_report_figures_are_those_of_one_query_per_section(spark: Any, ingested: Ingested) -> None:
    """``build_report`` computes its figures in two Spark actions; each is the one a plain query of its
    section gives (the report's fourteen queries before they were merged)."""
    from pyspark.sql import functions as sf

    from rmqtwin.spark.report import TOP, build_report

    got = build_report(spark, ingested.out)
    frames, ex, msgs = (
        spark.read.parquet(str(ingested.out / t)) for t in ("frames", "exchanges", "messages")
    )
    s = frames.agg(
        sf.min("wall_ns").alias("lo"),
        sf.max("wall_ns").alias("hi"),
        sf.count("*").alias("frames"),
        sf.countDistinct("capture", "conn_id").alias("connections"),
        sf.sum(sf.col("frame_length").cast("bigint")).alias("bytes"),
    ).first()
    assert s is not None
    assert {k: got["summary"][k] for k in ("frames", "connections", "bytes")} == {
        k: s[k] for k in ("frames", "connections", "bytes")
    }
    conns = (
        frames.groupBy("capture", "conn_id", "kind", "client", "server")
        .agg(sf.min("wall_ns").alias("first"), sf.max("wall_ns").alias("last"), sf.count("*").alias("frames"))
        .collect()
    )
    busiest = sorted((r["frames"] for r in conns), reverse=True)[:40]
    assert [c["frames"] for c in got["connections"]] == busiest  # the 40 busiest, busiest first
    assert all(c in [r.asDict() for r in conns] for c in got["connections"])
    want_clients = (
        ex.where("request_direction = 0 AND language IS NOT NULL")
        .groupBy("language", "client_version")
        .agg(sf.countDistinct("client").alias("clients"), sf.count("*").alias("requests"))
        .collect()
    )
    assert _rows(got["clients"]) == _rows(r.asDict() for r in want_clients)
    ex.createOrReplaceTempView("want_ex")
    by_code = spark.sql(
        "SELECT request_code, request_code_name, count(*) AS requests, "
        "sum(CASE WHEN response_code <> 0 THEN 1 ELSE 0 END) AS not_ok, "
        "sum(CASE WHEN unanswered IS NOT NULL THEN 1 ELSE 0 END) AS unanswered, "
        "percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ns) AS p50_ns, "
        "percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ns) AS p99_ns "
        "FROM want_ex GROUP BY request_code, request_code_name"
    ).collect()
    assert _rows(got["by_code"]) == _rows(r.asDict() for r in by_code)
    assert [r["requests"] for r in got["by_code"]] == sorted((r["requests"] for r in by_code), reverse=True)
    errors = spark.sql(
        "SELECT request_code_name, response_code, response_code_name, remark, count(*) AS n, "
        "collect_set(concat(capture, ' #', conn_id, ' frame ', response_seq)) AS examples "
        "FROM want_ex WHERE response_code IS NOT NULL AND response_code <> 0 "
        "GROUP BY request_code_name, response_code, response_code_name, remark"
    ).collect()
    assert len(errors) < 50 and errors
    examples = {tuple(r[:4]): r["examples"] for r in errors}
    assert all(e["example"] in examples[tuple(e[k] for k in list(e)[:4])] for e in got["errors"])
    assert _rows({k: v for k, v in e.items() if k != "example"} for e in got["errors"]) == _rows(
        {k: v for k, v in r.asDict().items() if k != "examples"} for r in errors
    )
    lo, hi = s["lo"], s["hi"]
    bucket = max(1_000_000_000, max(hi - lo, 1) // 120)
    assert got["rate"]["bucket_s"] == bucket / 1e9
    b = ((sf.col("request_wall_ns") - lo) / bucket).cast("long").alias("b")
    top_codes = [r["request_code_name"] for r in got["by_code"][:TOP]]
    rate = ex.where(sf.col("request_code_name").isin(top_codes)).groupBy(b, "request_code_name").count()
    assert sorted(got["rate"]["rows"]) == sorted(tuple(r) for r in rate.collect())

    def latency(key: str, keys: list[str]) -> list[tuple[Any, ...]]:
        rows = (
            ex.where(sf.col("latency_ns").isNotNull() & sf.col(key).isin(keys))
            .groupBy(b, key)
            .agg(sf.percentile_approx("latency_ns", 0.5), sf.percentile_approx("latency_ns", 0.99))
        )
        return sorted(tuple(r) for r in rows.collect())

    assert got["latency_by_code"] == latency("request_code_name", top_codes)
    topics = ex.where("topic IS NOT NULL").groupBy("topic").count().collect()
    assert len(topics) <= TOP
    assert got["latency_by_topic"] == latency("topic", [r["topic"] for r in topics])
    lag = (
        ex.where("max_offset IS NOT NULL AND queue_offset IS NOT NULL")
        .groupBy(b, sf.concat_ws(" ", "consumer_group", "topic", sf.concat(sf.lit("q"), "queue_id")))
        .agg(sf.max(sf.col("max_offset") - sf.col("queue_offset")))
    )
    assert got["lag"] == sorted(tuple(r) for r in lag.collect()) and got["lag"]
    sent = msgs.where("event = 'sent'")
    sizes = sorted(r["body_length"] for r in sent.select("body_length").collect())
    width = max((sizes[-1] - sizes[0]) / 50, 1e-9)
    counts = [0] * 50
    for n in sizes:
        counts[min(math.floor((n - sizes[0]) / width), 49)] += 1
    assert got["sizes"] == {"edges": [sizes[0] + i * width for i in range(51)], "counts": counts}
    first = (
        msgs.where("event = 'delivered'")
        .groupBy("msg_id", "group")
        .agg(sf.min("wall_ns").alias("delivered_ns"), sf.count("*").alias("deliveries"))
    )
    delay = (
        sent.select("msg_id", "topic", sf.col("wall_ns").alias("sent_ns"))
        .join(first, "msg_id")
        .groupBy("topic", "group")
        .agg(
            sf.count("*").alias("messages"),
            sf.percentile_approx(sf.col("delivered_ns") - sf.col("sent_ns"), 0.5).alias("p50_ns"),
            sf.percentile_approx(sf.col("delivered_ns") - sf.col("sent_ns"), 0.99).alias("p99_ns"),
            sf.sum(sf.col("deliveries") - 1).alias("redeliveries"),
        )
        .orderBy("topic", "group")
        .collect()
    )
    assert got["delivery_delay"] == [r.asDict() for r in delay] and delay
    for key, event in (("producers", "sent"), ("consumers", "delivered")):
        peers = (
            msgs.where(f"event = '{event}'")
            .groupBy("client", "group")
            .agg(sf.count("*").alias("messages"), sf.sum("body_length").alias("bytes"))
            .collect()
        )
        assert len(peers) <= 20 and peers
        assert _rows(got[key]) == _rows(r.asDict() for r in peers)


def _rows(rows: Any) -> list[list[tuple[str, str]]]:
    return sorted(sorted((k, repr(v)) for k, v in r.items()) for r in rows)
