"""Capture records become the ``frames``, ``exchanges`` and ``messages`` tables.

Each table is a ``mapInArrow`` over the records of whole connections, in capture order (records are
repartitioned by connection and sorted by segment and position first), so per-connection state — the
frame sequence number, requests waiting for their response — lives in one Python worker and streams.
Headers are read by ``peek_header`` and the typed header classes of ``rmqtwin.codec.headers``; bodies
by ``rmqtwin.codec.message``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import orjson
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

__all__ = ["exchanges_of", "frames_of", "hour_of", "messages_of", "tables_of"]

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


class _Table:
    """One output table, built frame by frame while the records of whole connections stream by."""

    schema: pa.Schema

    def __init__(self) -> None:
        self.out = _Out(self.schema)
        self.pending: dict[tuple[int, int], dict[str, object]] = {}
        """Requests of the current connection waiting for their answer, by (direction, opaque)."""

    def frame(self, conn: _Conn, row: dict[str, object], peek: HeaderPeek | None) -> None:
        """A FRAME record of ``conn``; ``peek`` is its header (``None``: not a decodable frame)."""

    def end(self, conn: _Conn) -> None:
        """``conn``'s records are over (closed, or the capture ended)."""
        self.pending.clear()

    def skip(self, row: dict[str, object]) -> None:
        """A note of what the reader skipped (a ``type`` 0 record)."""


def _walk(
    batches: Iterator[pa.RecordBatch], tables: Sequence[_Table]
) -> Iterator[tuple[int, pa.RecordBatch]]:
    """Feed every record to each of ``tables`` (one header decode per frame for all of them); yields
    (index of the table, a batch of its rows)."""
    conn: _Conn | None = None
    for batch in batches:
        for row in batch.to_pylist():
            key = (row["capture"], row["conn_id"])
            if conn is None or conn.key != key:
                if conn is not None:
                    for t in tables:
                        t.end(conn)
                conn = _Conn(key)
            rtype = row["type"]
            if rtype == REC_FRAME:
                data = row["data"]
                assert isinstance(data, bytes)
                peek = peek_header(data) if row["flags"] & FLAG_DECODED else None
                for t in tables:
                    t.frame(conn, row, peek)
                conn.seq += 1
            elif rtype == REC_OPEN:
                try:
                    meta = orjson.loads(row["data"])
                    conn.kind = str(meta.get("kind")) if isinstance(meta, dict) else None
                except ValueError:
                    conn.kind = None
            elif rtype == REC_CLOSE:
                conn.closed = True
                for t in tables:
                    t.end(conn)
            elif rtype == 0:
                for t in tables:
                    t.skip(row)
            for i, t in enumerate(tables):
                if t.out.n >= _BATCH:
                    yield i, t.out.take()
    for i, t in enumerate(tables):
        if conn is not None:
            t.end(conn)
        if t.out.n:
            yield i, t.out.take()


def tables_of(batches: Iterator[pa.RecordBatch], raw: bool = False) -> Iterator[pa.RecordBatch]:
    """``frames``, ``exchanges`` and ``messages`` rows and the readers' skip notes in one walk
    (``mapInArrow``): batches of :data:`schemas.DECODED`, each filling one of its struct columns."""
    tables = (_Frames(raw), _Exchanges(), _Messages(), _Skipped())
    for i, batch in _walk(batches, tables):
        cols = [pa.nulls(batch.num_rows, f.type) for f in schemas.DECODED]
        cols[i] = batch.to_struct_array()
        yield pa.RecordBatch.from_arrays(cols, schema=schemas.DECODED)


def _one(table: _Table, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for _, batch in _walk(batches, (table,)):
        yield batch


def frames_of(batches: Iterator[pa.RecordBatch], raw: bool = False) -> Iterator[pa.RecordBatch]:
    """``frames`` rows of the records of whole connections in capture order (``mapInArrow``)."""
    return _one(_Frames(raw), batches)


def exchanges_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``exchanges`` rows: each request with its response, matched by (connection, opaque) in the other
    direction; oneway requests alone; the rest unanswered (``connection closed`` or ``capture ended``)."""
    return _one(_Exchanges(), batches)


def messages_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``messages`` rows: every message of a send request (``sent``; queue and commitlog offsets from
    the broker's answer) and of a pull/query/view answer (``delivered``)."""
    return _one(_Messages(), batches)


class _Skipped(_Table):
    """What the readers skipped (``schemas.SKIPS`` rows, one per note)."""

    schema = schemas.SKIPS

    def skip(self, row: dict[str, object]) -> None:
        self.out.add(
            {"input": row["capture"], "reason": row["skip_reason"], "count": 1, "bytes": row["skipped_bytes"]}
        )


# ------------------------------------------------------------------------------------------- frames


class _Frames(_Table):
    schema = schemas.FRAMES

    def __init__(self, raw: bool) -> None:
        super().__init__()
        self.raw = raw

    def frame(self, conn: _Conn, row: dict[str, object], peek: HeaderPeek | None) -> None:
        data = row["data"]
        assert isinstance(data, bytes)
        is_raw = bool(int(row["flags"]) & FLAG_RAW)  # type: ignore[call-overload]
        rpc_flag = int(row["rpc_flag"])  # type: ignore[call-overload]
        response = peek is not None and bool(rpc_flag & 1)
        code = int(row["code"])  # type: ignore[call-overload]
        language = None
        if peek is not None and peek.language is not None:
            language = str(peek.language)
        self.out.add(
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
                "raw": data if self.raw else None,
                "hour": hour_of(int(row["wall_ns"])),  # type: ignore[call-overload]
            }
        )


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


class _Exchanges(_Table):
    schema = schemas.EXCHANGES

    def frame(self, conn: _Conn, row: dict[str, object], peek: HeaderPeek | None) -> None:
        if peek is None or int(row["flags"]) & FLAG_RAW:  # type: ignore[call-overload]
            return
        direction = int(row["direction"])  # type: ignore[call-overload]
        if peek.flag & 1:
            req = self.pending.pop((1 - direction, peek.opaque), None)
            if req is None:
                return
            req["response_seq"] = conn.seq
            req["response_code"] = peek.code
            req["response_code_name"] = response_code_name(peek.code)
            req["remark"] = peek.remark
            req["latency_ns"] = int(row["mono_ns"]) - int(req["request_mono_ns"])  # type: ignore[call-overload]
            req["response_bytes"] = len(row["data"])  # type: ignore[arg-type]
            if req["request_code"] in (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE):
                max_offset = peek.ext_fields.get("maxOffset")
                req["max_offset"] = (
                    int(max_offset) if max_offset and max_offset.lstrip("-").isdigit() else None
                )
            self.out.add(req)
            return
        info = _request_info(conn, row, peek)
        if peek.flag & 2:
            self.out.add(info)
        else:
            self.pending[(direction, peek.opaque)] = info

    def end(self, conn: _Conn) -> None:
        reason = "connection closed" if conn.closed else "capture ended"
        for req in self.pending.values():
            req["unanswered"] = reason
            self.out.add(req)
        self.pending.clear()


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


class _Messages(_Table):
    schema = schemas.MESSAGES

    def frame(self, conn: _Conn, row: dict[str, object], peek: HeaderPeek | None) -> None:
        if peek is None or int(row["flags"]) & FLAG_RAW:  # type: ignore[call-overload]
            return
        code = int(row["code"])  # type: ignore[call-overload]
        rpc_flag = int(row["rpc_flag"])  # type: ignore[call-overload]
        is_response = bool(rpc_flag & 1)
        if not is_response and code not in SEND_CODES and code not in DELIVER_CODES:
            return
        direction = int(row["direction"])  # type: ignore[call-overload]
        if is_response and (1 - direction, row["opaque"]) not in self.pending:
            return
        data = row["data"]
        assert isinstance(data, bytes)
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
                    self._send_answer(state, None)
                    return
            self.pending[(direction, peek.opaque)] = state
            return
        state = self.pending.pop((1 - direction, peek.opaque))
        req_code = state["code"]
        if req_code in SEND_CODES:
            self._send_answer(state, peek)
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
        for i, msg in enumerate(delivered):
            mrow = message_columns(msg)
            mrow.update(base)
            mrow["index_in_frame"] = i
            self.out.add(mrow)

    def _send_answer(self, state: dict[str, object], peek: HeaderPeek | None) -> None:
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
            self.out.add(row)


def _commitlog_offset(offset_msg_id: str) -> int | None:
    """The commitlog offset an offset msgId names (its last 16 hex digits), ``None`` if it is not one."""
    if len(offset_msg_id) not in (32, 56):
        return None
    try:
        return int(offset_msg_id[-16:], 16)
    except ValueError:
        return None
