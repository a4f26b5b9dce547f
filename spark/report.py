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
    from pyspark.sql import DataFrame, SparkSession

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
    """The table under ``root``, read with its known schema: inferring it runs a Spark job per table
    (a footer read), three cold jobs before the report's first action."""
    from rmqtwin.spark.schemas import EXCHANGES, FRAMES, MESSAGES, ddl

    path = root / name
    if not path.exists() or not any(path.rglob("*.parquet")):
        return None
    schema = {"frames": FRAMES, "exchanges": EXCHANGES, "messages": MESSAGES}[name]
    df = spark.read.schema(ddl(schema)).parquet(str(path))
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


def build_report(
    spark: SparkSession, root: str | Path, *, start: str | None = None, end: str | None = None
) -> dict[str, Any]:
    """Everything the page shows, as plain data (also what ``--json`` writes).

    Two Spark actions: the frames' summary and busiest connections, then every other figure in one
    union of aggregations (each table's columns read once); a Spark action's fixed cost (planning,
    code generation, scheduling) was most of what the fourteen separate ones cost."""
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
    lo = hi = 0
    if frames is not None:
        out["summary"], out["connections"] = _frames_figures(frames)
        lo, hi = out["summary"].pop("lo") or 0, out["summary"].pop("hi") or 0
    parts: list[DataFrame] = []
    bucket = _bucket_ns(lo, hi)
    if ex is not None:
        parts.append(_exchange_sets(ex, lo, bucket))
    if msgs is not None:
        parts += _message_sets(msgs)
    if not parts:
        return out
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part, allowMissingColumns=True)
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in union.collect():
        rows.setdefault(r["set"], []).append(r.asDict())
    if ex is not None:
        out.update(_exchange_figures(rows, bucket))
    if msgs is not None:
        out.update(_message_figures(rows))
    return out


def _frames_figures(frames: DataFrame) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The summary (with the time range's ``lo``/``hi`` in ns) and the 40 connections with the most
    frames, from one aggregation per connection: one Spark action."""
    frames.createOrReplaceTempView("report_frames")
    rows = frames.sparkSession.sql(
        """
        WITH per_conn AS (
          SELECT capture, conn_id, kind, client, server, min(wall_ns) AS first, max(wall_ns) AS last,
                 count(*) AS frames, sum(CAST(frame_length AS BIGINT)) AS bytes
          FROM report_frames GROUP BY capture, conn_id, kind, client, server
        ), once AS (
          SELECT *, row_number() OVER (PARTITION BY capture, conn_id ORDER BY frames) AS nth FROM per_conn
        ), ranked AS (
          SELECT *, min(first) OVER () AS lo, max(last) OVER () AS hi, sum(frames) OVER () AS total,
                 sum(bytes) OVER () AS total_bytes,
                 count_if(nth = 1 AND capture IS NOT NULL AND conn_id IS NOT NULL) OVER () AS connections,
                 row_number() OVER (ORDER BY frames DESC) AS rank
          FROM once
        )
        SELECT * FROM ranked WHERE rank <= 40 ORDER BY rank
        """
    ).collect()
    top = rows[0] if rows else None
    summary = {
        "from": _iso(top["lo"] if top else None),
        "to": _iso(top["hi"] if top else None),
        "frames": top["total"] if top else 0,
        "connections": top["connections"] if top else 0,
        "bytes": top["total_bytes"] if top else None,
        "lo": top["lo"] if top else None,
        "hi": top["hi"] if top else None,
    }
    keys = ("capture", "conn_id", "kind", "client", "server", "first", "last", "frames")
    return summary, [{k: r[k] for k in keys} for r in rows]


def _sets(
    df: DataFrame, columns: dict[str, str], sets: Sequence[tuple[str, str, dict[str, str]]]
) -> DataFrame:
    """One row per row of ``df`` and set ``(name, condition, {column: expression})`` whose condition the
    row meets, with the set's name in ``set``, its expressions in their ``columns`` (``{name: SQL
    type}``) and the other columns null: GROUPING SETS, but each set with its own rows and its own
    value columns, so an expensive aggregate (a percentile) reads only the rows of the set it is for."""
    elems = []
    for name, condition, exprs in sets:
        fields = ", ".join(
            f"'{col}', CAST({exprs.get(col, 'NULL')} AS {sql_type})" for col, sql_type in columns.items()
        )
        elems.append(f"IF({condition}, named_struct('set', '{name}', {fields}), NULL)")
    return df.selectExpr(f"inline(filter(array({', '.join(elems)}), x -> x IS NOT NULL))")


_EX_COLUMNS = {
    "language": "STRING",
    "client_version": "INT",
    "client": "STRING",
    "request_code": "INT",
    "request_code_name": "STRING",
    "response_code": "INT",
    "response_code_name": "STRING",
    "remark": "STRING",
    "b": "BIGINT",
    "topic": "STRING",
    "series": "STRING",
    # values
    "lat_exact": "BIGINT",
    "lat": "BIGINT",
    "lag": "BIGINT",
    "not_ok": "INT",
    "unanswered": "INT",
    "example": "STRING",
}
_EX_VALUES = ("lat_exact", "lat", "lag", "not_ok", "unanswered", "example")
_EX_SETS: tuple[tuple[str, str, dict[str, str]], ...] = (
    (
        "clients",
        "request_direction = 0 AND language IS NOT NULL",
        {"language": "language", "client_version": "client_version", "client": "client"},
    ),
    (
        "by_code",
        "true",
        {
            "request_code": "request_code",
            "request_code_name": "request_code_name",
            "lat_exact": "latency_ns",
            "not_ok": "CASE WHEN response_code <> 0 THEN 1 ELSE 0 END",
            "unanswered": "CASE WHEN unanswered IS NOT NULL THEN 1 ELSE 0 END",
        },
    ),
    (
        "errors",
        "response_code IS NOT NULL AND response_code <> 0",
        {
            "request_code_name": "request_code_name",
            "response_code": "response_code",
            "response_code_name": "response_code_name",
            "remark": "remark",
            "example": "concat(capture, ' #', conn_id, ' frame ', response_seq)",
        },
    ),
    # requests per bucket and code, and their latency percentiles (of the answered ones)
    ("rate", "true", {"b": "b", "request_code_name": "request_code_name", "lat": "latency_ns"}),
    ("topic", "topic IS NOT NULL", {"b": "b", "topic": "topic", "lat": "latency_ns"}),
    (
        "lag",
        "max_offset IS NOT NULL AND queue_offset IS NOT NULL",
        {
            "b": "b",
            "series": "concat_ws(' ', consumer_group, topic, concat('q', queue_id))",
            "lag": "max_offset - queue_offset",
        },
    ),
)


def _exchange_sets(ex: DataFrame, lo: int, bucket: int) -> DataFrame:
    """Every figure of the exchanges in one aggregation; ``errors`` keeps the 50 with the most
    exchanges, ``topic`` the time series of the :data:`TOP` topics with the most requests."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    keys = [c for c in _EX_COLUMNS if c not in _EX_VALUES]
    ex = ex.withColumn("b", ((sf.col("request_wall_ns") - lo) / bucket).cast("long"))
    agg = (
        _sets(ex, _EX_COLUMNS, _EX_SETS)
        .groupBy("set", *keys)
        .agg(
            sf.count("*").alias("n"),
            sf.sum("not_ok").alias("not_ok"),
            sf.sum("unanswered").alias("unanswered"),
            sf.expr("percentile_disc(0.5) WITHIN GROUP (ORDER BY lat_exact)").alias("p50_ns"),
            sf.expr("percentile_disc(0.99) WITHIN GROUP (ORDER BY lat_exact)").alias("p99_ns"),
            sf.count("lat").alias("answered"),
            sf.percentile_approx("lat", 0.5).alias("p50"),
            sf.percentile_approx("lat", 0.99).alias("p99"),
            sf.max("lag").alias("lag"),
            sf.first("example").alias("example"),
        )
    )
    topic_total = sf.sum("n").over(Window.partitionBy("set", "topic"))
    agg = agg.withColumn("topic_n", sf.when(sf.col("set") == "topic", topic_total))
    ranked = agg.withColumn(
        "rank",
        sf.when(
            sf.col("set") == "errors", sf.row_number().over(Window.partitionBy("set").orderBy(sf.desc("n")))
        ).when(
            sf.col("set") == "topic",
            sf.dense_rank().over(Window.partitionBy("set").orderBy(sf.desc("topic_n"), "topic")),
        ),
    )
    return ranked.where(
        "rank IS NULL OR (set = 'errors' AND rank <= 50) OR (set = 'topic' AND rank <= " + str(TOP) + ")"
    ).drop("lat_exact", "lat", "topic_n", "rank")


def _exchange_figures(rows: dict[str, list[dict[str, Any]]], bucket: int) -> dict[str, Any]:
    clients: dict[tuple[Any, Any], list[int]] = {}
    for r in rows.get("clients", []):
        row = clients.setdefault((r["language"], r["client_version"]), [0, 0])
        row[0] += r["client"] is not None
        row[1] += r["n"]
    by_code = sorted(
        (
            {
                "request_code": r["request_code"],
                "request_code_name": r["request_code_name"],
                "requests": r["n"],
                "not_ok": r["not_ok"],
                "unanswered": r["unanswered"],
                "p50_ns": r["p50_ns"],
                "p99_ns": r["p99_ns"],
            }
            for r in rows.get("by_code", [])
        ),
        key=lambda r: (-r["requests"], r["request_code"]),
    )
    top_codes = {r["request_code_name"] for r in by_code[:TOP]} - {None}
    rate = [r for r in rows.get("rate", []) if r["request_code_name"] in top_codes]

    def series(found: list[dict[str, Any]], key: str) -> list[tuple[int, str, int, int]]:
        return sorted((r["b"], r[key], r["p50"], r["p99"]) for r in found if r["answered"])

    return {
        "clients": [
            {"language": lang, "client_version": version, "clients": n, "requests": requests}
            for (lang, version), (n, requests) in sorted(
                clients.items(), key=lambda kv: (-kv[1][1], str(kv[0]))
            )
        ],
        "by_code": by_code,
        "errors": [
            {
                k: r[k]
                for k in (
                    "request_code_name",
                    "response_code",
                    "response_code_name",
                    "remark",
                    "n",
                    "example",
                )
            }
            for r in sorted(rows.get("errors", []), key=lambda r: -r["n"])
        ],
        "rate": {
            "bucket_s": bucket / 1e9,
            "rows": sorted((r["b"], r["request_code_name"], r["n"]) for r in rate),
        },
        "latency_by_code": series(rate, "request_code_name"),
        "latency_by_topic": series(rows.get("topic", []), "topic"),
        "lag": sorted((r["b"], r["series"], r["lag"]) for r in rows.get("lag", [])),
    }


SIZE_BINS = 50

_MSG_COLUMNS = {"event": "STRING", "client": "STRING", "group": "STRING", "body_length": "INT", "size": "INT"}
_MSG_SETS: tuple[tuple[str, str, dict[str, str]], ...] = (
    ("size", "event = 'sent'", {"body_length": "body_length"}),
    ("peers", "true", {"event": "event", "client": "client", "group": "`group`", "size": "body_length"}),
)


def _message_sets(msgs: DataFrame) -> list[DataFrame]:
    """The sent bodies' sizes in :data:`SIZE_BINS` equal bins between the smallest and the largest
    (``sizes``), the 20 clients (and groups) with the most messages sent and delivered (``clients``),
    both from one aggregation; sent → first delivered per topic and group (``delay``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as sf

    msgs = msgs.select("event", "msg_id", "topic", "group", "client", "wall_ns", "body_length")
    agg = (
        _sets(msgs, _MSG_COLUMNS, _MSG_SETS)
        .groupBy("set", "event", "client", "group", "body_length")
        .agg(sf.count("*").alias("messages"), sf.sum("size").alias("bytes"))
    )
    whole = Window.partitionBy("set")
    sizes = agg.where("set = 'size'").select(
        "body_length",
        "messages",
        sf.min("body_length").over(whole).alias("size_lo"),
        sf.max("body_length").over(whole).alias("size_hi"),
    )
    width = sf.greatest((sf.col("size_hi") - sf.col("size_lo")) / SIZE_BINS, sf.lit(1e-9))
    b = sf.least(sf.floor((sf.col("body_length") - sf.col("size_lo")) / width), sf.lit(SIZE_BINS - 1))
    sizes = sizes.groupBy(sf.lit("sizes").alias("set"), "size_lo", "size_hi", b.cast("int").alias("bin")).agg(
        sf.sum("messages").alias("sized")
    )
    tops = (
        agg.where("set = 'peers'")
        .withColumn("rank", sf.row_number().over(Window.partitionBy("event").orderBy(sf.desc("messages"))))
        .where("rank <= 20")
        .select("set", "event", "client", "group", "messages", "bytes")
    )
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
            sf.count("*").alias("delayed"),
            sf.percentile_approx(sf.col("delivered_ns") - sf.col("sent_ns"), 0.5).alias("delay_p50"),
            sf.percentile_approx(sf.col("delivered_ns") - sf.col("sent_ns"), 0.99).alias("delay_p99"),
            sf.sum(sf.col("deliveries") - 1).alias("redeliveries"),
        )
        .withColumn("set", sf.lit("delay"))
    )
    return [sizes, tops, delay]


def _message_figures(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    sizes: dict[str, Any] = {"edges": [], "counts": []}
    if rows.get("sizes"):
        lo, hi = rows["sizes"][0]["size_lo"], rows["sizes"][0]["size_hi"]
        width = max((hi - lo) / SIZE_BINS, 1e-9)
        counts = {r["bin"]: r["sized"] for r in rows["sizes"]}
        sizes = {
            "edges": [lo + i * width for i in range(SIZE_BINS + 1)],
            "counts": [counts.get(i, 0) for i in range(SIZE_BINS)],
        }
    out: dict[str, Any] = {
        "sizes": sizes,
        "delivery_delay": [
            {
                "topic": r["topic"],
                "group": r["group"],
                "messages": r["delayed"],
                "p50_ns": r["delay_p50"],
                "p99_ns": r["delay_p99"],
                "redeliveries": r["redeliveries"],
            }
            for r in sorted(
                rows.get("delay", []),
                key=lambda r: (r["topic"] is not None, r["topic"], r["group"] is not None, r["group"]),
            )
        ],
    }
    for key, event in (("producers", "sent"), ("consumers", "delivered")):
        found = [r for r in rows.get("peers", []) if r["event"] == event]
        out[key] = [
            {"client": r["client"], "group": r["group"], "messages": r["messages"], "bytes": r["bytes"]}
            for r in sorted(found, key=lambda r: -r["messages"])
        ]
    return out


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
