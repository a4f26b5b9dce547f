"""The remoting frame and the ROCKETMQ binary header, declared with construct: the readable spec.

These are the test oracle for the hand-written hot paths in ``rmqtwin.codec.frame`` and
``rmqtwin.codec.command`` (slow: never use them on a hot path). All integers are big-endian.

Frame (``RemotingCommand.encode``/``decode``)::

    int32  length         = 4 + headerLength + bodyLength (does not count itself)
    uint8  serializeType  0 = JSON, 1 = ROCKETMQ
    uint24 headerLength
    bytes  header         headerLength bytes
    bytes  body           the rest (none when empty)

ROCKETMQ header (``RocketMQSerializable.rocketMQProtocolEncode``): fixed 21 bytes plus remark and map;
a zero-length remark, key or value stands for null.
"""

from __future__ import annotations

from construct import (
    Bytes,
    GreedyRange,
    Int8ub,
    Int16sb,
    Int16ub,
    Int24ub,
    Int32sb,
    PascalString,
    Prefixed,
    Rebuild,
    Struct,
    len_,
    this,
)

__all__ = ["EXT_ENTRY", "FRAME", "ROCKETMQ_HEADER"]

FRAME = Struct(
    "length" / Rebuild(Int32sb, lambda ctx: 4 + len(ctx.header) + len(ctx.body)),
    "serialize_type" / Int8ub,
    "header_length" / Rebuild(Int24ub, len_(this.header)),
    "header" / Bytes(this.header_length),
    "body" / Bytes(this.length - 4 - this.header_length),
)
"""One frame, length word included."""

EXT_ENTRY = Struct(
    "key" / PascalString(Int16ub, "utf8"),
    "value" / PascalString(Int32sb, "utf8"),
)
"""One extFields entry: int16 key length, key, int32 value length, value (UTF-8)."""

ROCKETMQ_HEADER = Struct(
    "code" / Int16sb,
    "language" / Int8ub,
    "version" / Int16sb,
    "opaque" / Int32sb,
    "flag" / Int32sb,
    "remark" / PascalString(Int32sb, "utf8"),
    "ext_fields" / Prefixed(Int32sb, GreedyRange(EXT_ENTRY)),
)
"""The ROCKETMQ (binary) header; ``ext_fields`` is the list of entries in wire order."""
