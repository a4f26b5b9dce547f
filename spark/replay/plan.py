"""A capture as replay plans: one schedule per recorded client connection, with the answers recorded.

Read through :mod:`rmqtwin.proxy.capture` (the one implementation of the format). Requests the client
sent become :class:`Step`s at their offset from the capture's first record; requests the broker sent the
client (transaction checks, running-info queries) keep the client's recorded answers so the replay can
answer them the same way. Route answers tell which broker name each recorded broker address played.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import ONEWAY_FLAG, RESPONSE_FLAG, RemotingCommand, decode_command
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.message import MessageConst, string_to_properties
from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    FLAG_DECODED,
    FLAG_RAW,
    REC_FRAME,
    REC_OPEN,
    CaptureFormatError,
    Endpoint,
    Record,
    read_records,
)
from rmqtwin.spark.tables import SEND_CODES

__all__ = [
    "Answer",
    "CapturePlan",
    "ConnectionPlan",
    "QueueKey",
    "Step",
    "answer_queue",
    "load_plan",
    "plan_records",
]

NAMESRV_CODES = frozenset(
    {
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.GET_BROKER_CLUSTER_INFO,
        RequestCode.GET_KV_CONFIG,
        RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER,
        RequestCode.REGISTER_BROKER,
    }
)
PULL_CODES = frozenset({RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE})

QueueKey = tuple[str, str, int]
"""(broker name, topic, queue id)."""

TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"


def answer_queue(request: RemotingCommand, topic: str, queue: int) -> tuple[str, int]:
    """The queue whose offsets the answer to ``request`` (naming ``topic``/``queue``) reports: a
    transaction's half message is stored in the half topic's only queue, whatever queue it names."""
    if request.code in SEND_CODES:
        props = request.ext("i") if request.ext("i") is not None else request.ext("properties")
        if props is None or MessageConst.PROPERTY_TRANSACTION_PREPARED not in props:
            return topic, queue  # (the common case without parsing the properties)
        if string_to_properties(props).get(MessageConst.PROPERTY_TRANSACTION_PREPARED) == "true":
            return TRANS_HALF_TOPIC, 0
    return topic, queue


@dataclass(frozen=True, slots=True)
class Answer:
    """A recorded response: code, remark, latency at the proxy and the whole frame."""

    code: int
    remark: str | None
    latency_ns: int
    frame: bytes


@dataclass(slots=True)
class Step:
    """One request the client sent, at ``offset_ns`` after the capture's first record."""

    seq: int
    offset_ns: int
    code: int
    oneway: bool
    frame: bytes
    answer: Answer | None = None
    check_back: str | None = None
    """For an END_TRANSACTION answering the broker's CHECK_TRANSACTION_STATE: the message's UNIQ_KEY (the
    replay sends it when the target checks the replayed half message, not at its recorded time)."""


@dataclass(slots=True)
class ConnectionPlan:
    conn_id: int
    kind: str
    """``namesrv`` or ``broker``."""
    server: str
    """The recorded upstream, ``host:port``."""
    broker_name: str | None = None
    steps: list[Step] = field(default_factory=list)
    client_answers: dict[int, list[bytes]] = field(default_factory=dict)
    """Broker-initiated request code → the client's recorded response frames, in order."""
    copy: int = 0
    """Which ``--scale`` copy this is (0 for the recorded connection itself)."""


@dataclass(slots=True)
class CapturePlan:
    connections: list[ConnectionPlan]
    broker_names: dict[str, str]
    """Recorded broker address → broker name, from the recorded route and cluster answers."""
    recorded_bases: dict[QueueKey, int]
    """The first recorded offset per queue (sends' answers and pulls): where translation starts."""
    client_ids: list[str]
    duration_ns: int
    cluster_names: list[str] = field(default_factory=list)
    """The recorded cluster's names, from the recorded route and cluster answers."""
    shared_queues: set[QueueKey] = field(default_factory=set)
    """Queues more than one recorded connection sent to: their sends' offsets interleave as the target
    receives them."""
    raw_skipped: int = 0
    undecoded_skipped: int = 0

    def unnamed_brokers(self) -> dict[str, list[int]]:
        """Recorded broker addresses no route answer names → the connections that used them."""
        missing: dict[str, list[int]] = defaultdict(list)
        for conn in self.connections:
            if conn.kind == "broker" and conn.broker_name is None:
                missing[conn.server].append(conn.conn_id)
        return dict(missing)


def _route_brokers(body: bytes, clusters: dict[str, None] | None = None) -> dict[str, str]:
    """Broker address → name in a route or cluster-info answer body (fastjson, int keys allowed); the
    cluster names it shows go to ``clusters``."""
    try:
        value = fastjson.loads(body)
    except (ValueError, CodecError):
        return {}
    datas: list[object] = []
    if isinstance(value, dict):
        if isinstance(value.get("brokerDatas"), list):
            datas = value["brokerDatas"]
        elif isinstance(value.get("brokerAddrTable"), dict):
            datas = list(value["brokerAddrTable"].values())
    names: dict[str, str] = {}
    for data in datas:
        if not isinstance(data, dict):
            continue
        name = data.get("brokerName")
        addrs = data.get("brokerAddrs")
        if clusters is not None and isinstance(data.get("cluster"), str):
            clusters[data["cluster"]] = None
        if isinstance(name, str) and isinstance(addrs, dict):
            for addr in addrs.values():
                if isinstance(addr, str):
                    names[addr] = name
                    host, _, port = addr.rpartition(":")
                    if port.isdigit():  # the VIP channel (port - 2) plays the same broker
                        names.setdefault(f"{host}:{int(port) - 2}", name)
    return names


def _check_back(frame: bytes) -> str | None:
    """The message id an END_TRANSACTION names when it answers a check (``fromTransactionCheck``)."""
    try:
        cmd = decode_command(frame[4:])
    except CodecError:
        return None
    if cmd.ext("fromTransactionCheck") != "true":
        return None
    return cmd.ext("msgId")


def _client_ids(body: bytes) -> list[str]:
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    cid = value.get("clientID") if isinstance(value, dict) else None
    return [cid] if isinstance(cid, str) and cid else []


def plan_records(records: Iterable[Record], keep: Collection[int] | None = None) -> CapturePlan:
    """Build the plan from records in capture order; of the connections in ``keep`` only, when given (a
    replay task's: offsets still count from the capture's first record, and route answers of other
    connections are not read, so broker names come from the driver's plan)."""
    conns: dict[int, ConnectionPlan] = {}
    pending: dict[tuple[int, int, int], tuple[Step | None, int, int]] = {}
    first_ns: int | None = None
    last_ns = 0
    raw = undecoded = 0
    broker_names: dict[str, str] = {}
    clusters: dict[str, None] = {}
    client_ids: dict[str, None] = {}
    sends: list[tuple[int, str, Step]] = []  # (connection, server, step) of answered sends and pulls
    for rec in records:
        if first_ns is None:
            first_ns = rec.mono_ns
        last_ns = rec.mono_ns
        if keep is not None and rec.conn_id not in keep:
            continue
        conn = conns.get(rec.conn_id)
        if conn is None:
            conn = conns[rec.conn_id] = ConnectionPlan(rec.conn_id, "", str(rec.server))
        if rec.type == REC_OPEN:
            kind = rec.meta().get("kind")
            if kind in ("namesrv", "broker"):
                conn.kind = str(kind)
            upstream = rec.meta().get("upstream")
            if isinstance(upstream, str) and upstream:
                conn.server = upstream
            continue
        if rec.type != REC_FRAME:
            continue
        if rec.flags & FLAG_RAW:
            raw += 1
            continue
        if not rec.decoded:
            undecoded += 1
            continue
        data = bytes(rec.data)
        if rec.rpc_flag & RESPONSE_FLAG:
            key = (rec.conn_id, 1 - rec.direction, rec.opaque)
            found = pending.pop(key, None)
            if found is None:
                continue
            step, req_code, req_ns = found
            if rec.direction == DIR_TO_SERVER:
                conn.client_answers.setdefault(req_code, []).append(data)
                continue
            try:
                cmd = decode_command(data[4:])
            except CodecError:
                undecoded += 1
                continue
            assert step is not None
            step.answer = Answer(int(cmd.code), cmd.remark, rec.mono_ns - req_ns, data)
            if (
                cmd.code == ResponseCode.SUCCESS
                and cmd.body
                and req_code
                in (
                    RequestCode.GET_ROUTEINFO_BY_TOPIC,
                    RequestCode.GET_BROKER_CLUSTER_INFO,
                )
            ):
                broker_names.update(_route_brokers(cmd.body, clusters))
            if req_code in SEND_CODES or req_code in PULL_CODES:
                sends.append((rec.conn_id, conn.server, step))
            continue
        if rec.direction == DIR_TO_CLIENT:  # a broker-initiated request
            if not rec.rpc_flag & ONEWAY_FLAG:
                pending[(rec.conn_id, rec.direction, rec.opaque)] = (None, rec.code, rec.mono_ns)
            continue
        step = Step(
            seq=len(conn.steps),
            offset_ns=rec.mono_ns - first_ns,
            code=rec.code,
            oneway=bool(rec.rpc_flag & ONEWAY_FLAG),
            frame=data,
        )
        conn.steps.append(step)
        if rec.code == RequestCode.END_TRANSACTION:
            step.check_back = _check_back(data)
        if rec.code == RequestCode.HEART_BEAT:
            try:
                body = decode_command(data[4:]).body
            except CodecError:
                body = None
            for cid in _client_ids(body or b""):
                client_ids[cid] = None
        if not step.oneway:
            pending[(rec.conn_id, rec.direction, rec.opaque)] = (step, rec.code, rec.mono_ns)
    plans = [c for c in conns.values() if c.steps]
    for conn in plans:
        if not conn.kind:
            named = conn.server in broker_names
            conn.kind = (
                "broker" if named or not any(s.code in NAMESRV_CODES for s in conn.steps) else "namesrv"
            )
        if conn.kind == "broker":
            conn.broker_name = broker_names.get(conn.server)
    bases, shared = _recorded_bases(sends, broker_names)
    return CapturePlan(
        connections=plans,
        broker_names=broker_names,
        recorded_bases=bases,
        shared_queues=shared,
        client_ids=list(client_ids),
        duration_ns=last_ns - (first_ns or 0),
        cluster_names=list(clusters),
        raw_skipped=raw,
        undecoded_skipped=undecoded,
    )


def _recorded_bases(
    sends: list[tuple[int, str, Step]], broker_names: dict[str, str]
) -> tuple[dict[QueueKey, int], set[QueueKey]]:
    """The first recorded offset per queue, and the queues more than one connection sent to."""
    bases: dict[QueueKey, int] = {}
    senders: dict[QueueKey, set[int]] = defaultdict(set)
    for conn_id, server, step in sends:
        name = broker_names.get(server)
        if name is None or step.answer is None:
            continue
        request = decode_command(step.frame[4:])
        topic = request.ext("b") or request.ext("topic")
        if not topic:
            continue
        if step.code in PULL_CODES:
            queue, offset = request.ext("queueId"), request.ext("queueOffset")
        elif step.answer.code == ResponseCode.SUCCESS:
            answer = decode_command(step.answer.frame[4:])
            queue, offset = answer.ext("queueId"), answer.ext("queueOffset")
        else:
            continue
        if queue is None or offset is None:
            continue
        try:
            key = (name, *answer_queue(request, topic, int(queue)))
            value = int(offset)
        except ValueError:
            continue
        if key not in bases or value < bases[key]:
            bases[key] = value
        if step.code in SEND_CODES:
            senders[key].add(conn_id)
    return bases, {key for key, conns in senders.items() if len(conns) > 1}


def load_plan(path: str | os.PathLike[str], keep: Collection[int] | None = None) -> CapturePlan:
    """The plan of a capture file (all its segments), or of an ingested Parquet directory
    (``rmqtwin spark ingest --raw``: the directory or its ``frames`` table); ``keep``: see
    :func:`plan_records`."""
    where = Path(path)
    if where.is_dir():
        frames = where / "frames" if (where / "frames").is_dir() else where
        return plan_records(_parquet_records(frames), keep)
    return plan_records(read_records(path), keep)


def _parquet_records(frames_dir: Path) -> Iterator[Record]:
    """An ingested ``frames`` table (``rmqtwin spark ingest --raw``) as capture records, in capture order:
    an OPEN record (kind, recorded server) before each connection's first frame."""
    import pyarrow.dataset as ds

    columns = ["capture", "segment", "pos", "conn_id", "mono_ns", "wall_ns", "direction", "client", "server"]
    columns += ["kind", "code", "opaque", "response", "oneway", "decoded", "raw_chunk", "raw"]
    table = ds.dataset(str(frames_dir), format="parquet", partitioning="hive").to_table(columns=columns)
    if table.num_rows and table.column("raw").null_count == table.num_rows:
        raise CaptureFormatError(
            f"{frames_dir} holds no frame bytes: ingest the capture with --raw to replay it"
        )
    table = table.sort_by(
        [("mono_ns", "ascending"), ("capture", "ascending"), ("segment", "ascending"), ("pos", "ascending")]
    )
    ids: dict[tuple[str, int], int] = {}
    for row in table.to_pylist():
        key = (str(row["capture"]), int(row["conn_id"]))
        conn_id = ids.get(key)
        client, server = _endpoint(row["client"]), _endpoint(row["server"])
        if conn_id is None:
            conn_id = ids[key] = len(ids) + 1
            meta = {"kind": row["kind"], "upstream": row["server"]}
            yield Record(
                REC_OPEN,
                0,
                0,
                0,
                row["mono_ns"],
                row["wall_ns"],
                conn_id,
                client,
                server,
                0,
                0,
                0,
                orjson.dumps(meta),
            )
        flags = (FLAG_RAW if row["raw_chunk"] else 0) | (FLAG_DECODED if row["decoded"] else 0)
        rpc_flag = (RESPONSE_FLAG if row["response"] else 0) | (ONEWAY_FLAG if row["oneway"] else 0)
        yield Record(
            REC_FRAME,
            int(row["direction"]),
            flags,
            0,
            int(row["mono_ns"]),
            int(row["wall_ns"]),
            conn_id,
            client,
            server,
            int(row["code"] or 0),
            int(row["opaque"] or 0),
            rpc_flag,
            bytes(row["raw"] or b""),
        )


def _endpoint(text: str | None) -> Endpoint:
    host, _, port = (text or "").rpartition(":")
    return Endpoint(host.strip("[]") or "::", int(port) if port.isdigit() else 0)
