"""``rmqtwin spark ingest``: captures, pcaps and broker stores become Parquet tables.

``OUT/frames``, ``OUT/exchanges`` and ``OUT/messages`` are partitioned by ``capture`` and ``hour``;
ingesting the same input again replaces its partitions and never duplicates rows; ``OUT/skipped``
lists per input what was skipped and why.

One Spark stage does the work: each task reads its share of the inputs — a capture's records of some
of its connections (the driver spreads connections over tasks by their bytes, found by the same cheap
walk over record length words that plans the ``rmqcap`` source), a pcap, or a commitlog file —
decodes every table in one walk (``tables.decode_tables``) and writes its Parquet files with pyarrow
into ``OUT/_staging``; the driver then moves each written ``table/capture=…/hour=…`` partition in
place of the old one (what Spark's dynamic partition overwrite does). Nothing is shuffled, and no
record, body or decoded row passes through the JVM: a task returns only counts, notes and file names.
"""

from __future__ import annotations

import contextlib
import gc
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rmqtwin.spark.sources import CommitlogFile, PcapFile, SegmentPart, expand_inputs

if TYPE_CHECKING:
    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyspark.sql import SparkSession

__all__ = ["IngestError", "IngestResult", "IngestTask", "ingest", "run_task"]

TABLES = ("frames", "exchanges", "messages")

ROW_GROUP_BYTES = 16 * 1024 * 1024
"""Parquet row groups of the tables: a writer buffers up to a row group per partition it writes."""


@dataclass
class IngestResult:
    rows: dict[str, int] = field(default_factory=dict)
    skipped: list[dict[str, object]] = field(default_factory=list)
    seconds: float = 0.0


class IngestError(RuntimeError):
    """An input was damaged and ``strict`` was asked for."""


@dataclass(frozen=True)
class IngestTask:
    """What one Spark task reads: some connections of a capture (``parts`` are its segments' record
    ranges), a pcap, or a store's commitlog file."""

    index: int
    capture: str
    """The ``capture`` partition value: the capture's, pcap's or store directory's name."""
    parts: tuple[SegmentPart, ...] = ()
    connections: frozenset[int] = frozenset()
    pcap: PcapFile | None = None
    commitlog: CommitlogFile | None = None


@dataclass
class TaskResult:
    rows: dict[str, int] = field(default_factory=dict)
    skipped: list[dict[str, object]] = field(default_factory=list)
    records: int = 0


# ------------------------------------------------------------------------------------------ planning


def plan_tasks(
    inputs: list[tuple[str, str]], parallelism: int
) -> tuple[list[IngestTask], list[dict[str, object]]]:
    """The tasks of an ingest and the damage the planning walk already found (skip notes).

    A capture's connections are spread over up to ``parallelism`` tasks, largest first onto the task
    with the fewest bytes so far; a connection is never cut (its records are walked in order by one task,
    which keeps its sequence numbers and pending requests)."""
    from rmqtwin.spark.sources import plan_capture
    from rmqtwin.store_mirror.dump import open_read_only

    tasks: list[IngestTask] = []
    skipped: list[dict[str, object]] = []
    for kind, path in inputs:
        name = Path(path).name
        if kind == "capture":
            plan = plan_capture(path)
            for _file, reason, n_bytes in plan.skips:
                skipped.append({"input": name, "reason": reason, "count": 1, "bytes": n_bytes})
            bins: list[tuple[int, list[int]]] = [
                (0, []) for _ in range(min(parallelism, len(plan.connections)))
            ]
            for conn, size in sorted(plan.connections.items(), key=lambda kv: (-kv[1], kv[0])):
                i = min(range(len(bins)), key=lambda b: (bins[b][0], b))
                bins[i] = (bins[i][0] + size, [*bins[i][1], conn])
            parts = tuple(p for p in plan.parts if p.stop > p.start)
            for _, conns in bins:
                tasks.append(IngestTask(len(tasks), name, parts, frozenset(conns)))
        elif kind == "pcap":
            tasks.append(IngestTask(len(tasks), name, pcap=PcapFile(path, ())))
        elif kind == "store":
            store = open_read_only(path)
            try:
                for mf in store.commit_log.mapped_file_queue.mapped_files:
                    tasks.append(
                        IngestTask(len(tasks), name, commitlog=CommitlogFile(path, mf.file_from_offset))
                    )
            finally:
                store.shutdown()
    return tasks, skipped


# ------------------------------------------------------------------------------------------- a task


def run_task(task: IngestTask, staging: str, raw: bool) -> TaskResult:
    """Decode and write one task's share (on an executor); see the module docstring."""
    from rmqtwin.spark.tables import decode_tables

    result = TaskResult()
    sink = _Sink(Path(staging), task.index)
    progress = Path(staging) / "_progress" / f"task-{task.index:05d}"
    # The walk allocates millions of short-lived rows, headers and dicts and makes no reference cycles:
    # the cyclic collector only rescanned the live batches, about a sixth of the task's CPU.
    collecting = gc.isenabled()
    gc.disable()
    try:
        if task.commitlog is not None:
            for table, batch in _stored(task, result):
                sink.add(table, batch)
        else:
            for table, batch in decode_tables(_records(task, result, progress), raw):
                if table == "skipped":
                    result.skipped += batch.to_pylist()
                else:
                    sink.add(table, batch)
    finally:
        if collecting:
            gc.enable()
        result.rows = sink.close()
    return result


def _records(task: IngestTask, result: TaskResult, progress: Path) -> Iterator[tuple[object, ...]]:
    from itertools import chain

    from rmqtwin.spark.sources import pcap_rows, segment_rows

    rows = (
        pcap_rows(task.pcap)
        if task.pcap is not None
        else chain.from_iterable(segment_rows(p, task.connections) for p in task.parts)
    )
    progress.parent.mkdir(parents=True, exist_ok=True)
    n = 0
    for row in rows:
        yield row
        n += 1
        if not n & 0xFFFF:
            progress.write_text(str(n))
    result.records = n
    progress.write_text(str(n))


def _stored(task: IngestTask, result: TaskResult) -> Iterator[tuple[str, pa.RecordBatch]]:
    """``stored`` rows of ``messages`` from a commitlog file, and its torn tail as a skip note."""
    from rmqtwin.spark import schemas
    from rmqtwin.spark.sources import TORN_TAIL, TornTail, commitlog_messages, message_values
    from rmqtwin.spark.tables import hour_of

    part = task.commitlog
    assert part is not None
    rows: list[tuple[object, ...]] = []
    for item in commitlog_messages(part):
        if isinstance(item, TornTail):
            result.skipped.append(
                {
                    "input": f"{part.store}/commitlog/{item.file}",
                    "reason": TORN_TAIL,
                    "count": 1,
                    "bytes": item.n_bytes,
                }
            )
            continue
        _, _, msg = item
        wall = msg.store_timestamp * 1_000_000
        rows.append(
            (
                task.capture,
                None,
                None,
                wall,
                None,
                "stored",
                None,
                None,
                None,
                None,
                0,
                *message_values(msg),
                hour_of(wall),
            )
        )
        result.records += 1
        if len(rows) >= 2048:
            yield "messages", schemas.record_batch(rows, schemas.MESSAGES)
            rows = []
    if rows:
        yield "messages", schemas.record_batch(rows, schemas.MESSAGES)


def partition_path(table: str, capture: str, hour: str) -> str:
    """``table/capture=…/hour=…`` with the values escaped as Spark escapes partition paths."""
    return f"{table}/capture={_escape(capture)}/hour={_escape(hour)}"


_UNSAFE = set("\"#%'*/:=?\\\x7f{[]^") | {chr(c) for c in range(0x20)}


def _escape(value: str) -> str:
    """``ExternalCatalogUtils.escapePathName``."""
    return "".join(f"%{ord(c):02X}" if c in _UNSAFE else c for c in value)


class _Sink:
    """Parquet files of one task, one per (table, capture, hour), written in row groups of about
    :data:`ROW_GROUP_BYTES`; the partition columns are the directories, as Spark lays them out."""

    def __init__(self, staging: Path, task: int) -> None:
        self.staging = staging
        self.task = task
        self.open: dict[tuple[str, str, str], tuple[pq.ParquetWriter | None, list[pa.RecordBatch], int]] = {}
        self.rows: dict[str, int] = {}

    def add(self, table: str, batch: pa.RecordBatch) -> None:
        import pyarrow.compute as pc

        self.rows[table] = self.rows.get(table, 0) + batch.num_rows
        captures, hours = batch.column("capture"), batch.column("hour")
        data = batch.drop_columns(["capture", "hour"])
        keys = [(c, h) for c in pc.unique(captures).to_pylist() for h in pc.unique(hours).to_pylist()]
        if len(keys) == 1:  # the usual case: a task reads one capture, and an hour is long
            self._buffer((table, *keys[0]), data)
            return
        for capture, hour in keys:
            part = data.filter(pc.and_(pc.equal(captures, capture), pc.equal(hours, hour)))
            if part.num_rows:
                self._buffer((table, capture, hour), part)

    def _buffer(self, key: tuple[str, str, str], batch: pa.RecordBatch) -> None:
        writer, pending, size = self.open.get(key, (None, [], 0))
        pending.append(batch)
        size += batch.nbytes
        if size >= ROW_GROUP_BYTES:
            writer = self._write(key, writer, pending)
            pending, size = [], 0
        self.open[key] = (writer, pending, size)

    def _write(
        self, key: tuple[str, str, str], writer: pq.ParquetWriter | None, batches: list[pa.RecordBatch]
    ) -> pq.ParquetWriter:
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_batches(batches)
        if writer is None:
            path = self.staging / partition_path(*key) / f"part-{self.task:05d}.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            writer = pq.ParquetWriter(path, table.schema, compression="snappy")
        writer.write_table(table, row_group_size=table.num_rows)
        return writer

    def close(self) -> dict[str, int]:
        for key, (writer, pending, _) in self.open.items():
            last = self._write(key, writer, pending) if pending else writer
            if last is not None:
                last.close()
        self.open.clear()
        return self.rows


# ------------------------------------------------------------------------------------------- driver


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
    out = Path(out).absolute()
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
    # executors open the inputs by path: absolute, as every executor sees them (docs/spark.md)
    readable = [(k, str(Path(p).absolute())) for k, p in found if k != "unknown"]
    tasks, planned = plan_tasks(readable, spark.sparkContext.defaultParallelism)
    result.skipped += planned
    if strict and result.skipped:
        _fail(result.skipped, say)  # before anything is written: OUT stays as it was
    created = not out.exists()
    staging = out / f"_staging-{int(time.time() * 1000)}"
    if tasks:
        say(f"decoding and writing: {len(tasks)} tasks into {staging}")
        results = _run(spark, tasks, staging, raw, say)
        for r in results:
            result.skipped += r.skipped
        if strict and result.skipped:
            shutil.rmtree(out if created else staging, ignore_errors=True)
            _fail(result.skipped, say)
        _commit(staging, out)
        shutil.rmtree(staging, ignore_errors=True)
    result.skipped = _merge(result.skipped)
    out.mkdir(parents=True, exist_ok=True)
    _write_skipped(out / "skipped", result.skipped)
    result.rows = _table_rows(out)
    result.seconds = time.monotonic() - started
    say("rows: " + ", ".join(f"{t} {n}" for t, n in result.rows.items()))
    for s in result.skipped:
        say(f"SKIPPED {s['input']}: {s['reason']} ({s['count']}x, {s['bytes']} bytes)")
    (out / "ingest.json").write_text(
        json.dumps({"inputs": list(inputs), "rows": result.rows, "skipped": result.skipped}, indent=2)
    )
    return result


def _run(
    spark: SparkSession, tasks: list[IngestTask], staging: Path, raw: bool, say: Callable[[str], None]
) -> list[TaskResult]:
    """The tasks as one Spark stage, printing progress (records decoded, tasks done) every 5 s."""
    where = str(staging)
    done = threading.Event()

    def report() -> None:
        tracker = spark.sparkContext.statusTracker()
        while not done.wait(5.0):
            records = 0
            for f in (staging / "_progress").glob("task-*"):
                with contextlib.suppress(OSError, ValueError):
                    records += int(f.read_text() or 0)
            finished = sum(
                info.numCompletedTasks
                for stage in tracker.getActiveStageIds()
                if (info := tracker.getStageInfo(stage)) is not None
            )
            say(f"  {records:,} records decoded, {finished}/{len(tasks)} tasks done")

    thread = threading.Thread(target=report, name="ingest-progress", daemon=True)
    thread.start()
    try:
        rdd = spark.sparkContext.parallelize(tasks, len(tasks))
        return rdd.map(lambda task: run_task(task, where, raw)).collect()
    finally:
        done.set()
        thread.join()


def _commit(staging: Path, out: Path) -> None:
    """Each partition the tasks wrote replaces the one of the same table, capture and hour."""
    for table in TABLES:
        for hour_dir in sorted((staging / table).glob("capture=*/hour=*")):
            target = out / hour_dir.relative_to(staging)
            if target.exists():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            hour_dir.rename(target)


def _table_rows(out: Path) -> dict[str, int]:
    """Rows of each table (all its captures), from the Parquet footers."""
    import pyarrow.parquet as pq

    rows = {}
    for table in TABLES:
        if (out / table).exists():
            rows[table] = sum(pq.read_metadata(f).num_rows for f in (out / table).rglob("*.parquet"))
    return rows


def _write_skipped(where: Path, skipped: list[dict[str, object]]) -> None:
    """``OUT/skipped`` as JSON lines (what ``spark.read.json`` reads), replacing the last ingest's."""
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir(parents=True)
    (where / "part-00000.json").write_text("".join(json.dumps(s) + "\n" for s in skipped))


def _fail(skipped: list[dict[str, object]], say: Callable[[str], None]) -> None:
    merged = _merge(skipped)
    for s in merged:
        say(f"SKIPPED {s['input']}: {s['reason']} ({s['count']}x, {s['bytes']} bytes)")
    raise IngestError(f"{len(merged)} kinds of damage in the inputs (see above); --strict")


def _merge(skips: list[dict[str, object]]) -> list[dict[str, object]]:
    """One line per (input, reason)."""
    merged: dict[tuple[str, str], dict[str, object]] = {}
    for s in skips:
        key = (str(s["input"]), str(s["reason"]))
        m = merged.setdefault(key, {"input": key[0], "reason": key[1], "count": 0, "bytes": 0})
        m["count"] = int(m["count"]) + int(s["count"] or 0)  # type: ignore[call-overload]
        m["bytes"] = int(m["bytes"]) + max(int(s["bytes"] or 0), 0)  # type: ignore[call-overload]
    return list(merged.values())
