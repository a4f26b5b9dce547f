"""Byte-level helpers the proxy needs on the wire: header peeking and credential masking.

The proxy forwards bytes, not commands, so it keeps whole frames *including* their length word (the
codec's :class:`~rmqtwin.codec.frame.FrameSplitter` cuts them, going raw on a stream it cannot frame)
and never re-encodes what it does not have to change.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import msgspec
import orjson

from rmqtwin.codec.frame import PREFIX_SIZE, FlagBits, whole_frame_prefix

__all__ = [
    "CREDENTIAL_FIELDS",
    "FrameHead",
    "HeadFields",
    "HeaderPeek",
    "JsonSummary",
    "binary_entries",
    "decode_json_summary",
    "mask_credentials",
    "masked_at",
    "peek_header",
    "peek_summary",
    "read_head",
    "summary_at",
]

CREDENTIAL_FIELDS = ("AccessKey", "Signature", "SecurityToken")
"""ACL 1.0 ext fields added by ``AclClientRPCHook``; masked in recorded copies by default."""

_BINARY_FIXED = struct.Struct(">hBhiii")  # code, language, version, opaque, flag, remarkLen
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(slots=True)
class HeaderPeek(FlagBits):
    """What a recorder or a statistics pass needs from a frame, without building a full command."""

    serialize_type: int
    code: int
    opaque: int
    flag: int
    language: int | str | None = None
    version: int | None = None
    remark: str | None = None
    ext_fields: dict[str, str] = field(default_factory=dict)
    header_length: int = 0


class _AnyObject(msgspec.Struct):
    """A JSON object whose keys are not needed: checked to be an object, nothing built."""


class JsonSummary(msgspec.Struct, gc=False):
    """What a JSON header says of the frame (its code, opaque and flag), the ext fields only checked
    to be an object. A typed decoder skips the keys it is not asked for without building them: a third
    of ``orjson.loads``' time on a SEND_MESSAGE_V2 header, and this runs for every frame recorded or
    counted. Strict types (an int is a JSON integer): what they refuse goes the loose way."""

    code: int = 0
    opaque: int = 0
    flag: int = 0
    extFields: _AnyObject | None = None


decode_json_summary = msgspec.json.Decoder(JsonSummary).decode
"""A JSON header as :class:`JsonSummary`; ``msgspec.DecodeError`` for what it refuses."""


class HeadFields(msgspec.Struct, gc=False):
    """The ext fields the proxy's hooks read: the topic a request names (``b`` in
    SendMessageRequestHeaderV2's short names) and the offset msgIds a broker's answer carries."""

    topic: str | None = None
    b: str | None = None
    msgId: str | None = None
    offsetMsgId: str | None = None


class FrameHead(msgspec.Struct, gc=False):
    """What a proxy session's hooks read of a frame's header, read once per frame (:func:`read_head`)
    and handed to every hook that asks: the metrics and the msgId rewriting read every answer."""

    code: int = 0
    opaque: int = 0
    flag: int = 0
    extFields: HeadFields | None = None


_decode_head = msgspec.json.Decoder(FrameHead).decode
_header_word = struct.Struct(">4xI").unpack_from
"""The word after a whole frame's length word: serialize type (high byte) and header length."""


def read_head(frame: bytes) -> FrameHead | None:
    """The :class:`FrameHead` of a whole frame (length word checked, as a splitter hands it on), or
    ``None`` for a header that cannot be read. A JSON header goes through one typed decoder that
    builds only these fields; what it refuses (a code written as a string) and a binary header are
    read by :func:`peek_header`."""
    (mark,) = _header_word(frame)
    if mark <= len(frame) - PREFIX_SIZE:  # serialize type 0 (JSON), a header that fits
        try:
            return _decode_head(frame[PREFIX_SIZE : PREFIX_SIZE + mark])
        except msgspec.DecodeError:
            pass
    peek = peek_header(frame)
    if peek is None:
        return None
    ext = peek.ext_fields
    fields = HeadFields(ext.get("topic"), ext.get("b"), ext.get("msgId"), ext.get("offsetMsgId"))
    return FrameHead(peek.code, peek.opaque, peek.flag, fields if ext else None)


def peek_header(frame: bytes | memoryview) -> HeaderPeek | None:
    """Decode the header of a whole frame (length word included); ``None`` if it is not a valid one."""
    prefix = whole_frame_prefix(frame)
    if prefix is None:
        return None
    serialize_type, header_length = prefix
    header = bytes(frame[PREFIX_SIZE : PREFIX_SIZE + header_length])
    try:
        if serialize_type == 0:
            return _peek_json(header, header_length)
        if serialize_type == 1:
            return _peek_binary(header, header_length)
    except (ValueError, TypeError, struct.error, UnicodeDecodeError, KeyError):
        return None
    return None


def peek_summary(frame: bytes) -> tuple[int, int, int, int] | None:
    """(serialize type, code, opaque, flag) of a whole frame, or ``None``: the recorder's cheap peek."""
    prefix = whole_frame_prefix(frame)
    if prefix is None:
        return None
    return summary_at(frame, *prefix)


def summary_at(frame: bytes, serialize_type: int, header_length: int) -> tuple[int, int, int, int] | None:
    """:func:`peek_summary` of a frame whose prefix was read already (by :func:`whole_frame_prefix`)."""
    try:
        if serialize_type == 0:
            try:
                head = decode_json_summary(frame[PREFIX_SIZE : PREFIX_SIZE + header_length])
            except msgspec.DecodeError:
                return _loose_summary(frame[PREFIX_SIZE : PREFIX_SIZE + header_length])
            return 0, head.code, head.opaque, head.flag
        if serialize_type == 1:
            code, _, _, opaque, flag, _ = _BINARY_FIXED.unpack_from(frame, PREFIX_SIZE)
            if header_length < _BINARY_FIXED.size + 4:
                return None
            return 1, code, opaque, flag
    except (ValueError, TypeError, struct.error):
        return None
    return None


def _loose_summary(header: bytes) -> tuple[int, int, int, int] | None:
    """(0, code, opaque, flag) of a JSON header the typed decoders refuse: a code written as a string,
    a float or a boolean is read as Java's fastjson would read it (``int()``), as before they existed."""
    obj = orjson.loads(header)
    if not isinstance(obj, dict) or not isinstance(obj.get("extFields", {}), dict | None):
        return None
    return 0, int(obj.get("code", 0)), int(obj.get("opaque", 0)), int(obj.get("flag", 0))


def _peek_json(header: bytes, header_length: int) -> HeaderPeek | None:
    obj = orjson.loads(header)
    if not isinstance(obj, dict):
        return None
    ext = obj.get("extFields") or {}
    if not isinstance(ext, dict):
        return None
    get = obj.get
    # positional arguments, and values converted only when not str already (JSON keys always are):
    # this runs for every frame a statistics pass or an ingest reads
    return HeaderPeek(
        0,
        int(get("code", 0)),
        int(get("opaque", 0)),
        int(get("flag", 0)),
        get("language"),
        get("version"),
        get("remark"),
        {k: v if type(v) is str else "" if v is None else str(v) for k, v in ext.items()},
        header_length,
    )


def _peek_binary(header: bytes, header_length: int) -> HeaderPeek:
    code, language, version, opaque, flag, remark_len = _BINARY_FIXED.unpack_from(header, 0)
    pos = _BINARY_FIXED.size
    remark = None
    if remark_len > 0:
        remark = header[pos : pos + remark_len].decode()
        pos += remark_len
    ext_len = _I32.unpack_from(header, pos)[0]
    pos += 4
    ext: dict[str, str] = {}
    end = pos + ext_len
    if end > len(header):
        raise ValueError("extFields section runs past the header")
    for key_start, key_end, value_start, value_end in binary_entries(header, pos, end):
        ext[header[key_start:key_end].decode()] = header[value_start:value_end].decode()
    return HeaderPeek(1, code, opaque, flag, language, version, remark, ext, header_length)


def binary_entries(header: bytes | bytearray, pos: int, end: int) -> list[tuple[int, int, int, int]]:
    """Offsets (key start/end, value start/end) of each ROCKETMQ-serialized extFields entry."""
    out = []
    while pos < end:
        key_len = _I16.unpack_from(header, pos)[0]
        key_start = pos + 2
        pos = key_start + key_len
        value_len = _I32.unpack_from(header, pos)[0]
        value_start = pos + 4
        pos = value_start + value_len
        if key_len < 0 or value_len < 0 or pos > end:
            raise ValueError("malformed extFields entry")
        out.append((key_start, key_start + key_len, value_start, pos))
    return out


_JSON_CREDENTIAL = re.compile(rb'"(AccessKey|Signature|SecurityToken)":"((?:[^"\\]|\\.)*)"')


def mask_credentials(frame: bytes) -> bytes | None:
    """A copy of ``frame`` with ACL credential values overwritten by ``*``, or ``None`` if it has none.

    Values are masked in place with the same byte length, so no length word changes and the copy
    still decodes exactly like the original. Only the header is touched; the body never is.
    """
    prefix = whole_frame_prefix(frame)
    if prefix is None:
        return None
    return masked_at(frame, *prefix)


def masked_at(frame: bytes, serialize_type: int, header_length: int) -> bytes | None:
    """:func:`mask_credentials` of a frame whose prefix was read already."""
    header_end = PREFIX_SIZE + header_length
    # bytes.find over the header range: several times cheaper than a regex search, and this runs for
    # every recorded frame (ACL clients always send AccessKey and Signature together)
    if (
        frame.find(b"Signature", PREFIX_SIZE, header_end) < 0
        and frame.find(b"AccessKey", PREFIX_SIZE, header_end) < 0
    ):
        return None
    out = bytearray(frame)
    hits = 0
    if serialize_type == 0:
        for match in _JSON_CREDENTIAL.finditer(frame, PREFIX_SIZE, header_end):
            start, stop = match.span(2)
            out[start:stop] = b"*" * (stop - start)
            hits += 1
    elif serialize_type == 1:
        try:
            pos = PREFIX_SIZE + _BINARY_FIXED.size
            remark_len = _I32.unpack_from(frame, PREFIX_SIZE + 9)[0]
            pos += max(remark_len, 0)
            ext_len = _I32.unpack_from(frame, pos)[0]
            pos += 4
            for key_start, key_end, value_start, value_end in binary_entries(frame, pos, pos + ext_len):
                if frame[key_start:key_end].decode(errors="replace") in CREDENTIAL_FIELDS:
                    out[value_start:value_end] = b"*" * (value_end - value_start)
                    hits += 1
        except (struct.error, ValueError):
            return None
    return bytes(out) if hits else None
