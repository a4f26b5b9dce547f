"""The stored-message record and the batch item, declared with construct: the readable spec.

These declarations are the test oracle for the hand-written hot path in ``rmqtwin.codec.message``: tests
build records here and decode them there, and the other way round. They are slow; do not use them on a
hot path.

Stored record (commitlog entry; body of PULL_MESSAGE / QUERY_MESSAGE / VIEW_MESSAGE_BY_ID responses),
from ``MessageDecoder.decode`` and the broker's ``MessageExtEncoder``. When building, TOTALSIZE and BODYCRC
are computed from the other fields (``calMsgLength``, ``UtilAll.crc32``).
"""

from __future__ import annotations

import zlib
from typing import Any

from construct import (
    Bytes,
    Const,
    Default,
    GreedyBytes,
    GreedyRange,
    IfThenElse,
    Int8sb,
    Int16sb,
    Int32sb,
    Int64sb,
    OneOf,
    Prefixed,
    Rebuild,
    Struct,
    this,
)

__all__ = [
    "BATCH_BODY",
    "BATCH_ITEM",
    "BLANK_MAGIC_CODE",
    "BLANK_RECORD",
    "BORNHOST_V6_FLAG",
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_MAGIC_CODE_V2",
    "MESSAGE_RECORD",
    "MESSAGE_RECORDS",
    "STOREHOSTADDRESS_V6_FLAG",
]

MESSAGE_MAGIC_CODE = -626843481  # 0xDAA320A7
MESSAGE_MAGIC_CODE_V2 = -626843477  # 0xDAA320AB, 5.x, topic length is a short
BLANK_MAGIC_CODE = -875286124  # 0xCBD43194, end-of-file filler
BORNHOST_V6_FLAG = 0x10
STOREHOSTADDRESS_V6_FLAG = 0x20

#: A host as the record stores it: 4 (IPv4) or 16 (IPv6) address bytes, then the port as an int32.
HOST_V4 = Struct("address" / Bytes(4), "port" / Int32sb)
HOST_V6 = Struct("address" / Bytes(16), "port" / Int32sb)


def _record_size(ctx: Any) -> int:
    born = 20 if ctx.sys_flag & BORNHOST_V6_FLAG else 8
    store = 20 if ctx.sys_flag & STOREHOSTADDRESS_V6_FLAG else 8
    topic_len_size = 2 if ctx.get("magic", MESSAGE_MAGIC_CODE) == MESSAGE_MAGIC_CODE_V2 else 1
    fixed = 4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8
    return fixed + 4 + len(ctx.body) + topic_len_size + len(ctx.topic) + 2 + len(ctx.properties)


def _body_crc(ctx: Any) -> int:
    return zlib.crc32(ctx.body) & 0x7FFFFFFF


#: One stored message record. ``topic`` and ``properties`` are the raw UTF-8 bytes; ``body`` is the body
#: as stored (compressed when sysFlag bit 0 says so).
MESSAGE_RECORD = Struct(
    "total_size" / Rebuild(Int32sb, _record_size),
    "magic" / Default(OneOf(Int32sb, [MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2]), MESSAGE_MAGIC_CODE),
    "body_crc" / Rebuild(Int32sb, _body_crc),
    "queue_id" / Int32sb,
    "flag" / Int32sb,
    "queue_offset" / Int64sb,
    "commitlog_offset" / Int64sb,
    "sys_flag" / Int32sb,
    "born_timestamp" / Int64sb,
    "born_host" / IfThenElse(this.sys_flag & BORNHOST_V6_FLAG, HOST_V6, HOST_V4),
    "store_timestamp" / Int64sb,
    "store_host" / IfThenElse(this.sys_flag & STOREHOSTADDRESS_V6_FLAG, HOST_V6, HOST_V4),
    "reconsume_times" / Int32sb,
    "prepared_transaction_offset" / Int64sb,
    "body" / Prefixed(Int32sb, GreedyBytes),
    "topic"
    / IfThenElse(
        this.magic == MESSAGE_MAGIC_CODE_V2, Prefixed(Int16sb, GreedyBytes), Prefixed(Int8sb, GreedyBytes)
    ),
    "properties" / Prefixed(Int16sb, GreedyBytes),
)

#: A pull / query body: records back to back.
MESSAGE_RECORDS = GreedyRange(MESSAGE_RECORD)

#: The 8 bytes the broker writes where the next record does not fit in a commitlog file.
BLANK_RECORD = Struct("max_blank" / Int32sb, "magic" / Const(BLANK_MAGIC_CODE, Int32sb))


def _batch_item_size(ctx: Any) -> int:
    return 4 + 4 + 4 + 4 + 4 + len(ctx.body) + 2 + len(ctx.properties)


#: One message inside a SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessage``): the client writes 0 for
#: magic and CRC, and the broker ignores TOTALSIZE, magic and CRC when it reads the items.
BATCH_ITEM = Struct(
    "total_size" / Rebuild(Int32sb, _batch_item_size),
    "magic" / Default(Int32sb, 0),
    "body_crc" / Default(Int32sb, 0),
    "flag" / Int32sb,
    "body" / Prefixed(Int32sb, GreedyBytes),
    "properties" / Prefixed(Int16sb, GreedyBytes),
)

#: The whole batch body: items back to back.
BATCH_BODY = GreedyRange(BATCH_ITEM)
