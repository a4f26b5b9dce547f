"""Capture records become the ``frames``, ``exchanges`` and ``messages`` tables.

One walk over capture records (:func:`decode_tables`) builds every table: each connection's records
come in capture order, connections interleaved as they were recorded, and per-connection state — the
frame sequence number, requests waiting for their response — is kept per connection while they stream.
Headers are read by ``peek_header`` and the typed header classes of ``rmqtwin.codec.headers``; bodies
by ``rmqtwin.codec.message``.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Iterable, Iterator, Sequence
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
    send_v2_as_v1,
)
from rmqtwin.codec.message import (
    MessageConst,
    MessageSysFlag,
    decode_batch,
    iter_message_records,
    string_to_properties,
)
from rmqtwin.proxy.capture import FLAG_DECODED, FLAG_RAW, REC_CLOSE, REC_FRAME, REC_OPEN
from rmqtwin.proxy.wire import HeaderPeek, peek_header
from rmqtwin.spark import schemas
from rmqtwin.spark.sources import TRANSACTION_NAMES, Row, message_values

__all__ = ["decode_tables", "exchanges_of", "frames_of", "hour_of", "messages_of", "tables_of"]

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
        if cls is SendMessageRequestHeaderV2:  # read straight into the V1 header it converts to
            return send_v2_as_v1(ext, strict=False)
        return from_ext_fields(cls, ext, strict=False)
    except (CodecError, ValueError):
        return None


_REQUEST_NAMES: dict[int, str] = {}
_RESPONSE_NAMES: dict[int, str] = {}


def _request_name(code: int) -> str:
    name = _REQUEST_NAMES.get(code)
    if name is None:
        name = _REQUEST_NAMES[code] = request_code_name(code)
    return name


def _response_name(code: int) -> str:
    name = _RESPONSE_NAMES.get(code)
    if name is None:
        name = _RESPONSE_NAMES[code] = response_code_name(code)
    return name


TABLES = ("frames", "exchanges", "messages", "skipped")
SCHEMAS = {"frames": schemas.FRAMES, "exchanges": schemas.EXCHANGES, "messages": schemas.MESSAGES}
SCHEMAS["skipped"] = schemas.SKIPS

_X_UNANSWERED = schemas.EXCHANGES.names.index("unanswered")
_PULL_CODES = (RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE)


class _Conn:
    """State of one connection while its records stream by (in capture order, between others')."""

    __slots__ = ("closed", "ends", "exchanges", "kind", "messages", "seq")

    def __init__(self, client: str, server: str) -> None:
        self.ends = (client, server)
        self.kind: str | None = None
        self.seq = 0
        self.closed = False
        self.exchanges: dict[tuple[int, int], list[object]] = {}
        """Requests waiting for their answer, by (direction, opaque): rows of ``exchanges``."""
        self.messages: dict[tuple[int, int], _Pending] = {}
        """Send, pull, query and view requests waiting for their answer, by (direction, opaque)."""


@dataclass(slots=True)
class _Pending:
    code: int
    header: CommandCustomHeader | None
    base: list[object]
    """capture, conn_id, seq, wall_ns, mono_ns of the request; then client, server, hour."""
    msgs: list[list[object]]
    """A send's messages as :data:`MESSAGE_COLUMNS` values (:func:`_sent`)."""


def decode_tables(
    rows: Iterable[Row], raw: bool = False, tables: Sequence[str] = TABLES
) -> Iterator[tuple[str, pa.RecordBatch]]:
    """Rows of ``tables`` (of :data:`TABLES`) from capture records (:data:`Row` tuples; each
    connection's in capture order, connections interleaved as they come), in one walk: each header is
    decoded once for every table. Yields (table, batch of its schema)."""
    out: dict[str, list[Sequence[object]]] = {t: [] for t in tables}
    frames = out.get("frames")
    exchanges = out.get("exchanges")
    messages = out.get("messages")
    skipped = out.get("skipped")
    conns: dict[tuple[object, object], _Conn] = {}
    hours = _HOURS
    flag_raw, flag_decoded = FLAG_RAW, FLAG_DECODED
    counter = 0
    for rec in rows:
        rtype = rec[3]
        key = (rec[0], rec[9])
        conn = conns.get(key)
        if conn is None:
            if rtype == 0:
                if skipped is not None:
                    skipped.append((rec[0], rec[18], 1, rec[19]))
                continue
            conn = conns[key] = _Conn(
                _endpoint(rec[10], rec[11]),  # type: ignore[arg-type]
                _endpoint(rec[12], rec[13]),  # type: ignore[arg-type]
            )
        if rtype == REC_FRAME:
            data: bytes = rec[17]  # type: ignore[assignment]
            flags: int = rec[5]  # type: ignore[assignment]
            wall: int = rec[8]  # type: ignore[assignment]
            hour = hours.get(wall // 3_600_000_000_000) or hour_of(wall)
            peek = peek_header(data) if flags & flag_decoded else None
            seq = conn.seq
            client, server = conn.ends
            if frames is not None:
                rpc_flag: int = rec[16]  # type: ignore[assignment]
                if peek is None:
                    frames.append(
                        (
                            *rec[:3], rec[9], seq, rec[7], wall, rec[4], client, server, conn.kind,
                            None, None, None, False, False, False, bool(flags & flag_raw),
                            None, None, None, None, None, len(data), None, data if raw else None, hour,
                        )
                    )  # fmt: skip
                else:
                    response = bool(rpc_flag & 1)
                    code: int = rec[14]  # type: ignore[assignment]
                    frames.append(
                        (
                            *rec[:3], rec[9], seq, rec[7], wall, rec[4], client, server, conn.kind,
                            code, _response_name(code) if response else _request_name(code), rec[15],
                            response, not response and bool(rpc_flag & 2), True, bool(flags & flag_raw),
                            SERIALIZE_NAMES.get(peek.serialize_type),
                            None if peek.language is None else str(peek.language),
                            peek.version, peek.remark, peek.ext_fields, len(data),
                            len(data) - 8 - peek.header_length, data if raw else None, hour,
                        )
                    )  # fmt: skip
            if peek is not None and not flags & flag_raw:
                header: CommandCustomHeader | None = None
                headed = False
                if exchanges is not None:
                    direction: int = rec[4]  # type: ignore[assignment]
                    if peek.flag & 1:
                        req = conn.exchanges.pop((1 - direction, peek.opaque), None)
                        if req is not None:  # the answer's columns (schemas.EXCHANGES positions)
                            req[3] = seq
                            req[12] = peek.code
                            req[13] = _response_name(peek.code)
                            req[14] = peek.remark
                            req[15] = rec[7] - req[8]  # type: ignore[operator]
                            req[25] = len(data)
                            if req[10] in _PULL_CODES:
                                max_offset = peek.ext_fields.get("maxOffset")
                                req[21] = (
                                    int(max_offset)
                                    if max_offset and max_offset.lstrip("-").isdigit()
                                    else None
                                )
                            exchanges.append(req)
                    else:
                        header, headed = _header(peek.code, peek.ext_fields, response=False), True
                        info = _request_info(
                            rec,
                            seq=seq,
                            client=client,
                            server=server,
                            kind=conn.kind,
                            hour=hour,
                            peek=peek,
                            header=header,
                        )
                        if peek.flag & 2:
                            exchanges.append(info)
                        else:
                            conn.exchanges[(direction, peek.opaque)] = info
                if messages is not None:
                    _message_frame(
                        rec, conn, peek=peek, header=header, headed=headed, hour=hour, out=messages
                    )
            conn.seq = seq + 1
        elif rtype == REC_OPEN:
            try:
                meta = orjson.loads(rec[17])  # type: ignore[arg-type]
                conn.kind = str(meta.get("kind")) if isinstance(meta, dict) else None
            except ValueError:
                conn.kind = None
        elif rtype == REC_CLOSE:
            conn.closed = True
            _end(conn, exchanges)
        elif rtype == 0 and skipped is not None:
            skipped.append((rec[0], rec[18], 1, rec[19]))
        counter += 1
        if counter >= 512:
            counter = 0
            for name, got in out.items():
                if len(got) >= _BATCH:
                    yield name, _batch(name, got)
                    got.clear()
    for conn in conns.values():
        _end(conn, exchanges)
    for name, got in out.items():
        if got:
            yield name, _batch(name, got)


def _batch(name: str, rows: list[Sequence[object]]) -> pa.RecordBatch:
    return schemas.record_batch(rows, SCHEMAS[name])


def _end(conn: _Conn, exchanges: list[Sequence[object]] | None) -> None:
    """The connection's records are over (closed, or the capture ended): its requests still waiting
    are unanswered."""
    if exchanges is not None and conn.exchanges:
        reason = "connection closed" if conn.closed else "capture ended"
        for req in conn.exchanges.values():
            req[_X_UNANSWERED] = reason
            exchanges.append(req)
    conn.exchanges.clear()
    conn.messages.clear()


def tables_of(batches: Iterator[pa.RecordBatch], raw: bool = False) -> Iterator[pa.RecordBatch]:
    """``frames``, ``exchanges`` and ``messages`` rows and the readers' skip notes in one walk over Arrow
    batches of :data:`schemas.RECORDS` (``mapInArrow``): batches of :data:`schemas.DECODED`, each
    filling one of its struct columns."""
    index = {name: i for i, name in enumerate(schemas.DECODED.names)}
    for name, batch in decode_tables(_rows(batches), raw):
        cols = [pa.nulls(batch.num_rows, f.type) for f in schemas.DECODED]
        cols[index[name]] = batch.to_struct_array()
        yield pa.RecordBatch.from_arrays(cols, schema=schemas.DECODED)


def _rows(batches: Iterator[pa.RecordBatch]) -> Iterator[Row]:
    for batch in batches:
        yield from zip(*(c.to_pylist() for c in batch.columns), strict=True)


def _one(table: str, batches: Iterator[pa.RecordBatch], raw: bool = False) -> Iterator[pa.RecordBatch]:
    for _, batch in decode_tables(_rows(batches), raw, (table,)):
        yield batch


def frames_of(batches: Iterator[pa.RecordBatch], raw: bool = False) -> Iterator[pa.RecordBatch]:
    """``frames`` rows of capture records (``mapInArrow``)."""
    return _one("frames", batches, raw)


def exchanges_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``exchanges`` rows: each request with its response, matched by (connection, opaque) in the other
    direction; oneway requests alone; the rest unanswered (``connection closed`` or ``capture ended``)."""
    return _one("exchanges", batches)


def messages_of(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``messages`` rows: every message of a send request (``sent``; queue and commitlog offsets from
    the broker's answer) and of a pull/query/view answer (``delivered``)."""
    return _one("messages", batches)


# ---------------------------------------------------------------------------------------- exchanges


def _request_info(
    rec: Row,
    *,
    seq: int,
    client: str,
    server: str,
    kind: str | None,
    hour: str,
    peek: HeaderPeek,
    header: CommandCustomHeader | None,
) -> list[object]:
    """An ``exchanges`` row of a request, its answer's columns empty."""
    code = peek.code
    ext = peek.ext_fields
    queue_id = getattr(header, "queue_id", None)
    queue_offset = getattr(header, "queue_offset", None)
    return [
        rec[0], rec[9], seq, None, rec[4], client, server, kind, rec[7], rec[8], code, _request_name(code),
        None, None, None, None,
        getattr(header, "topic", None) or ext.get("topic") or ext.get("b"),
        getattr(header, "consumer_group", None), getattr(header, "producer_group", None),
        queue_id if isinstance(queue_id, int) else None,
        queue_offset if isinstance(queue_offset, int) else None,
        None, None if peek.language is None else str(peek.language), peek.version, len(rec[17]),  # type: ignore[arg-type]
        None, bool(peek.flag & 2), None, hour,
    ]  # fmt: skip


# ----------------------------------------------------------------------------------------- messages


_UNIQ_KEY = MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
_TAGS, _KEYS = MessageConst.PROPERTY_TAGS, MessageConst.PROPERTY_KEYS


def _sent(header: SendMessageRequestHeader, body: bytes, code: int, client: str) -> list[list[object]]:
    """:data:`MESSAGE_COLUMNS` of the messages of a send request as the producer built them (a batch
    expanded), before the answer says where they were stored: values straight from the header, no
    ``MessageExt`` per message (its keyword construction cost more than the rest of the row)."""
    queue_id = header.queue_id if isinstance(header.queue_id, int) else 0
    sys_flag = header.sys_flag if isinstance(header.sys_flag, int) else 0
    born = header.born_timestamp if isinstance(header.born_timestamp, int) else 0
    reconsume = header.reconsume_times or 0
    if code == RequestCode.SEND_BATCH_MESSAGE or header.batch:
        transaction = _transaction_name(sys_flag)
        out = []
        for item in decode_batch(body):
            props = item.properties
            out.append(
                [
                    header.topic, queue_id, None, None, props.get(_UNIQ_KEY) or "", None,
                    props.get(_TAGS), props.get(_KEYS), props, item.body, len(item.body), born,
                    client, None, None, reconsume, sys_flag, item.flag, transaction, 0,
                ]
            )  # fmt: skip
        return out
    if sys_flag & COMPRESSED_FLAG:
        body = decompress_body(body, sys_flag)
        sys_flag &= ~COMPRESSED_FLAG
    props = string_to_properties(header.properties)
    return [
        [
            header.topic, queue_id, None, None, props.get(_UNIQ_KEY) or "", None,
            props.get(_TAGS), props.get(_KEYS), props, body, len(body), born, client, None, None,
            reconsume, sys_flag, header.flag if isinstance(header.flag, int) else 0,
            _transaction_name(sys_flag), 0,
        ]
    ]  # fmt: skip


def _transaction_name(sys_flag: int) -> str:
    kind = sys_flag & MessageSysFlag.TRANSACTION_ROLLBACK_TYPE
    return TRANSACTION_NAMES.get(kind) or str(kind)


def _message_frame(
    rec: Row,
    conn: _Conn,
    *,
    peek: HeaderPeek,
    header: CommandCustomHeader | None,
    headed: bool,
    hour: str,
    out: list[Sequence[object]],
) -> None:
    """``messages`` rows of one decodable frame: a send request's messages (once its answer says where
    they were stored), a pull/query/view answer's records."""
    code: int = rec[14]  # type: ignore[assignment]
    rpc_flag: int = rec[16]  # type: ignore[assignment]
    direction: int = rec[4]  # type: ignore[assignment]
    data: bytes = rec[17]  # type: ignore[assignment]
    client, server = conn.ends
    if not rpc_flag & 1:
        if code not in SEND_CODES and code not in DELIVER_CODES:
            return
        if not headed:
            header = _header(code, peek.ext_fields, response=False)
        state = _Pending(code, header, [rec[0], rec[9], conn.seq, rec[8], rec[7], client, server, hour], [])
        if code in SEND_CODES:
            if isinstance(header, SendMessageRequestHeader):
                with contextlib.suppress(CodecError, ValueError):
                    state.msgs = _sent(header, _body(data, peek), code, client)
            if rpc_flag & 2:  # oneway send: no answer will come
                _send_answer(state, None, out)
                return
        conn.messages[(direction, rec[15])] = state  # type: ignore[index]
        return
    pending = conn.messages.pop((1 - direction, rec[15]), None)  # type: ignore[arg-type]
    if pending is None:
        return
    if pending.code in SEND_CODES:
        _send_answer(pending, peek, out)
        return
    if peek.code != ResponseCode.SUCCESS:
        return
    delivered = []
    try:
        for msg in iter_message_records(_body(data, peek)):
            delivered.append(msg)
    except CodecError:
        pass  # rows up to the damage
    group = getattr(pending.header, "consumer_group", None)
    base = (rec[0], rec[9], conn.seq, rec[8], rec[7], "delivered", pending.code, group, client, server)
    for i, msg in enumerate(delivered):
        out.append((*base, i, *message_values(msg), hour))


_M_QUEUE_ID, _M_QUEUE_OFFSET, _M_COMMITLOG_OFFSET, _M_MSG_ID, _M_OFFSET_MSG_ID = 1, 2, 3, 4, 5


def _send_answer(state: _Pending, peek: HeaderPeek | None, out: list[Sequence[object]]) -> None:
    """``sent`` rows of a send request, with where its answer says the broker stored them."""
    capture, conn_id, seq, wall, mono, client, server, hour = state.base
    group = getattr(state.header, "producer_group", None)
    code = state.code
    if peek is not None and peek.code in STORED_SEND_CODES:
        answer = _header(code, peek.ext_fields, response=True)
        ids = str(getattr(answer, "msg_id", "") or "").split(",")
        queue_id = getattr(answer, "queue_id", None)
        first = getattr(answer, "queue_offset", None)
        for i, values in enumerate(state.msgs):
            if isinstance(queue_id, int):
                values[_M_QUEUE_ID] = queue_id
            if isinstance(first, int):
                values[_M_QUEUE_OFFSET] = first + i if first + i >= 0 else None
            else:
                values[_M_QUEUE_OFFSET] = 0
            if i < len(ids) and ids[i]:
                offset_msg_id = ids[i]
                values[_M_OFFSET_MSG_ID] = offset_msg_id
                values[_M_MSG_ID] = values[_M_MSG_ID] or offset_msg_id
                values[_M_COMMITLOG_OFFSET] = _commitlog_offset(offset_msg_id)
    for i, values in enumerate(state.msgs):
        out.append((capture, conn_id, seq, wall, mono, "sent", code, group, client, server, i, *values, hour))


def _commitlog_offset(offset_msg_id: str) -> int | None:
    """The commitlog offset an offset msgId names (its last 16 hex digits), ``None`` if it is not one."""
    if len(offset_msg_id) not in (32, 56):
        return None
    try:
        return int(offset_msg_id[-16:], 16)
    except ValueError:
        return None
