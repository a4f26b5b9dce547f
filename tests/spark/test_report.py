"""``rmqtwin spark report``: one self-contained page, opened in headless Chromium; every plot renders
and has data."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.chromium import dump_dom
from tests.spark.conftest import Ingested

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]


@dataclass(frozen=True)
class Report:
    data: dict[str, Any]
    page: Path


@pytest.fixture(scope="module")
def report(spark: Any, ingested: Ingested, tmp_path_factory: pytest.TempPathFactory) -> Report:
    """The report of the shared ingest, written once for the page test and the figures test."""
    from rmqtwin.spark.report import write_report

    out = tmp_path_factory.mktemp("report")
    page = out / "report.html"
    data = write_report(spark, ingested.out, page, json_out=out / "report.json")
    return Report(data, page)


def test_report_renders_in_chromium_with_data_in_every_plot(report: Report) -> None:
    text = report.page.read_text()
    assert not re.search(r'(src|href)="(?!data:)', text)  # nothing loaded from anywhere
    skipped = [(s["input"], s["reason"]) for s in report.data["skipped"]]
    assert skipped == [("d.rmqcap", "truncated last record")]
    points = [int(p) for p in re.findall(r'<figure data-points="(\d+)"', text)]
    assert len(points) == 7 and all(points), points
    dom = dump_dom(report.page)
    assert 'data-plots-rendered="7/7"' in dom
    assert "truncated last record" in dom
    assert "TOPIC_NOT_EXIST" in dom


def test_report_figures_are_those_of_one_query_per_section(
    spark: Any, ingested: Ingested, report: Report
) -> None:
    """``build_report`` computes its figures in two Spark actions; each is the one a plain query of its
    section gives (the report's fourteen queries before they were merged); the delivery delay's
    percentiles are computed here in plain Python, within percentile_approx's error bound."""
    from pyspark.sql import functions as sf

    from rmqtwin.spark.report import TOP

    got = report.data
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
    first: dict[tuple[Any, Any], list[int]] = {}
    for r in msgs.where("event = 'delivered'").select("msg_id", "group", "wall_ns").collect():
        first.setdefault((r["msg_id"], r["group"]), []).append(r["wall_ns"])
    sent_at: dict[Any, list[tuple[Any, int]]] = {}
    for r in sent.select("msg_id", "topic", "wall_ns").collect():
        sent_at.setdefault(r["msg_id"], []).append((r["topic"], r["wall_ns"]))
    delays: dict[tuple[Any, Any], list[int]] = {}
    redeliveries: dict[tuple[Any, Any], int] = {}
    for (msg_id, group), delivered in first.items():
        for topic, sent_ns in sent_at.get(msg_id, []) if msg_id is not None else []:
            delays.setdefault((topic, group), []).append(min(delivered) - sent_ns)
            redeliveries[topic, group] = redeliveries.get((topic, group), 0) + len(delivered) - 1
    assert got["delivery_delay"] and [(d["topic"], d["group"]) for d in got["delivery_delay"]] == sorted(
        delays, key=lambda k: (k[0] is not None, k[0], k[1] is not None, k[1])
    )
    for d in got["delivery_delay"]:
        values = sorted(delays[d["topic"], d["group"]])
        assert (d["messages"], d["redeliveries"]) == (len(values), redeliveries[d["topic"], d["group"]])
        assert _within_approx_bound(values, 0.5, d["p50_ns"]), (d, values)
        assert _within_approx_bound(values, 0.99, d["p99_ns"]), (d, values)
    for key, event in (("producers", "sent"), ("consumers", "delivered")):
        peers = (
            msgs.where(f"event = '{event}'")
            .groupBy("client", "group")
            .agg(sf.count("*").alias("messages"), sf.sum("body_length").alias("bytes"))
            .collect()
        )
        assert len(peers) <= 20 and peers
        assert _rows(got[key]) == _rows(r.asDict() for r in peers)


APPROX_ACCURACY = 10_000
"""percentile_approx's default accuracy: its documented relative error is 1 / accuracy."""


def _within_approx_bound(ascending: list[int], q: float, got: int) -> bool:
    """``got`` is a value of ``ascending`` whose rank is within percentile_approx's error bound
    (``n / accuracy`` ranks) of the exact nearest-rank percentile ``q`` (rank ``ceil(q * n)``)."""
    n = len(ascending)
    exact = max(1, math.ceil(q * n))
    slack = n / APPROX_ACCURACY
    return any(ascending[rank - 1] == got for rank in range(1, n + 1) if abs(rank - exact) <= slack)


def _rows(rows: Any) -> list[list[tuple[str, str]]]:
    return sorted(sorted((k, repr(v)) for k, v in r.items()) for r in rows)
