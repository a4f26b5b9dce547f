"""``rmqtwin spark report DIR --html OUT.html``: one self-contained page over the ingested tables.

Aggregation runs in Spark; only the small results come to the driver, where matplotlib (Agg) draws
them as PNGs embedded as data URIs: the page loads nothing from anywhere.
"""

from __future__ import annotations

import base64
import datetime as dt
import html
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

__all__ = ["build_report", "write_report"]

TOP = 8


def _ns(text: str | None) -> int | None:
    if not text:
        return None
    when = dt.datetime.fromisoformat(text)
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1e9)


def _iso(ns: int | None) -> str:
    if ns is None:
        return "-"
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.UTC).isoformat(timespec="milliseconds")


def _table(
    spark: SparkSession, root: Path, name: str, column: str, window: tuple[int | None, int | None]
) -> DataFrame | None:
    path = root / name
    if not path.exists() or not any(path.rglob("*.parquet")):
        return None
    df = spark.read.parquet(str(path))
    start, end = window
    if start is not None:
        df = df.where(df[column] >= start)
    if end is not None:
        df = df.where(df[column] < end)
    return df


def _bucket_ns(lo: int, hi: int) -> int:
    """Time bucket for the over-time plots: about 120 points over the range, at least 1 s."""
    span = max(hi - lo, 1)
    return max(1_000_000_000, span // 120)


def _latency_percentiles(
    ex: DataFrame, in_bucket: Column, key: str, keys: Sequence[str]
) -> list[tuple[int, str, int, int]]:
    """Latency p50/p99 per time bucket for each of ``keys`` (request codes or topics)."""
    from pyspark.sql import functions as sf

    rows = (
        ex.where(sf.col("latency_ns").isNotNull() & sf.col(key).isin(list(keys)))
        .groupBy(in_bucket, key)
        .agg(
            sf.percentile_approx("latency_ns", 0.5).alias("p50"),
            sf.percentile_approx("latency_ns", 0.99).alias("p99"),
        )
        .collect()
    )
    return [(r["b"], r[key], r["p50"], r["p99"]) for r in rows]


def build_report(
    spark: SparkSession, root: str | Path, *, start: str | None = None, end: str | None = None
) -> dict[str, Any]:
    """Everything the page shows, as plain data (also what ``--json`` writes)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as sf

    root = Path(root)
    lo_f, hi_f = _ns(start), _ns(end)
    frames = _table(spark, root, "frames", "wall_ns", (lo_f, hi_f))
    ex = _table(spark, root, "exchanges", "request_wall_ns", (lo_f, hi_f))
    msgs = _table(spark, root, "messages", "wall_ns", (lo_f, hi_f))
    out: dict[str, Any] = {"dir": str(root), "from": start, "to": end}
    skipped_dir = root / "skipped"
    out["skipped"] = (
        [
            json.loads(line)
            for f in sorted(skipped_dir.glob("*.json"))
            for line in f.read_text().splitlines()
            if line
        ]
        if skipped_dir.exists()
        else []
    )
    if frames is not None:
        s = frames.agg(
            sf.min("wall_ns").alias("lo"),
            sf.max("wall_ns").alias("hi"),
            sf.count("*").alias("frames"),
            sf.countDistinct("capture", "conn_id").alias("connections"),
            sf.sum(sf.col("frame_length").cast("bigint")).alias("bytes"),
        ).collect()[0]
        out["summary"] = {
            "from": _iso(s["lo"]),
            "to": _iso(s["hi"]),
            "frames": s["frames"],
            "connections": s["connections"],
            "bytes": s["bytes"],
        }
        lo, hi = s["lo"] or 0, s["hi"] or 0
        conns = (
            frames.groupBy("capture", "conn_id", "kind", "client", "server")
            .agg(
                sf.min("wall_ns").alias("first"),
                sf.max("wall_ns").alias("last"),
                sf.count("*").alias("frames"),
            )
            .orderBy(sf.desc("frames"))
            .limit(40)
            .collect()
        )
        out["connections"] = [r.asDict() for r in conns]
    else:
        lo = hi = 0
    if ex is not None:
        ex = ex.select(
            "capture", "conn_id", "request_direction", "request_wall_ns", "request_code", "request_code_name",
            "response_code", "response_code_name", "remark", "latency_ns", "topic", "consumer_group",
            "queue_id", "queue_offset", "max_offset", "language", "client_version", "client",
            "response_seq", "unanswered",
        ).persist(StorageLevel.MEMORY_AND_DISK)  # fmt: skip
        out["clients"] = [
            r.asDict()
            for r in ex.where("request_direction = 0 AND language IS NOT NULL")
            .groupBy("language", "client_version")
            .agg(sf.countDistinct("client").alias("clients"), sf.count("*").alias("requests"))
            .orderBy(sf.desc("requests"))
            .collect()
        ]
        ex.createOrReplaceTempView("report_ex")
        out["by_code"] = [
            r.asDict()
            for r in spark.sql(
                "SELECT request_code, request_code_name, count(*) AS requests, "
                "sum(CASE WHEN response_code <> 0 THEN 1 ELSE 0 END) AS not_ok, "
                "sum(CASE WHEN unanswered IS NOT NULL THEN 1 ELSE 0 END) AS unanswered, "
                "percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ns) AS p50_ns, "
                "percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ns) AS p99_ns "
                "FROM report_ex GROUP BY request_code, request_code_name ORDER BY requests DESC"
            ).collect()
        ]
        out["errors"] = [
            r.asDict()
            for r in spark.sql(
                "SELECT request_code_name, response_code, response_code_name, remark, count(*) AS n, "
                "first(concat(capture, ' #', conn_id, ' frame ', response_seq)) AS example "
                "FROM report_ex WHERE response_code IS NOT NULL AND response_code <> 0 "
                "GROUP BY request_code_name, response_code, response_code_name, remark "
                "ORDER BY n DESC LIMIT 50"
            ).collect()
        ]
        bucket = _bucket_ns(lo, hi)
        top_codes = [r["request_code_name"] for r in out["by_code"][:TOP]]
        in_bucket = ((sf.col("request_wall_ns") - lo) / bucket).cast("long").alias("b")
        rate = (
            ex.where(sf.col("request_code_name").isin(top_codes))
            .groupBy(in_bucket, "request_code_name")
            .count()
        )
        out["rate"] = {
            "bucket_s": bucket / 1e9,
            "rows": [(r["b"], r["request_code_name"], r["count"]) for r in rate.collect()],
        }
        out["latency_by_code"] = _latency_percentiles(ex, in_bucket, "request_code_name", top_codes)
        top_topics = [
            r["topic"]
            for r in ex.where("topic IS NOT NULL")
            .groupBy("topic")
            .count()
            .orderBy(sf.desc("count"))
            .limit(TOP)
            .collect()
        ]
        out["latency_by_topic"] = _latency_percentiles(ex, in_bucket, "topic", top_topics)
        lag = (
            ex.where("max_offset IS NOT NULL AND queue_offset IS NOT NULL")
            .withColumn(
                "series", sf.concat_ws(" ", "consumer_group", "topic", sf.concat(sf.lit("q"), "queue_id"))
            )
            .groupBy(in_bucket, "series")
            .agg(sf.max(sf.col("max_offset") - sf.col("queue_offset")).alias("lag"))
            .collect()
        )
        out["lag"] = [(r["b"], r["series"], r["lag"]) for r in lag]
    if msgs is not None:
        msgs = msgs.select("event", "msg_id", "topic", "group", "client", "wall_ns", "body_length")
        msgs = msgs.persist(StorageLevel.MEMORY_AND_DISK)
        out["sizes"] = _size_histogram(msgs.where("event = 'sent'"))
        sent = msgs.where("event = 'sent'").select("msg_id", "topic", sf.col("wall_ns").alias("sent_ns"))
        first = (
            msgs.where("event = 'delivered'")
            .groupBy("msg_id", "group")
            .agg(sf.min("wall_ns").alias("delivered_ns"), sf.count("*").alias("deliveries"))
        )
        delay = (
            sent.join(first, "msg_id")
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
        out["delivery_delay"] = [r.asDict() for r in delay]
        for key, event in (("producers", "sent"), ("consumers", "delivered")):
            # the 20 clients (and groups) with the most messages sent, or delivered to them
            out[key] = [
                r.asDict()
                for r in msgs.where(f"event = '{event}'")
                .groupBy("client", "group")
                .agg(sf.count("*").alias("messages"), sf.sum("body_length").alias("bytes"))
                .orderBy(sf.desc("messages"))
                .limit(20)
                .collect()
            ]
        msgs.unpersist()
    if ex is not None:
        ex.unpersist()
    return out


SIZE_BINS = 50


def _size_histogram(sent: DataFrame) -> dict[str, Any]:
    """The sent bodies' sizes in :data:`SIZE_BINS` equal bins between the smallest and the largest,
    counted by Spark (``edges``, ``counts``): only the bins come to the driver."""
    from pyspark.sql import functions as sf

    lo, hi = sent.agg(sf.min("body_length"), sf.max("body_length")).first() or (None, None)
    if lo is None or hi is None:
        return {"edges": [], "counts": []}
    width = max((hi - lo) / SIZE_BINS, 1e-9)
    b = sf.least(sf.floor((sf.col("body_length") - lo) / width), sf.lit(SIZE_BINS - 1)).cast("int")
    counts: dict[int, int] = {r["b"]: r["count"] for r in sent.groupBy(b.alias("b")).count().collect()}
    return {
        "edges": [lo + i * width for i in range(SIZE_BINS + 1)],
        "counts": [counts.get(i, 0) for i in range(SIZE_BINS)],
    }


# ------------------------------------------------------------------------------------------------ page


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _series_plot(
    rows: Sequence[tuple[Any, ...]],
    bucket_s: float,
    value_index: int,
    ylabel: str,
    title: str,
    *,
    scale: float = 1.0,
    second: int | None = None,
) -> tuple[str | None, int]:
    import matplotlib.pyplot as plt

    if not rows:
        return None, 0
    fig, ax = plt.subplots(figsize=(10, 3.6))
    names = sorted({r[1] for r in rows})
    for name in names:
        pts = sorted((r[0] * bucket_s, r[value_index] / scale) for r in rows if r[1] == name)
        (line,) = ax.plot(
            [p[0] for p in pts], [p[1] for p in pts], label=f"{name}" + (" p50" if second else "")
        )
        if second is not None:
            pts2 = sorted((r[0] * bucket_s, r[second] / scale) for r in rows if r[1] == name)
            ax.plot(
                [p[0] for p in pts2],
                [p[1] for p in pts2],
                linestyle="--",
                color=line.get_color(),
                label=f"{name} p99",
            )
    ax.set_xlabel("seconds since the first frame")
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    return _png(fig), len(rows)


def _plots(data: dict[str, Any]) -> list[tuple[str, str | None, int]]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots: list[tuple[str, str | None, int]] = []
    rate = data.get("rate", {"bucket_s": 1.0, "rows": []})
    bucket_s = rate["bucket_s"]
    rows = [(b, name, n / bucket_s) for b, name, n in rate["rows"]]
    plots.append(
        ("Requests per second by code", *_series_plot(rows, bucket_s, 2, "requests/s", "requests/s"))
    )
    plots.append(
        (
            "Latency p50 / p99 by code",
            *_series_plot(data.get("latency_by_code", []), bucket_s, 2, "ms", "latency", scale=1e6, second=3),
        )
    )
    plots.append(
        (
            "Latency p50 / p99 by topic",
            *_series_plot(
                data.get("latency_by_topic", []), bucket_s, 2, "ms", "latency", scale=1e6, second=3
            ),
        )
    )
    sizes = data.get("sizes") or {"edges": [], "counts": []}
    img = None
    if sizes["counts"]:
        fig, ax = plt.subplots(figsize=(10, 3.2))
        edges = sizes["edges"]
        ax.hist(edges[:-1], bins=edges, weights=sizes["counts"])
        ax.set_xlabel("body bytes")
        ax.set_ylabel("messages sent")
        ax.set_yscale("log")
        img = _png(fig)
    plots.append(("Message size histogram", img, sum(sizes["counts"])))
    delay = data.get("delivery_delay", [])
    img = None
    if delay:
        fig, ax = plt.subplots(figsize=(10, 3.2))
        labels = [f"{d['topic']} / {d['group']}" for d in delay]
        x = range(len(delay))
        ax.bar([i - 0.2 for i in x], [d["p50_ns"] / 1e6 for d in delay], width=0.4, label="p50")
        ax.bar([i + 0.2 for i in x], [d["p99_ns"] / 1e6 for d in delay], width=0.4, label="p99")
        ax.set_xticks(list(x), labels, rotation=20, fontsize=7, ha="right")
        ax.set_ylabel("ms sent → first delivered")
        ax.legend()
        img = _png(fig)
    plots.append(("Sent → first delivered, per topic and consumer group", img, len(delay)))
    plots.append(
        (
            "Consumer lag (max offset - pull offset) per group and queue",
            *_series_plot(data.get("lag", []), bucket_s, 2, "messages", "lag"),
        )
    )
    conns = data.get("connections", [])
    img = None
    if conns:
        first = min(c["first"] for c in conns)
        fig, ax = plt.subplots(figsize=(10, max(2.5, 0.22 * len(conns))))
        for i, c in enumerate(conns):
            ax.barh(
                i,
                max((c["last"] - c["first"]) / 1e9, 0.01),
                left=(c["first"] - first) / 1e9,
                color="tab:blue" if c["kind"] == "broker" else "tab:orange",
            )
        ax.set_yticks(
            range(len(conns)), [f"#{c['conn_id']} {c['client']}→{c['server']}" for c in conns], fontsize=6
        )
        ax.set_xlabel("seconds since the first frame (blue: broker, orange: other)")
        img = _png(fig)
    plots.append(("Connection timeline (busiest 40)", img, len(conns)))
    return plots


def _html_table(rows: list[dict[str, Any]], columns: Sequence[str]) -> str:
    if not rows:
        return "<p class=none>none</p>"
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape('' if r.get(c) is None else str(r.get(c)))}</td>" for c in columns)
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


_CHECK = """<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('figure img');
  var ok = 0;
  imgs.forEach(function (i) { if (i.complete && i.naturalWidth > 0) ok++; });
  document.body.setAttribute('data-plots-rendered', ok + '/' + imgs.length);
});
</script>"""


def render_html(data: dict[str, Any]) -> str:
    plots = _plots(data)
    summary = data.get("summary", {})
    parts = [
        "<!doctype html><html><head><meta charset=utf-8><title>rmqtwin traffic report</title><style>"
        "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;font-size:12px}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}figure{margin:1em 0}"
        ".none{color:#888}</style></head><body>",
        f"<h1>rmqtwin traffic report</h1><p>{html.escape(data['dir'])}</p>",
        "<h2>Summary</h2>",
        _html_table([summary], ["from", "to", "connections", "frames", "bytes"])
        if summary
        else "<p>no frames</p>",
        "<h3>Clients by language and version</h3>",
        _html_table(data.get("clients", []), ["language", "client_version", "clients", "requests"]),
        "<h3>Requests by code</h3>",
        _html_table(
            [
                {
                    **r,
                    "p50 ms": None if r["p50_ns"] is None else f"{r['p50_ns'] / 1e6:.3f}",
                    "p99 ms": None if r["p99_ns"] is None else f"{r['p99_ns'] / 1e6:.3f}",
                }
                for r in data.get("by_code", [])
            ],
            ["request_code", "request_code_name", "requests", "not_ok", "unanswered", "p50 ms", "p99 ms"],
        ),
        "<h3>Skipped input</h3>",
        _html_table(data.get("skipped", []), ["input", "reason", "count", "bytes"]),
        "<h2>Plots</h2>",
    ]
    for title, img, points in plots:
        inner = f'<img alt="{html.escape(title)}" src="{img}">' if img else "<p class=none>no data</p>"
        parts.append(
            f'<figure data-points="{points}"><figcaption>{html.escape(title)}</figcaption>{inner}</figure>'
        )
    parts += [
        "<h2>Errors</h2>",
        _html_table(
            data.get("errors", []),
            ["request_code_name", "response_code", "response_code_name", "remark", "n", "example"],
        ),
        "<h2>Sent → first delivered</h2>",
        _html_table(
            data.get("delivery_delay", []), ["topic", "group", "messages", "p50_ns", "p99_ns", "redeliveries"]
        ),
        "<h2>Top producers</h2>",
        _html_table(data.get("producers", []), ["client", "group", "messages", "bytes"]),
        "<h2>Top consumers</h2>",
        _html_table(data.get("consumers", []), ["client", "group", "messages", "bytes"]),
        _CHECK,
        "</body></html>",
    ]
    return "\n".join(parts)


def write_report(
    spark: SparkSession,
    root: str | Path,
    html_out: str | Path,
    *,
    json_out: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
) -> dict[str, Any]:
    data = build_report(spark, root, start=start, end=end)
    Path(html_out).write_text(render_html(data), encoding="utf-8")
    if json_out is not None:
        Path(json_out).write_text(json.dumps(data, indent=2, default=str), encoding="utf-8")
    return data
