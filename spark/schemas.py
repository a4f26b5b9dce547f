"""Column layouts of the data sources and the tables (documented in ``docs/spark.md``).

Each layout is one Arrow schema; the Spark DDL string comes from it, so the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

__all__ = [
    "DECODED",
    "EXCHANGES",
    "FRAMES",
    "MESSAGES",
    "RECORDS",
    "SKIPS",
    "STORE_MESSAGES",
    "ddl",
    "record_batch",
]

_STR = pa.string()
_I32 = pa.int32()
_I64 = pa.int64()
_MAP = pa.map_(pa.string(), pa.string())


def ddl(schema: pa.Schema | pa.StructType) -> str:
    """The Spark DDL string of an Arrow schema or struct's fields (the types used here only)."""
    if isinstance(schema, pa.StructType):
        return ",".join(f"`{f.name}`:{_type(f.type)}" for f in schema)
    return ", ".join(f"`{f.name}` {_type(f.type)}" for f in schema)


def _type(t: pa.DataType) -> str:
    if isinstance(t, pa.StructType):
        return f"struct<{ddl(t)}>"
    names = {
        pa.string(): "string",
        pa.int32(): "int",
        pa.int64(): "bigint",
        pa.bool_(): "boolean",
        pa.binary(): "binary",
        _MAP: "map<string,string>",
    }
    return names[t]


def record_batch(rows: Sequence[Sequence[object]], schema: pa.Schema) -> pa.RecordBatch:
    """Rows (tuples, or sequences made tuples here, in ``schema``'s order; a ``map<string,string>``
    value a ``dict`` or ``None``) as one Arrow batch, converted as one struct column by Arrow in a
    single pass: transposing the rows in Python and converting column by column cost about a fifth
    more (``frames``, ``messages``)."""
    rows = [row if type(row) is tuple else tuple(row) for row in rows]
    return pa.RecordBatch.from_struct_array(pa.array(rows, type=_struct(schema)))


_STRUCTS: dict[pa.Schema, pa.StructType] = {}


def _struct(schema: pa.Schema) -> pa.StructType:
    found = _STRUCTS.get(schema)
    if found is None:
        found = _STRUCTS[schema] = pa.struct(list(schema))
    return found


RECORDS = pa.schema(
    [
        ("capture", _STR),  # the capture's (or pcap's) file name without segment suffix
        ("segment", _I32),  # segment index (0 for a pcap)
        ("pos", _I64),  # byte offset of the record in its segment (packet ordinal for a pcap)
        ("type", _I32),  # 1 FRAME, 2 OPEN, 3 CLOSE; 0 = a note of what was skipped (skip_reason)
        ("direction", _I32),
        ("flags", _I32),
        ("serialize_type", _I32),
        ("mono_ns", _I64),
        ("wall_ns", _I64),
        ("conn_id", _I64),
        ("client_host", _STR),
        ("client_port", _I32),
        ("server_host", _STR),
        ("server_port", _I32),
        ("code", _I32),
        ("opaque", _I32),
        ("rpc_flag", _I32),
        ("data", pa.binary()),
        ("skip_reason", _STR),
        ("skipped_bytes", _I64),
    ]
)
"""What ``rmqcap`` and ``pcap`` give: one row per capture record, the format's fields as columns."""

_MESSAGE_FIELDS: list[tuple[str, pa.DataType]] = [
    ("topic", _STR),
    ("queue_id", _I32),
    ("queue_offset", _I64),
    ("commitlog_offset", _I64),
    ("msg_id", _STR),  # the client's msgId (UNIQ_KEY), else the offset msgId
    ("offset_msg_id", _STR),
    ("tags", _STR),
    ("keys", _STR),
    ("properties", _MAP),
    ("body", pa.binary()),
    ("body_length", _I32),
    ("born_timestamp", _I64),
    ("born_host", _STR),
    ("store_timestamp", _I64),
    ("store_host", _STR),
    ("reconsume_times", _I32),
    ("sys_flag", _I32),
    ("flag", _I32),
    ("transaction", _STR),  # NOT_TYPE, PREPARED, COMMIT, ROLLBACK (the sysFlag's transaction bits)
    ("prepared_transaction_offset", _I64),
]

STORE_MESSAGES = pa.schema(
    [
        ("store", _STR),
        ("file", _STR),
        ("store_size", _I32),
        *_MESSAGE_FIELDS,
        ("skip_reason", _STR),
        ("skipped_bytes", _I64),
    ]
)
"""What ``rocketmq-store`` gives: one row per message of a commitlog; a row with ``skip_reason`` set
(and the message columns null) says what part of a file could not be read."""

FRAMES = pa.schema(
    [
        ("capture", _STR),
        ("segment", _I32),
        ("pos", _I64),
        ("conn_id", _I64),
        ("seq", _I64),  # 0, 1, 2, ... per connection, both directions, in capture order
        ("mono_ns", _I64),
        ("wall_ns", _I64),
        ("direction", _I32),  # 0 client -> server, 1 server -> client
        ("client", _STR),
        ("server", _STR),
        ("kind", _STR),  # namesrv, broker, ha, pcap (from the connection's OPEN record)
        ("code", _I32),
        ("code_name", _STR),
        ("opaque", _I32),
        ("response", pa.bool_()),
        ("oneway", pa.bool_()),
        ("decoded", pa.bool_()),
        ("raw_chunk", pa.bool_()),
        ("serialize_type", _STR),
        ("language", _STR),
        ("version", _I32),
        ("remark", _STR),
        ("ext_fields", _MAP),
        ("frame_length", _I32),
        ("body_length", _I32),
        ("raw", pa.binary()),  # the whole frame, only with --raw
        ("hour", _STR),
    ]
)

EXCHANGES = pa.schema(
    [
        ("capture", _STR),
        ("conn_id", _I64),
        ("request_seq", _I64),
        ("response_seq", _I64),
        ("request_direction", _I32),
        ("client", _STR),
        ("server", _STR),
        ("kind", _STR),
        ("request_mono_ns", _I64),
        ("request_wall_ns", _I64),
        ("request_code", _I32),
        ("request_code_name", _STR),
        ("response_code", _I32),
        ("response_code_name", _STR),
        ("remark", _STR),
        ("latency_ns", _I64),
        ("topic", _STR),
        ("consumer_group", _STR),
        ("producer_group", _STR),
        ("queue_id", _I32),
        ("queue_offset", _I64),  # a pull's request offset
        ("max_offset", _I64),  # a pull's answer: the queue's max offset then
        ("language", _STR),
        ("client_version", _I32),
        ("request_bytes", _I32),
        ("response_bytes", _I32),
        ("oneway", pa.bool_()),
        ("unanswered", _STR),  # null if answered or oneway; "connection closed" or "capture ended"
        ("hour", _STR),
    ]
)

MESSAGES = pa.schema(
    [
        ("capture", _STR),
        ("conn_id", _I64),
        ("seq", _I64),  # the frame that carried it (the send request, the pull/query/view answer)
        ("wall_ns", _I64),
        ("mono_ns", _I64),
        ("event", _STR),  # sent or delivered
        ("request_code", _I32),
        ("group", _STR),  # producer group (sent) or consumer group (delivered)
        ("client", _STR),
        ("server", _STR),
        ("index_in_frame", _I32),
        *_MESSAGE_FIELDS,
        ("hour", _STR),
    ]
)

SKIPS = pa.schema(
    [
        ("input", _STR),
        ("reason", _STR),
        ("count", _I64),
        ("bytes", _I64),
    ]
)
"""Per input file: what was skipped and why (also printed by ingest and shown in the report)."""

DECODED = pa.schema(
    [
        (name, pa.struct(list(schema)))
        for name, schema in (
            ("frames", FRAMES),
            ("exchanges", EXCHANGES),
            ("messages", MESSAGES),
            ("skipped", SKIPS),
        )
    ]
)
"""What the ingest's one pass over the records gives (``tables.tables_of``): each row fills one column,
a row of that table (or a skip note of a reader)."""
