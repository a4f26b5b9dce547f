"""``rmqtwin spark ingest``: captures, pcaps and broker stores become Parquet tables.

``OUT/frames``, ``OUT/exchanges`` and ``OUT/messages`` are partitioned by ``capture`` and ``hour``
and written with dynamic partition overwrite, so ingesting the same input again replaces its
partitions and never duplicates rows; ``OUT/skipped`` lists per input what was skipped and why.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rmqtwin.spark import schemas
from rmqtwin.spark.sources import DEFAULT_SPLIT_BYTES, expand_inputs

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


def _decoded(spark: SparkSession, inputs: list[tuple[str, str]], raw: bool) -> DataFrame | None:
    """The captures' and pcaps' records, spread by connection and sorted into capture order, through
    ``tables_of``: every table and skip note in one pass (``schemas.DECODED``)."""
    from rmqtwin.spark.tables import tables_of

    records = _records(spark, inputs)
    if records is None:
        return None
    return (
        records.repartition(_partitions(spark, inputs), "capture", "conn_id")
        .sortWithinPartitions("capture", "conn_id", "segment", "pos")
        .mapInArrow(lambda it: tables_of(it, raw), schemas.ddl(schemas.DECODED))
    )


def _stored(spark: SparkSession, inputs: list[tuple[str, str]]) -> DataFrame | None:
    """The stores' messages (``stored`` rows of ``messages``) and skip notes, as ``schemas.DECODED``."""
    from pyspark.sql import functions as sf

    from rmqtwin.spark.tables import hour_of

    stores = [p for k, p in inputs if k == "store"]
    if not stores:
        return None
    df = spark.read.format("rocketmq-store").option("paths", ",".join(stores)).load()
    hour = sf.udf(lambda ms: hour_of(ms * 1_000_000) if ms is not None else None, "string")
    message = sf.struct(
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
    skipped = sf.struct(
        sf.concat_ws("/", "store", sf.lit("commitlog"), "file").alias("input"),
        sf.col("skip_reason").alias("reason"),
        sf.lit(1).cast("bigint").alias("count"),
        sf.col("skipped_bytes").alias("bytes"),
    )
    damaged = sf.col("skip_reason").isNotNull()
    return df.select(
        *[
            (
                sf.when(~damaged, message)
                if f.name == "messages"
                else sf.when(damaged, skipped)
                if f.name == "skipped"
                else sf.lit(None)
            )
            .cast(f"struct<{schemas.ddl(f.type)}>")
            .alias(f.name)
            for f in schemas.DECODED
        ]
    )


def _partitions(spark: SparkSession, inputs: list[tuple[str, str]]) -> int:
    """How many partitions the records are spread over by connection: as many as run at once, and one
    per ``DEFAULT_SPLIT_BYTES`` of input beyond, so a partition holds about a split's worth of records
    (a connection is never cut: its records are walked in order by one task)."""
    from rmqtwin.proxy.capture import segment_paths

    size = 0
    for kind, path in inputs:
        if kind == "capture":
            size += sum(p.stat().st_size for p in segment_paths(path) or [Path(path)])
        elif kind == "pcap":
            size += Path(path).stat().st_size
    return max(spark.sparkContext.defaultParallelism, -(-size // DEFAULT_SPLIT_BYTES))


ROW_GROUP_BYTES = 16 * 1024 * 1024
"""Parquet row groups of the tables and of ``_decoded``: a reader holds a row group's column chunk in
the heap and a writer buffers a whole row group, two tasks at once on a 1 GiB driver (default 128 MiB)."""


def _write(df: DataFrame, out: Path, table: str) -> None:
    df.write.mode("overwrite").option("parquet.block.size", ROW_GROUP_BYTES).partitionBy(
        "capture", "hour"
    ).parquet(str(out / table))


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
    records, stored = _decoded(spark, found, raw), _stored(spark, found)
    parts = [df for df in (records, stored) if df is not None]
    staging = out / "_decoded"
    created = not out.exists()
    if parts:
        decoded = parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])
        # One pass over the inputs, kept on disk: each table's write then reads only its own column
        # (a cache of rows carrying message bodies would be built in the heap, 10,000 rows at a time).
        say(f"reading and decoding into {staging} ...")
        decoded.write.mode("overwrite").option("parquet.block.size", ROW_GROUP_BYTES).parquet(str(staging))
        decoded = spark.read.parquet(str(staging))
        for r in decoded.where("skipped IS NOT NULL").select("skipped.*").collect():
            result.skipped.append(r.asDict())
    result.skipped = _merge(result.skipped)
    if strict and result.skipped:
        # Before anything is written: a strict ingest of damaged input leaves OUT as it was.
        shutil.rmtree(out if created else staging, ignore_errors=True)
        for s in result.skipped:
            say(f"SKIPPED {s['input']}: {s['reason']} ({s['count']}x, {s['bytes']} bytes)")
        raise IngestError(f"{len(result.skipped)} kinds of damage in the inputs (see above); --strict")
    if parts:
        for table in TABLES if records is not None else ("messages",):
            say(f"{table} ...")
            _write(decoded.where(f"{table} IS NOT NULL").select(f"{table}.*"), out, table)
        shutil.rmtree(staging, ignore_errors=True)
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
