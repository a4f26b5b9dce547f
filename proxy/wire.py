"""Byte-level helpers the proxy needs on the wire: frame splitting, header peeking, credential masking.

The proxy forwards bytes, not commands, so it keeps whole frames *including* their length word and
never re-encodes what it does not have to change. The codec's decoder hands out frames without the
length word and raises on bad input; here a bad length word must not stop forwarding, so the splitter
switches that direction to raw mode instead (the bytes still flow, recorded as unframed).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field

import orjson

__all__ = [
    "CREDENTIAL_FIELDS",
    "DEFAULT_MAX_FRAME_SIZE",
    "FLAG_ONEWAY",
    "FLAG_RESPONSE",
    "FrameSplitter",
    "HeaderPeek",
    "mask_credentials",
    "peek_header",
    "peek_summary",
]

DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024
"""``com.rocketmq.remoting.frameMaxLength``: Netty's decoder closes the channel beyond this."""

FLAG_RESPONSE = 1
FLAG_ONEWAY = 2

CREDENTIAL_FIELDS = ("AccessKey", "Signature", "SecurityToken")
"""ACL 1.0 ext fields added by ``AclClientRPCHook``; masked in recorded copies by default."""

_U32 = struct.Struct(">I")
_TWO_U32 = struct.Struct(">II")
_BINARY_FIXED = struct.Struct(">hBhiii")  # code, language, version, opaque, flag, remarkLen
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class FrameSplitter:
    """Cuts one direction of a connection into whole frames (length word included).

    ``feed`` returns the frames completed by ``data``. If a length word is impossible (larger than
    ``max_frame_size`` or shorter than the header-mark word) the splitter gives up framing for good:
    ``raw`` becomes true and the rest of the stream, including the buffered bytes, comes back from
    ``feed`` as unframed chunks in ``take_raw``.
    """

    __slots__ = ("_buf", "_need", "_raw_out", "max_frame_size", "raw")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._need = 4
        self.raw = False
        self._raw_out: list[bytes] = []

    @property
    def buffered(self) -> int:
        """Bytes held back waiting for the rest of a frame."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        if self.raw:
            if data:
                self._raw_out.append(bytes(data))
            return []
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                return []
            src: bytes | bytearray = buf
        else:
            src = data
        frames: list[bytes] = []
        pos = 0
        end = len(src)
        while end - pos >= 4:
            length = _U32.unpack_from(src, pos)[0]
            if length < 4 or length > self.max_frame_size:
                self._buf = bytearray()
                self._need = 4
                self._go_raw(bytes(src[pos:]))
                return frames
            stop = pos + 4 + length
            if stop > end:
                self._need = stop - pos
                break
            frames.append(bytes(src) if (pos == 0 and stop == end) else bytes(src[pos:stop]))
            pos = stop
        else:
            self._need = 4
        if pos == end:
            self._buf = bytearray()
        elif src is not buf:
            self._buf = bytearray(src[pos:])
        elif pos:
            del buf[:pos]
        return frames

    def take_raw(self) -> list[bytes]:
        """Unframed chunks collected since the last call (only once ``raw`` is set)."""
        out, self._raw_out = self._raw_out, []
        return out

    def _go_raw(self, rest: bytes) -> None:
        self.raw = True
        if rest:
            self._raw_out.append(rest)


@dataclass(slots=True)
class HeaderPeek:
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

    @property
    def is_response(self) -> bool:
        return bool(self.flag & FLAG_RESPONSE)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & FLAG_ONEWAY)


def peek_header(frame: bytes | memoryview) -> HeaderPeek | None:
    """Decode the header of a whole frame (length word included); ``None`` if it is not a valid one."""
    if len(frame) < 8:
        return None
    length, mark = struct.unpack_from(">II", frame, 0)
    serialize_type = mark >> 24
    header_length = mark & 0xFFFFFF
    if length + 4 != len(frame) or header_length > length - 4:
        return None
    header = bytes(frame[8 : 8 + header_length])
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
    if len(frame) < 8:
        return None
    length, mark = _TWO_U32.unpack_from(frame, 0)
    serialize_type = mark >> 24
    header_length = mark & 0xFFFFFF
    if length + 4 != len(frame) or header_length > length - 4:
        return None
    try:
        if serialize_type == 0:
            obj = orjson.loads(frame[8 : 8 + header_length])
            if not isinstance(obj, dict) or not isinstance(obj.get("extFields", {}), dict | None):
                return None
            return 0, int(obj.get("code", 0)), int(obj.get("opaque", 0)), int(obj.get("flag", 0))
        if serialize_type == 1:
            code, _, _, opaque, flag, _ = _BINARY_FIXED.unpack_from(frame, 8)
            if header_length < _BINARY_FIXED.size + 4:
                return None
            return 1, code, opaque, flag
    except (ValueError, TypeError, struct.error):
        return None
    return None


def _peek_json(header: bytes, header_length: int) -> HeaderPeek | None:
    obj = orjson.loads(header)
    if not isinstance(obj, dict):
        return None
    ext = obj.get("extFields") or {}
    if not isinstance(ext, dict):
        return None
    return HeaderPeek(
        serialize_type=0,
        code=int(obj.get("code", 0)),
        opaque=int(obj.get("opaque", 0)),
        flag=int(obj.get("flag", 0)),
        language=obj.get("language"),
        version=obj.get("version"),
        remark=obj.get("remark"),
        ext_fields={str(k): "" if v is None else str(v) for k, v in ext.items()},
        header_length=header_length,
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
    for key_start, key_end, value_start, value_end in _binary_entries(header, pos, end):
        ext[header[key_start:key_end].decode()] = header[value_start:value_end].decode()
    return HeaderPeek(1, code, opaque, flag, language, version, remark, ext, header_length)


def _binary_entries(header: bytes | bytearray, pos: int, end: int) -> list[tuple[int, int, int, int]]:
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
    if len(frame) < 8:
        return None
    mark = _U32.unpack_from(frame, 4)[0]
    serialize_type = mark >> 24
    header_end = 8 + (mark & 0xFFFFFF)
    # bytes.find over the header range: several times cheaper than a regex search, and this runs for
    # every recorded frame (ACL clients always send AccessKey and Signature together)
    if frame.find(b"Signature", 8, header_end) < 0 and frame.find(b"AccessKey", 8, header_end) < 0:
        return None
    out = bytearray(frame)
    hits = 0
    if serialize_type == 0:
        for match in _JSON_CREDENTIAL.finditer(frame, 8, header_end):
            start, stop = match.span(2)
            out[start:stop] = b"*" * (stop - start)
            hits += 1
    elif serialize_type == 1:
        try:
            pos = 8 + _BINARY_FIXED.size
            remark_len = _I32.unpack_from(frame, 8 + 9)[0]
            pos += max(remark_len, 0)
            ext_len = _I32.unpack_from(frame, pos)[0]
            pos += 4
            for key_start, key_end, value_start, value_end in _binary_entries(frame, pos, pos + ext_len):
                if frame[key_start:key_end].decode(errors="replace") in CREDENTIAL_FIELDS:
                    out[value_start:value_end] = b"*" * (value_end - value_start)
                    hits += 1
        except (struct.error, ValueError):
            return None
    return bytes(out) if hits else None
