"""``rmqtwin spark ingest``: captures, pcaps and broker stores become Parquet tables.

``OUT/frames``, ``OUT/exchanges`` and ``OUT/messages`` are partitioned by ``capture`` and ``hour``
and written with dynamic partition overwrite, so ingesting the same input again replaces its
partitions and never duplicates rows; ``OUT/skipped`` lists per input what was skipped and why.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rmqtwin.spark import schemas
from rmqtwin.spark.sources import expand_inputs

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["IngestResult", "ingest"]

TABLES = ("frames", "exchanges", "messages")


@dataclass
class IngestResult:
    rows: dict[str, int] = field(default_factory=dict)
    skipped: list[dict[str, object]] = field(default_factory=list)
    seconds: float = 0.0


class IngestError(RuntimeError):
    """An input was damaged and ``strict`` was asked for."""


def _records(spark: SparkSession, inputs: list[tuple[str, str]]) -> DataFrame | None:
    captures = [p for k, p in inputs if k == "capture"]
    pcaps = [p for k, p in inputs if k == "pcap"]
    frames = []
    if captures:
        frames.append(spark.read.format("rmqcap").option("paths", ",".join(captures)).load())
    if pcaps:
        frames.append(spark.read.format("pcap").option("paths", ",".join(pcaps)).load())
    if not frames:
        return None
    out = frames[0]
    for df in frames[1:]:
        out = out.unionByName(df)
    return out


def _write(df: DataFrame, out: Path, table: str) -> None:
    df.write.mode("overwrite").partitionBy("capture", "hour").parquet(str(out / table))


def ingest(
    spark: SparkSession,
    inputs: Sequence[str],
    out: str | Path,
    *,
    raw: bool = False,
    strict: bool = False,
    progress: TextIO | None = sys.stderr,
) -> IngestResult:
    """Read every input and write the three tables under ``out``; see the module docstring."""
    from pyspark.sql import functions as sf

    from rmqtwin.spark.tables import exchanges_of, frames_of, hour_of, messages_of

    started = time.monotonic()
    out = Path(out)
    result = IngestResult()

    def say(msg: str) -> None:
        if progress is not None:
            print(f"[{time.monotonic() - started:7.1f}s] {msg}", file=progress, flush=True)

    found = expand_inputs(list(inputs))
    for kind, path in found:
        if kind == "unknown":
            result.skipped.append(
                {"input": path, "reason": "not a capture, pcap or store", "count": 1, "bytes": -1}
            )
    say(f"{len(found)} inputs: " + ", ".join(f"{k} {p}" for k, p in found))
    records = _records(spark, found)
    if records is not None:
        records = records.persist()
        skips = records.filter(sf.col("type") == 0).select(
            "capture", "segment", "skip_reason", "skipped_bytes"
        )
        for r in skips.collect():
            result.skipped.append(
                {"input": r["capture"], "reason": r["skip_reason"], "count": 1, "bytes": r["skipped_bytes"]}
            )
    stores = [p for k, p in found if k == "store"]
    store_df = None
    if stores:
        store_df = spark.read.format("rocketmq-store").option("paths", ",".join(stores)).load().persist()
        for r in store_df.filter(sf.col("skip_reason").isNotNull()).collect():
            result.skipped.append(
                {
                    "input": f"{r['store']}/commitlog/{r['file']}",
                    "reason": r["skip_reason"],
                    "count": 1,
                    "bytes": r["skipped_bytes"],
                }
            )
    result.skipped = _merge(result.skipped)
    if strict and result.skipped:
        # Before anything is written: a strict ingest of damaged input leaves OUT as it was.
        for s in result.skipped:
            say(f"SKIPPED {s['input']}: {s['reason']} ({s['count']}x, {s['bytes']} bytes)")
        for df in (records, store_df):
            if df is not None:
                df.unpersist()
        raise IngestError(f"{len(result.skipped)} kinds of damage in the inputs (see above); --strict")
    if records is not None:
        ordered = (
            records.filter(sf.col("type") > 0)
            .repartition(spark.sparkContext.defaultParallelism, "capture", "conn_id")
            .sortWithinPartitions("capture", "conn_id", "segment", "pos")
        ).persist()
        say("frames ...")
        _write(ordered.mapInArrow(lambda it: frames_of(it, raw), schemas.ddl(schemas.FRAMES)), out, "frames")
        say("exchanges ...")
        _write(ordered.mapInArrow(exchanges_of, schemas.ddl(schemas.EXCHANGES)), out, "exchanges")
        say("messages ...")
        messages = ordered.mapInArrow(messages_of, schemas.ddl(schemas.MESSAGES))
        _write(messages, out, "messages")
        ordered.unpersist()
        records.unpersist()
    if store_df is not None:
        say("stores ...")
        hour = sf.udf(lambda ms: hour_of(ms * 1_000_000) if ms is not None else None, "string")
        stored = store_df.filter(sf.col("skip_reason").isNull()).select(
            sf.element_at(sf.split(sf.col("store"), "/"), -1).alias("capture"),
            sf.lit(None).cast("bigint").alias("conn_id"),
            sf.lit(None).cast("bigint").alias("seq"),
            (sf.col("store_timestamp") * 1_000_000).alias("wall_ns"),
            sf.lit(None).cast("bigint").alias("mono_ns"),
            sf.lit("stored").alias("event"),
            sf.lit(None).cast("int").alias("request_code"),
            sf.lit(None).cast("string").alias("group"),
            sf.lit(None).cast("string").alias("client"),
            sf.lit(None).cast("string").alias("server"),
            sf.lit(0).alias("index_in_frame"),
            *[
                sf.col(f.name)
                for f in schemas.MESSAGES
                if f.name in schemas.STORE_MESSAGES.names and f.name != "capture"
            ],
            hour(sf.col("store_timestamp")).alias("hour"),
        )
        _write(stored.select(*schemas.MESSAGES.names), out, "messages")
        store_df.unpersist()
    spark.createDataFrame(result.skipped or [], schemas.ddl(schemas.SKIPS)).coalesce(1).write.mode(
        "overwrite"
    ).json(str(out / "skipped"))
    for table in TABLES:
        if (out / table).exists():
            result.rows[table] = spark.read.parquet(str(out / table)).count()
    result.seconds = time.monotonic() - started
    say("rows: " + ", ".join(f"{t} {n}" for t, n in result.rows.items()))
    for s in result.skipped:
        say(f"SKIPPED {s['input']}: {s['reason']} ({s['count']}x, {s['bytes']} bytes)")
    (out / "ingest.json").write_text(
        json.dumps({"inputs": list(inputs), "rows": result.rows, "skipped": result.skipped}, indent=2)
    )
    return result


def _merge(skips: list[dict[str, object]]) -> list[dict[str, object]]:
    """One line per (input, reason)."""
    merged: dict[tuple[str, str], dict[str, object]] = {}
    for s in skips:
        key = (str(s["input"]), str(s["reason"]))
        m = merged.setdefault(key, {"input": key[0], "reason": key[1], "count": 0, "bytes": 0})
        m["count"] = int(m["count"]) + int(s["count"] or 0)  # type: ignore[call-overload]
        m["bytes"] = int(m["bytes"]) + max(int(s["bytes"] or 0), 0)  # type: ignore[call-overload]
    return list(merged.values())
