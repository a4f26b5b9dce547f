"""``rmqtwin spark replay``: the capture's connections replayed by Spark tasks, one Parquet row per request.

The driver plans the capture and checks the target (a target that is down fails here, before any task);
connections are spread over as many partitions as the cluster runs at once (a partition replays all its
connections concurrently, so none waits for another task); the tasks run as one barrier stage and agree
on a common start once all of them have opened their connections. Each task writes its own Parquet file
and returns only counts, so a replay runs exactly once (nothing is recomputed from lineage).
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.command import decode_command
from rmqtwin.codec.errors import CodecError
from rmqtwin.spark.replay.engine import QueueResult, replay_connections
from rmqtwin.spark.replay.plan import CapturePlan, ConnectionPlan, load_plan
from rmqtwin.spark.replay.target import parse_broker_map, prepare_context
from rmqtwin.spark.replay.translate import ReplayContext, request_topic
from rmqtwin.spark.tables import SEND_CODES

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Broadcast

__all__ = [
    "ReplayOptions",
    "ReplaySummary",
    "linked_units",
    "partition_connections",
    "request_schema",
    "run_replay",
]

START_LEAD_S = 2.0
"""How far after the last task reached the barrier the common start lies: Spark's barrier answers a task
about 1 s after the last one arrived (its executor checks the coordinator's reply once a second; measured
1,002-1,025 ms on local[2]), so every task learns the start before it is due."""


@dataclass(slots=True)
class ReplayOptions:
    input: str
    target: str
    out: str
    speed: float | None = 1.0
    scale: int = 1
    suffix_topics: bool = False
    duration: float | None = None
    only: tuple[str, ...] = ()
    topic_prefix: str = ""
    renames: dict[str, str] = field(default_factory=dict)
    broker_map: list[str] = field(default_factory=list)
    master: str | None = None
    new_ids: bool = False
    access_key: str | None = None
    secret_key: str | None = None
    answer_timeout: float = 30.0
    run_id: str = ""


@dataclass(slots=True)
class ReplaySummary:
    requests: int
    verdicts: dict[str, int]
    queues: list[dict[str, object]]
    broker_requests: dict[str, int]
    raw_skipped: int
    undecoded_skipped: int
    connections: int
    failed_connections: dict[str, str]
    """Connection (``id`` or ``id#copy``) → why it ended early."""
    wall_s: float
    out: str

    def verdict_line(self) -> str:
        total = self.requests
        differs = self.verdicts.get("differs", 0)
        lost = sum(self.verdicts.get(v, 0) for v in ("failed", "no-answer", "not-replayed"))
        bad_queues = sum(1 for q in self.queues if not q["same_bodies_in_order"])
        if not differs and not lost and not bad_queues:
            return f"REPLAY SAME: all {total} requests answered as recorded (after normalisers)"
        return (
            f"REPLAY DIVERGED: {differs} of {total} requests answered differently, {lost} not answered or "
            f"not replayed, {bad_queues} queues pulled other bodies or order"
        )


@dataclass(slots=True)
class _PartitionResult:
    """What a task returns to the driver (its rows went to Parquet)."""

    verdicts: dict[str, int]
    queues: list[QueueResult]
    broker_requests: dict[str, int]
    failed: dict[str, str]


_LOOSE_CODES = SEND_CODES | {RequestCode.GET_ROUTEINFO_BY_TOPIC}
"""Requests that link a connection to no other through their topic: appends wait for no other
connection's appends (:class:`~rmqtwin.spark.replay.engine.RecordedOrder`), route queries change nothing."""


def _topics(conn: ConnectionPlan) -> tuple[set[str], set[str]]:
    """(topics the connection only sends to or asks the route of, topics it uses otherwise). A
    connection that ends transactions uses its topics otherwise: the target's check-back may come on
    another connection of its group, whose task must hold the recorded answer."""
    loose: set[str] = set()
    tight: set[str] = set()
    transactional = any(step.code == RequestCode.END_TRANSACTION for step in conn.steps)
    for step in conn.steps:
        try:
            topic = request_topic(decode_command(step.frame[4:]))
        except CodecError:
            continue
        if topic:
            (loose if step.code in _LOOSE_CODES and not transactional else tight).add(topic)
    return loose - tight, tight


def linked_units(connections: list[ConnectionPlan]) -> list[list[ConnectionPlan]]:
    """Connections of one ``--scale`` copy linked through a topic stay together: all that name a topic
    which one of them uses other than by sending or asking its route (pulls, offsets, admin requests).

    The recorded order between connections (a consumer pulling what a producer's acknowledged sends
    stored) is kept by one task's :class:`~rmqtwin.spark.replay.engine.RecordedOrder`; tasks cannot see
    each other's answers, so linked connections must not be split across tasks. Producers that only
    send to a topic nobody reads in the capture are not linked: they may go to different tasks."""
    parent = list(range(len(connections)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    naming: dict[tuple[int, str], list[int]] = {}
    used: set[tuple[int, str]] = set()
    for i, conn in enumerate(connections):
        loose, tight = _topics(conn)
        for topic in loose | tight:
            naming.setdefault((conn.copy, topic), []).append(i)
        used.update((conn.copy, topic) for topic in tight)
    for key in used:
        first, *rest = naming[key]
        for j in rest:
            parent[root(j)] = root(first)
    units: dict[int, list[ConnectionPlan]] = {}
    for i, conn in enumerate(connections):
        units.setdefault(root(i), []).append(conn)
    return list(units.values())


def partition_connections(connections: list[ConnectionPlan], slots: int) -> list[list[ConnectionPlan]]:
    """At most ``slots`` groups (all run at once) of whole :func:`linked_units`, balanced by request
    count, largest first."""
    units = linked_units(connections)
    groups: list[list[ConnectionPlan]] = [[] for _ in range(max(1, min(slots, len(units))))]
    loads = [0] * len(groups)
    for unit in sorted(units, key=lambda u: -sum(len(c.steps) for c in u)):
        i = loads.index(min(loads))
        groups[i].extend(unit)
        loads[i] += sum(len(c.steps) for c in unit)
    return [g for g in groups if g]


def _scaled(plan: CapturePlan, scale: int) -> list[ConnectionPlan]:
    return [dataclasses.replace(c, copy=k) for k in range(scale) for c in plan.connections]


def _agreed_start() -> int:
    """The wall-clock ns at which every task of the replay begins its schedule: all tasks run at once (a
    barrier stage), each has opened its connections, and they take the latest clock among them plus
    :data:`START_LEAD_S`. (A start fixed by the driver before submission came 2.4 s too late for a task
    whose Python worker was still starting on a loaded machine.)"""
    from pyspark import BarrierTaskContext

    clocks = BarrierTaskContext.get().allGather(str(time.time_ns()))
    return max(int(c) for c in clocks) + int(START_LEAD_S * 1e9)


_Assigned = tuple[int, int, str | None]
"""A connection a task replays: (recorded connection id, ``--scale`` copy, broker name it plays)."""


def _replay_partition(
    shared: Broadcast[ReplayContext], source: str, only: tuple[str, ...], out: str
) -> Callable[[int, Iterable[list[_Assigned]]], Iterable[_PartitionResult]]:
    """Each task reads its own connections from ``source`` (a path every executor sees, as for ingest):
    plans shipped inside the tasks ran a 1 GiB driver out of heap on a 100k-send capture."""

    def run(index: int, groups: Iterable[list[_Assigned]]) -> Iterator[_PartitionResult]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        ctx = shared.value
        for assigned in groups:
            plan = load_plan(source, {conn_id for conn_id, _, _ in assigned})
            recorded = {c.conn_id: c for c in plan.connections}
            group = [
                dataclasses.replace(recorded[conn_id], copy=copy, broker_name=name)
                for conn_id, copy, name in assigned
            ]
            results, queues, seen = replay_connections(group, ctx, start_at=_agreed_start, only=only)
            table = pa.Table.from_pylist([dataclasses.asdict(r) for r in results], schema=request_schema())
            pq.write_table(table, str(Path(out) / "requests" / f"part-{index:05d}.parquet"))
            failed: dict[str, str] = {}
            for r in results:
                if r.verdict in ("failed", "not-replayed") and r.detail:
                    failed.setdefault(f"{r.conn_id}" + (f"#{r.copy}" if r.copy else ""), r.detail)
            yield _PartitionResult(dict(Counter(r.verdict for r in results)), queues, seen, failed)

    return run


def request_schema() -> pa.Schema:
    """The Parquet schema of the per-request rows: one column per :class:`RequestResult` field."""
    import pyarrow as pa

    integer, real, text = pa.int64(), pa.float64(), pa.string()
    columns = {
        "conn_id": integer,
        "copy": integer,
        "seq": integer,
        "code": integer,
        "code_name": text,
        "topic": text,
        "queue_id": integer,
        "group": text,
        "recorded_code": integer,
        "recorded_remark": text,
        "recorded_latency_ms": real,
        "replayed_code": integer,
        "replayed_remark": text,
        "replayed_latency_ms": real,
        "scheduled_ms": real,
        "actual_ms": real,
        "held_ms": real,
        "written_ms": real,
        "cpu_ms": real,
        "runq_ms": real,
        "verdict": text,
        "detail": text,
        "normalisers": text,
    }
    return pa.schema(list(columns.items()))


def run_replay(opts: ReplayOptions, progress: Callable[[str], None] = print) -> ReplaySummary:
    """Plan, check the target, replay on Spark, write ``OUT/requests/*.parquet``, ``summary.json`` and
    ``report.html``. Raises :class:`~rmqtwin.spark.replay.target.TargetError` before any task."""
    plan = load_plan(opts.input)
    run_id = opts.run_id or f"replay{int(time.time()) % 100000}"
    ctx = ReplayContext(
        namesrv=opts.target,
        brokers={},
        run_id=run_id,
        speed=opts.speed,
        new_ids=opts.new_ids,
        access_key=opts.access_key,
        secret_key=opts.secret_key,
        renames=dict(opts.renames),
        topic_prefix=opts.topic_prefix,
        suffix_topics=opts.suffix_topics,
        scale=max(1, opts.scale),
        answer_timeout_s=opts.answer_timeout,
        duration_s=opts.duration,
    )
    prepare_context(plan, ctx, parse_broker_map(opts.broker_map))
    connections = _scaled(plan, max(1, opts.scale))
    progress(
        f"replay {opts.input}: {len(connections)} connections, {sum(len(c.steps) for c in connections)} "
        f"requests, {plan.raw_skipped} RAW records skipped, target {opts.target}"
    )
    from rmqtwin.spark.session import spark_session

    spark = spark_session(opts.master, app_name="rmqtwin replay")
    sc = spark.sparkContext
    groups = partition_connections(connections, sc.defaultParallelism)
    out = Path(opts.out).resolve()  # tasks on a cluster's workers run elsewhere than this directory
    (out / "requests").mkdir(parents=True, exist_ok=True)
    for old in (out / "requests").glob("part-*.parquet"):
        old.unlink()
    started = time.monotonic()
    shared = sc.broadcast(ctx)
    run = _replay_partition(shared, str(Path(opts.input).resolve()), opts.only, str(out))
    scheduled_s = None if opts.speed is None else plan.duration_ns / 1e9 / opts.speed
    if opts.duration is not None and scheduled_s is not None:
        scheduled_s = min(scheduled_s, opts.duration)
    stop = threading.Event()
    watcher = threading.Thread(target=_progress, args=(sc, started, scheduled_s, stop, progress), daemon=True)
    watcher.start()
    try:
        assigned = [[(c.conn_id, c.copy, c.broker_name) for c in group] for group in groups]
        parts = sc.parallelize(assigned, len(assigned)).barrier().mapPartitionsWithIndex(run).collect()
    finally:
        stop.set()
        watcher.join()
        shared.unpersist()
    verdicts: Counter[str] = Counter()
    seen: Counter[str] = Counter()
    queues: list[dict[str, object]] = []
    failed: dict[str, str] = {}
    for part in parts:
        verdicts.update(part.verdicts)
        seen.update(part.broker_requests)
        queues += [dataclasses.asdict(q) for q in part.queues]
        failed.update(part.failed)
    summary = ReplaySummary(
        requests=sum(verdicts.values()),
        verdicts=dict(verdicts),
        queues=queues,
        broker_requests=dict(seen),
        raw_skipped=plan.raw_skipped,
        undecoded_skipped=plan.undecoded_skipped,
        connections=len(connections),
        failed_connections=failed,
        wall_s=time.monotonic() - started,
        out=str(out),
    )
    (out / "summary.json").write_text(json.dumps(dataclasses.asdict(summary), indent=2))
    from rmqtwin.spark.replay.report import write_report

    write_report(summary, out / "report.html", speed=opts.speed)
    progress(summary.verdict_line())
    return summary


def _progress(
    sc: object, started: float, scheduled_s: float | None, stop: threading.Event, say: Callable[[str], None]
) -> None:
    """Every few seconds while the job runs: elapsed against the schedule, tasks finished."""
    tracker = sc.statusTracker()  # type: ignore[attr-defined]
    while not stop.wait(5.0):
        elapsed = time.monotonic() - started
        done = total = 0
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        of = f" of {scheduled_s:.1f} s scheduled" if scheduled_s is not None else ""
        say(f"replay: {max(0.0, elapsed):.1f} s{of}, tasks {done}/{total} finished")
