"""Capture records become the ``frames``, ``exchanges`` and ``messages`` tables.

Each table is a ``mapInArrow`` over the records of whole connections, in capture order (records are
repartitioned by connection and sorted by segment and position first), so per-connection state — the
frame sequence number, requests waiting for their response — lives in one Python worker and streams.
Headers are read by ``peek_header`` and the typed header classes of ``rmqtwin.codec.headers``; bodies
by ``rmqtwin.codec.message``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pyarrow as pa

from rmqtwin.codec.codes import RequestCode, ResponseCode, request_code_name, response_code_name
from rmqtwin.codec.compression import COMPRESSED_FLAG, decompress_body
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.headers import (
    REQUEST_HEADERS,
    RESPONSE_HEADERS,
    CommandCustomHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    from_ext_fields,
    send_v2_to_v1,
)
from rmqtwin.codec.message import (
    MessageExt,
    decode_batch,
    iter_message_records,
    string_to_properties,
)
from rmqtwin.proxy.capture import FLAG_DECODED, FLAG_RAW, REC_CLOSE, REC_FRAME, REC_OPEN
from rmqtwin.proxy.wire import HeaderPeek, peek_header
from rmqtwin.spark import schemas
from rmqtwin.spark.sources import message_columns

__all__ = ["exchanges_of", "frames_of", "hour_of", "messages_of"]

_BATCH = 4096
SERIALIZE_NAMES = {0: "JSON", 1: "ROCKETMQ"}
SEND_CODES = frozenset(
    {
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE,
        RequestCode.SEND_REPLY_MESSAGE_V2,
    }
)
DELIVER_CODES = frozenset(
    {
        RequestCode.PULL_MESSAGE,
        RequestCode.LITE_PULL_MESSAGE,
        RequestCode.QUERY_MESSAGE,
        RequestCode.VIEW_MESSAGE_BY_ID,
    }
)
STORED_SEND_CODES = frozenset(
    {
        ResponseCode.SUCCESS,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        ResponseCode.FLUSH_SLAVE_TIMEOUT,
        ResponseCode.SLAVE_NOT_AVAILABLE,
    }
)
"""Send answers whose message the broker stored (SendStatus other than a failure)."""

_HOURS: dict[int, str] = {}


def hour_of(wall_ns: int) -> str:
    """The ``hour`` partition value, ``YYYY-MM-DDTHH`` in UTC."""
    key = wall_ns // 3_600_000_000_000
    hour = _HOURS.get(key)
    if hour is None:
        hour = _HOURS[key] = dt.datetime.fromtimestamp(key * 3600, tz=dt.UTC).strftime("%Y-%m-%dT%H")
    return hour


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _body(frame: bytes, peek: HeaderPeek) -> bytes:
    return frame[8 + peek.header_length :]


def _header(code: int, ext: dict[str, str], *, response: bool) -> CommandCustomHeader | None:
    """The typed header of a request (or of the response to request ``code``), Java-lenient."""
    cls = (RESPONSE_HEADERS if response else REQUEST_HEADERS).get(code)
    if cls is None:
        return None
    try:
        header = from_ext_fields(cls, ext, strict=False)
    except (CodecError, ValueError):
        return None
    if isinstance(header, SendMessageRequestHeaderV2):
        return send_v2_to_v1(header)
    return header


class _Out:
    """Column lists for one output schema, cut into Arrow batches."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.cols: dict[str, list[object]] = {f.name: [] for f in schema}
        self.n = 0

    def add(self, row: dict[str, object]) -> None:
        for k, v in self.cols.items():
            v.append(row.get(k))
        self.n += 1

    def take(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_pydict(self.cols, schema=self.schema)
        for v in self.cols.values():
            v.clear()
        self.n = 0
        return batch


@dataclass(slots=True)
class _Conn:
    """State of the connection being walked."""

    key: tuple[str, int]
    kind: str | None = None
    seq: int = 0
    closed: bool = False
    pending: dict[tuple[int, int], dict[str, object]] = field(default_factory=dict)


def _walk(
    batches: Iterator[pa.RecordBatch],
    schema: pa.Schema,
    on_frame: Callable[[_Conn, dict[str, object], _Out], None],
    on_end: Callable[[_Conn, _Out], None] | None = None,
) -> Iterator[pa.RecordBatch]:
    """Call ``on_frame`` for each FRAME record (the row as a dict) with its connection's state;
    ``on_end`` when a connection's records are over."""
    out = _Out(schema)
    conn: _Conn | None = None
    for batch in batches:
        for row in batch.to_pylist():
            key = (row["capture"], row["conn_id"])
            if conn is None or conn.key != key:
                if conn is not None and on_end is not None:
                    on_end(conn, out)
                conn = _Conn(key)
            rtype = row["type"]
            if rtype == REC_FRAME:
                on_frame(conn, row, out)
                conn.seq += 1
            elif rtype == REC_OPEN:
                try:
                    import orjson

                    meta = orjson.loads(row["data"])
                    conn.kind = str(meta.get("kind")) if isinstance(meta, dict) else None
                except ValueError:
                    conn.kind = None
            elif rtype == REC_CLOSE:
                conn.closed = True
                if on_end is not None:
                    on_end(conn, out)
            if out.n >= _BATCH:
                yield out.take()
    if conn is not None and on_end is not None:
        on_end(conn, out)
    if out.n:
        yield out.take()


# ------------------------------------------------------------------------------------------- frames


def frames_of(batches: Iterator[pa.RecordBatch], raw: bool = False) -> Iterator[pa.RecordBatch]:
    """``frames`` rows of the records of whole connections in capture order (``mapInArrow``)."""

    def on_frame(conn: _Conn, row: dict[str, object], out: _Out) -> None:
        data = row["data"]
        assert isinstance(data, bytes)
        flags = int(row["flags"])  # type: ignore[call-overload]
        is_raw = bool(flags & FLAG_RAW)
        peek = peek_header(data) if flags & FLAG_DECODED else None
        rpc_flag = int(row["rpc_flag"])  # type: ignore[call-overload]
        response = peek is not None and bool(rpc_flag & 1)
        code = int(row["code"])  # type: ignore[call-overload]
        language = None
        if peek is not None and peek.language is not None:
            language = str(peek.language)
        out.add(
            {
                "capture": row["capture"],
                "segment": row["segment"],
                "pos": row["pos"],
                "conn_id": row["conn_id"],
                "seq": conn.seq,
                "mono_ns": row["mono_ns"],
                "wall_ns": row["wall_ns"],
                "direction": row["direction"],
                "client": _endpoint(row["client_host"], row["client_port"]),  # type: ignore[arg-type]
                "server": _endpoint(row["server_host"], row["server_port"]),  # type: ignore[arg-type]
                "kind": conn.kind,
                "code": code if peek is not None else None,
                "code_name": None
                if peek is None
                else (response_code_name(code) if response else request_code_name(code)),
                "opaque": row["opaque"] if peek is not None else None,
                "response": response,
                "oneway": peek is not None and not response and bool(rpc_flag & 2),
                "decoded": peek is not None,
                "raw_chunk": is_raw,
                "serialize_type": SERIALIZE_NAMES.get(peek.serialize_type) if peek is not None else None,
                "language": language,
                "version": peek.version if peek is not None else None,
                "remark": peek.remark if peek is not None else None,
                "ext_fields": list(peek.ext_fields.items()) if peek is not None else None,
                "frame_length": len(data),
                "body_length": len(data) - 8 - peek.header_length if peek is not None else None,
                "raw": data if raw else None,
                "hour": hour_of(int(row["wall_ns"])),  # type: ignore[call-overload]
            }
        )

    yield from _walk(batches, schemas.FRAMES, on_frame)


# ---------------------------------------------------------------------------------------- exchanges


def _request_info(conn: _Conn, row: dict[str, object], peek: HeaderPeek) -> dict[str, object]:
    code = peek.code
    header = _header(code, peek.ext_fields, response=False)
    info: dict[str, object] = {
        "capture": row["capture"],
        "conn_id": row["conn_id"],
        "request_seq": conn.seq,
        "request_direction": row["direction"],
        "client": _endpoint(row["client_host"], row["client_port"]),  # type: ignore[arg-type]
        "server": _endpoint(row["server_host"], row["server_port"]),  # type: ignore[arg-type]
        "kind": conn.kind,
        "request_mono_ns": row["mono_ns"],
        "request_wall_ns": row["wall_ns"],
        "request_code": code,
        "request_code_name": request_code_name(code),
        "language": None if peek.language is None else str(peek.language),
        "client_version": peek.version,
        "request_bytes": len(row["data"]),  # type: ignore[arg-type]
        "oneway": bool(peek.flag & 2),
        "hour": hour_of(int(row["wall_ns"])),  # type: ignore[call-overload]
    }
    ext = peek.ext_fields
    info["topic"] = getattr(header, "topic", None) or ext.get("topic") or ext.get("b")
    info["consumer_group"] = getattr(header, "consumer_group", None)
    info["producer_group"] = getattr(header, "producer_group", None)
    queue_id = getattr(header, "queue_id", None)
    info["queue_id"] = queue_id if isinstance(queue_id, int) else None
    queue_offset = getattr(header, "queue_offset", None)
    info["queue_offset"] = queue_offset if isinstance(queue_offset, int) else None
    return info


def exchanges_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``exchanges`` rows: each request with its response, matched by (connection, opaque) in the other
    direction; oneway requests alone; the rest unanswered (``connection closed`` or ``capture ended``)."""

    def on_frame(conn: _Conn, row: dict[str, object], out: _Out) -> None:
        flags = int(row["flags"])  # type: ignore[call-overload]
        if not flags & FLAG_DECODED or flags & FLAG_RAW:
            return
        data = row["data"]
        assert isinstance(data, bytes)
        peek = peek_header(data)
        if peek is None:
            return
        direction = int(row["direction"])  # type: ignore[call-overload]
        if peek.flag & 1:
            req = conn.pending.pop((1 - direction, peek.opaque), None)
            if req is None:
                return
            req["response_seq"] = conn.seq
            req["response_code"] = peek.code
            req["response_code_name"] = response_code_name(peek.code)
            req["remark"] = peek.remark
            req["latency_ns"] = int(row["mono_ns"]) - int(req["request_mono_ns"])  # type: ignore[call-overload]
            req["response_bytes"] = len(data)
            if req["request_code"] in (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE):
                max_offset = peek.ext_fields.get("maxOffset")
                req["max_offset"] = (
                    int(max_offset) if max_offset and max_offset.lstrip("-").isdigit() else None
                )
            out.add(req)
            return
        info = _request_info(conn, row, peek)
        if peek.flag & 2:
            out.add(info)
        else:
            conn.pending[(direction, peek.opaque)] = info

    def on_end(conn: _Conn, out: _Out) -> None:
        reason = "connection closed" if conn.closed else "capture ended"
        for req in conn.pending.values():
            req["unanswered"] = reason
            out.add(req)
        conn.pending.clear()

    yield from _walk(batches, schemas.EXCHANGES, on_frame, on_end)


# ----------------------------------------------------------------------------------------- messages


def _sent(header: SendMessageRequestHeader, body: bytes, code: int) -> list[MessageExt]:
    """The messages of a send request as the producer built them (a batch expanded)."""
    template = dict(
        topic=header.topic,
        queue_id=header.queue_id if isinstance(header.queue_id, int) else 0,
        sys_flag=header.sys_flag if isinstance(header.sys_flag, int) else 0,
        born_timestamp=header.born_timestamp if isinstance(header.born_timestamp, int) else 0,
        reconsume_times=header.reconsume_times or 0,
    )
    if code == RequestCode.SEND_BATCH_MESSAGE or header.batch:
        return [
            MessageExt(flag=item.flag, body=item.body, properties=item.properties, **template)  # type: ignore[arg-type]
            for item in decode_batch(body)
        ]
    sys_flag = int(template["sys_flag"])  # type: ignore[call-overload]
    if sys_flag & COMPRESSED_FLAG:
        body = decompress_body(body, sys_flag)
        template["sys_flag"] = sys_flag & ~COMPRESSED_FLAG
    return [
        MessageExt(
            flag=header.flag if isinstance(header.flag, int) else 0,
            body=body,
            properties=string_to_properties(header.properties),
            **template,  # type: ignore[arg-type]
        )
    ]


def messages_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``messages`` rows: every message of a send request (``sent``; queue and commitlog offsets from
    the broker's answer) and of a pull/query/view answer (``delivered``)."""

    def emit(out: _Out, base: dict[str, object], msgs: list[MessageExt]) -> None:
        for i, msg in enumerate(msgs):
            row = message_columns(msg)
            row.update(base)
            row["index_in_frame"] = i
            out.add(row)

    def on_frame(conn: _Conn, row: dict[str, object], out: _Out) -> None:
        flags = int(row["flags"])  # type: ignore[call-overload]
        code = int(row["code"])  # type: ignore[call-overload]
        rpc_flag = int(row["rpc_flag"])  # type: ignore[call-overload]
        if not flags & FLAG_DECODED or flags & FLAG_RAW:
            return
        is_response = bool(rpc_flag & 1)
        if not is_response and code not in SEND_CODES and code not in DELIVER_CODES:
            return
        direction = int(row["direction"])  # type: ignore[call-overload]
        if is_response and (1 - direction, row["opaque"]) not in conn.pending:
            return
        data = row["data"]
        assert isinstance(data, bytes)
        peek = peek_header(data)
        if peek is None:
            return
        base = {
            "capture": row["capture"],
            "conn_id": row["conn_id"],
            "seq": conn.seq,
            "wall_ns": row["wall_ns"],
            "mono_ns": row["mono_ns"],
            "client": _endpoint(row["client_host"], row["client_port"]),  # type: ignore[arg-type]
            "server": _endpoint(row["server_host"], row["server_port"]),  # type: ignore[arg-type]
            "hour": hour_of(int(row["wall_ns"])),  # type: ignore[call-overload]
        }
        if not is_response:
            header = _header(code, peek.ext_fields, response=False)
            state: dict[str, object] = {"code": code, "header": header, "base": base}
            if code in SEND_CODES:
                if isinstance(header, SendMessageRequestHeader):
                    try:
                        state["msgs"] = _sent(header, _body(data, peek), code)
                    except (CodecError, ValueError):
                        state["msgs"] = []
                if rpc_flag & 2:  # oneway send: no answer will come
                    on_send_answer(out, state, None)
                    return
            conn.pending[(direction, peek.opaque)] = state
            return
        state = conn.pending.pop((1 - direction, peek.opaque))
        req_code = state["code"]
        if req_code in SEND_CODES:
            on_send_answer(out, state, peek)
            return
        if peek.code != ResponseCode.SUCCESS:
            return
        delivered = []
        try:
            for msg in iter_message_records(_body(data, peek)):
                delivered.append(msg)
        except CodecError:
            pass  # rows up to the damage
        base.update(
            event="delivered", request_code=req_code, group=getattr(state["header"], "consumer_group", None)
        )
        emit(out, base, delivered)

    def on_send_answer(out: _Out, state: dict[str, object], peek: HeaderPeek | None) -> None:
        msgs = state.get("msgs") or []
        assert isinstance(msgs, list)
        header = state["header"]
        base = dict(state["base"])  # type: ignore[call-overload]
        base.update(event="sent", request_code=state["code"], group=getattr(header, "producer_group", None))
        if peek is not None and peek.code in STORED_SEND_CODES:
            answer = _header(int(state["code"]), peek.ext_fields, response=True)  # type: ignore[call-overload]
            ids = str(getattr(answer, "msg_id", "") or "").split(",")
            queue_id = getattr(answer, "queue_id", None)
            first = getattr(answer, "queue_offset", None)
            for i, msg in enumerate(msgs):
                if isinstance(queue_id, int):
                    msg.queue_id = queue_id
                if isinstance(first, int):
                    msg.queue_offset = first + i
                if i < len(ids) and ids[i]:
                    msg.msg_id = ids[i]
            rows = msgs
        else:
            for msg in msgs:
                msg.queue_offset = -1
            rows = msgs
        for i, msg in enumerate(rows):
            row = message_columns(msg)
            if not msg.msg_id:
                row["offset_msg_id"] = None
            if msg.queue_offset < 0:
                row["queue_offset"] = None
            row["commitlog_offset"] = _commitlog_offset(msg.msg_id)
            row["store_timestamp"] = None
            row["store_host"] = None
            row["born_host"] = base["client"]
            row.update(base)
            row["index_in_frame"] = i
            out.add(row)

    yield from _walk(batches, schemas.MESSAGES, on_frame)


def _commitlog_offset(offset_msg_id: str) -> int | None:
    """The commitlog offset an offset msgId names (its last 16 hex digits), ``None`` if it is not one."""
    if len(offset_msg_id) not in (32, 56):
        return None
    try:
        return int(offset_msg_id[-16:], 16)
    except ValueError:
        return None
