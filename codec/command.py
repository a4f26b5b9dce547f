"""``RemotingCommand``: the header + body unit of the remoting protocol, in both header serializations.

Encoding reproduces Java's bytes exactly:

* JSON headers as fastjson writes a ``RemotingCommand`` bean: keys sorted (``code``, ``extFields``,
  ``flag``, ``language``, ``opaque``, ``remark``, ``serializeTypeCurrentRPC``, ``version``), nulls omitted,
  language by name, non-ASCII raw UTF-8. ``extFields`` is a ``HashMap<String, String>`` that fastjson
  writes in the map's own iteration order (``MapSortField`` is not among the default features), so the
  entries come out in Java HashMap bucket order, which :func:`java_hash_map_order` computes. String
  escaping differs between fastjson 1.x (RocketMQ 4.9.x up to 5.3.x) and fastjson2 (5.4 on): see
  :class:`JsonDialect`.
* ROCKETMQ binary headers as ``RocketMQSerializable`` writes them (int16 code and version, so codes above
  32767 are truncated exactly as Java's ``(short)`` cast truncates them), with the map in the same order.

Decoding is liberal the way fastjson is (missing keys take defaults, language by name or ordinal, numbers
given as strings) and raises :class:`~rmqtwin.codec.errors.FrameError` for anything it cannot read.
Headers shaped the way Java writes them take fast paths (a JSON header with every field present and
typed as fastjson writes it; a binary map that is pure ASCII with no empty key or value) and everything
else the general readers, which give the same result (tests check that they agree).
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import orjson

from rmqtwin.codec.codes import CURRENT_VERSION_4, LanguageCode, RequestCode, ResponseCode, SerializeType
from rmqtwin.codec.errors import FrameError
from rmqtwin.codec.frame import (
    LENGTH_WORD_SIZE,
    ONEWAY_FLAG,
    PREFIX_SIZE,
    RESPONSE_FLAG,
    FlagBits,
    encode_frame,
    split_header,
)
from rmqtwin.codec.java import java_hash_map_order

__all__ = [
    "JsonDialect",
    "RemotingCommand",
    "create_request",
    "create_response",
    "decode_command",
    "decode_whole_frame",
    "encode_command",
    "encode_header",
    "ext_fields_in_wire_order",
]

_DEFAULT_MAP_CAPACITY = 16


class JsonDialect(Enum):
    """Which fastjson wrote the JSON header; they escape strings differently.

    FASTJSON1 (fastjson 1.2.x, RocketMQ 4.9.x to 5.3.x): ``\\b \\t \\n \\f \\r \\" \\\\`` short forms,
    other C0 controls, DEL..U+009F, U+2028 and U+2029 as ``\\u00XX`` with upper-case hex.
    FASTJSON2 (RocketMQ 5.4 and later, e.g. 5.5.0): the same short forms, other C0 controls with
    lower-case hex, nothing else escaped.
    """

    FASTJSON1 = 1
    FASTJSON2 = 2


@dataclass(slots=True)
class RemotingCommand(FlagBits):
    """One request or response.

    ``code`` is a request code in requests and a response code in responses; codes and languages are
    enum members when known and plain ints otherwise. ``ext_fields`` holds the custom header, insertion
    ordered like the Java ``HashMap`` it models; ``ext_fields_capacity`` is that map's initial capacity
    (16 for ``new HashMap<>()`` as used by ``makeCustomHeaderToNet``, 256 for 5.x ``addExtField`` on a
    command without a header), which decides the bucket order Java writes the entries in. ``None`` means
    "write the entries in dict order": decoded commands carry ``None`` with the dict in wire order, so
    re-encoding a received command reproduces its bytes (keys added later go last).
    """

    code: int
    language: int = LanguageCode.JAVA
    version: int = 0
    opaque: int = 0
    flag: int = 0
    remark: str | None = None
    ext_fields: dict[str, str] | None = None
    body: bytes | None = None
    serialize_type: SerializeType = SerializeType.JSON
    ext_fields_capacity: int | None = field(default=_DEFAULT_MAP_CAPACITY, compare=False, repr=False)

    def ext(self, name: str, default: str | None = None) -> str | None:
        """One custom-header field, ``default`` when absent (also when there are no ext fields)."""
        if self.ext_fields is None:
            return default
        return self.ext_fields.get(name, default)


def create_request(
    code: int,
    ext_fields: dict[str, str] | None = None,
    body: bytes | None = None,
    *,
    version: int = CURRENT_VERSION_4,
    opaque: int = 0,
    oneway: bool = False,
    remark: str | None = None,
    language: int = LanguageCode.JAVA,
    serialize_type: SerializeType = SerializeType.JSON,
) -> RemotingCommand:
    """A request as ``RemotingCommand.createRequestCommand`` builds it (the connection assigns opaques)."""
    return RemotingCommand(
        code=code,
        language=language,
        version=version,
        opaque=opaque,
        flag=ONEWAY_FLAG if oneway else 0,
        remark=remark,
        ext_fields=ext_fields,
        body=body,
        serialize_type=serialize_type,
    )


def create_response(
    request: RemotingCommand,
    code: int,
    remark: str | None = None,
    ext_fields: dict[str, str] | None = None,
    body: bytes | None = None,
    *,
    version: int = CURRENT_VERSION_4,
) -> RemotingCommand:
    """The response to ``request``: its opaque, the response flag and its serialize type (4.9.x style)."""
    return RemotingCommand(
        code=code,
        language=LanguageCode.JAVA,
        version=version,
        opaque=request.opaque,
        flag=RESPONSE_FLAG,
        remark=remark,
        ext_fields=ext_fields,
        body=body,
        serialize_type=request.serialize_type,
    )


# --- JSON header --------------------------------------------------------------------------------------

_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_NEEDS_ESCAPE = {
    JsonDialect.FASTJSON1: re.compile('[\x00-\x1f"\\\\\x7f-\x9f\u2028\u2029]'),
    JsonDialect.FASTJSON2: re.compile('[\x00-\x1f"\\\\]'),
}


def _escape1(m: re.Match[str]) -> str:
    ch = m.group()
    return _SHORT_ESCAPES.get(ch) or f"\\u{ord(ch):04X}"


def _escape2(m: re.Match[str]) -> str:
    ch = m.group()
    return _SHORT_ESCAPES.get(ch) or f"\\u{ord(ch):04x}"


_ESCAPER = {JsonDialect.FASTJSON1: _escape1, JsonDialect.FASTJSON2: _escape2}


def _quote(text: str, dialect: JsonDialect) -> str:
    pattern = _NEEDS_ESCAPE[dialect]
    if pattern.search(text) is None:
        return f'"{text}"'
    return '"' + pattern.sub(_ESCAPER[dialect], text) + '"'


def _language_json(language: int) -> str:
    try:
        return f'"{LanguageCode(language).name}"'
    except ValueError:
        return str(int(language))


_LANGUAGE_JSON = {int(lc): f'"{lc.name}"' for lc in LanguageCode}


def _ext_order(ext: dict[str, str], capacity: int | None) -> Iterable[str]:
    return ext if capacity is None else java_hash_map_order(ext, capacity)


def _ext_items(cmd: RemotingCommand) -> list[tuple[str, str]]:
    ext = cmd.ext_fields
    if not ext:
        return []
    return [(k, v) for k in _ext_order(ext, cmd.ext_fields_capacity) if (v := ext[k]) is not None]


def _json_header_slow(cmd: RemotingCommand, dialect: JsonDialect) -> bytes:
    parts = ['{"code":', str(int(cmd.code))]
    if cmd.ext_fields is not None:
        parts.append(',"extFields":{')
        parts.append(",".join(f"{_quote(k, dialect)}:{_quote(v, dialect)}" for k, v in _ext_items(cmd)))
        parts.append("}")
    language = _LANGUAGE_JSON.get(cmd.language) or _language_json(cmd.language)
    parts.append(f',"flag":{int(cmd.flag)},"language":{language},"opaque":{int(cmd.opaque)}')
    if cmd.remark is not None:
        parts.append(',"remark":')
        parts.append(_quote(cmd.remark, dialect))
    parts.append(f',"serializeTypeCurrentRPC":"JSON","version":{int(cmd.version)}}}')
    return "".join(parts).encode("utf-8", "replace")


# orjson escapes strings exactly as fastjson2 does. fastjson 1 differs only for U+007F..U+009F and
# U+2028/U+2029 (escaped by fastjson 1, raw in orjson) and in the hex case of \u000B-\u000F and
# \u001A-\u001F. Output free of those sequences is therefore fastjson 1 output too; anything matching
# (rare, and false positives are harmless) takes the explicit path.
_FASTJSON1_ESCAPES_DIFFER = re.compile(rb"\\u00(?:0[bef]|1[a-f])")
_FASTJSON1_RAW_DIFFER = re.compile(rb"\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]")


def _fastjson1_differs(out: bytes) -> bool:
    return (
        b"\x7f" in out
        or _FASTJSON1_ESCAPES_DIFFER.search(out) is not None
        or (not out.isascii() and _FASTJSON1_RAW_DIFFER.search(out) is not None)
    )


_LANGUAGE_NAME: dict[int, str] = {int(lc): lc.name for lc in LanguageCode}


def _json_header(cmd: RemotingCommand, dialect: JsonDialect) -> bytes:
    ext = cmd.ext_fields
    language: int | str = _LANGUAGE_NAME.get(cmd.language, cmd.language)
    header: dict[str, Any]
    if ext is not None:
        ordered = {k: v for k in _ext_order(ext, cmd.ext_fields_capacity) if (v := ext[k]) is not None}
        header = {"code": cmd.code, "extFields": ordered, "flag": cmd.flag, "language": language}
    else:
        header = {"code": cmd.code, "flag": cmd.flag, "language": language}
    header["opaque"] = cmd.opaque
    if cmd.remark is not None:
        header["remark"] = cmd.remark
    header["serializeTypeCurrentRPC"] = "JSON"
    header["version"] = cmd.version
    try:
        out = orjson.dumps(header)
    except (orjson.JSONEncodeError, TypeError):  # lone surrogates, out-of-range ints
        return _json_header_slow(cmd, dialect)
    if dialect is JsonDialect.FASTJSON1 and _fastjson1_differs(out):
        return _json_header_slow(cmd, dialect)
    return out


# --- ROCKETMQ binary header ---------------------------------------------------------------------------

_FIXED = struct.Struct(">HBHIIi")  # code, language, version, opaque, flag, remark length: 17 bytes
_FIXED_DECODE = struct.Struct(">hBhiii")
_INT = struct.Struct(">i")
_SHORT = struct.Struct(">h")
_KEY_LEN = struct.Struct(">H")
_MIN_BINARY_HEADER = _FIXED.size + 4


_KEY_PREFIXES: dict[str, bytes] = {}


def _key_prefix(key: str) -> bytes:
    """int16 length + UTF-8 of an ext key; the few distinct header names are cached."""
    prefix = _KEY_PREFIXES.get(key)
    if prefix is None:
        kb = key.encode("utf-8", "replace")
        prefix = _KEY_LEN.pack(len(kb) & 0xFFFF) + kb
        if len(_KEY_PREFIXES) < 4096:
            _KEY_PREFIXES[key] = prefix
    return prefix


def _ext_section(ext: dict[str, str], order: tuple[str, ...], errors: str) -> bytes:
    parts: list[bytes] = []
    append = parts.append
    prefixes = _KEY_PREFIXES
    pack_int = _INT.pack
    for k in order:
        v = ext[k]
        if v is None:
            continue
        vb = v.encode("utf-8", errors)
        append(prefixes.get(k) or _key_prefix(k))
        append(pack_int(len(vb)))
        append(vb)
    return b"".join(parts)


def _binary_header(cmd: RemotingCommand) -> bytes:
    remark = cmd.remark.encode("utf-8", "replace") if cmd.remark else b""
    ext = cmd.ext_fields
    section = b""
    if ext:
        order = tuple(_ext_order(ext, cmd.ext_fields_capacity))
        try:
            section = _ext_section(ext, order, "strict")
        except UnicodeEncodeError:  # lone surrogates: String.getBytes(UTF_8) writes '?'
            section = _ext_section(ext, order, "replace")
    fixed = _FIXED.pack(
        cmd.code & 0xFFFF,
        cmd.language & 0xFF,
        cmd.version & 0xFFFF,
        cmd.opaque & 0xFFFFFFFF,
        cmd.flag & 0xFFFFFFFF,
        len(remark),
    )
    return b"".join((fixed, remark, _INT.pack(len(section)), section))


def encode_header(cmd: RemotingCommand, dialect: JsonDialect = JsonDialect.FASTJSON1) -> bytes:
    """The serialized header alone, in ``cmd.serialize_type``."""
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        return _binary_header(cmd)
    return _json_header(cmd, dialect)


def encode_command(cmd: RemotingCommand, dialect: JsonDialect = JsonDialect.FASTJSON1) -> bytes:
    """The whole frame of ``cmd``, length word included, as Java's ``RemotingCommand.encode`` writes it."""
    return encode_frame(encode_header(cmd, dialect), cmd.body, cmd.serialize_type)


# --- decoding -----------------------------------------------------------------------------------------

_LANGUAGES: dict[Any, int] = {lc.name: lc for lc in LanguageCode}
_LANGUAGES.update({int(lc): lc for lc in LanguageCode})
_LANGUAGE_BY_NAME: dict[str, int] = {lc.name: lc for lc in LanguageCode}
_REQUEST_CODES: dict[int, int] = {int(c): c for c in RequestCode}
_RESPONSE_CODES: dict[int, int] = {int(c): c for c in ResponseCode}
_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1


def _as_int(value: Any, name: str) -> int:
    if type(value) is not int:
        if isinstance(value, str):
            try:
                value = int(value.strip())
            except ValueError:
                raise FrameError(f"JSON header field {name!r} is not an int: {value!r}") from None
        elif isinstance(value, bool | float):
            try:
                value = int(value)  # fastjson (both lines) reads true as 1 and truncates 1.5 to 1
            except (ValueError, OverflowError):
                raise FrameError(f"JSON header field {name!r} is not an int: {value!r}") from None
        else:
            raise FrameError(f"JSON header field {name!r} is not an int: {value!r}")
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise FrameError(f"JSON header field {name!r} out of int range: {value}")
    return value


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    return orjson.dumps(value).decode()


def _language(value: Any) -> int:
    if type(value) is not str and type(value) is not int:
        raise FrameError(f"JSON header field 'language' is neither a name nor an ordinal: {value!r}")
    known = _LANGUAGES.get(value)
    if known is not None:
        return known
    if type(value) is int:
        return _as_int(value, "language")
    # fastjson reads an unknown enum name as null; the closest int is OTHER.
    return LanguageCode.OTHER


def _load_json_leniently(raw: bytes) -> Any:
    # Java decodes malformed UTF-8 to U+FFFD and accepts lone surrogate escapes; orjson does neither.
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        raise FrameError(f"malformed JSON header: {exc}") from None


_JSON = SerializeType.JSON
_ROCKETMQ = SerializeType.ROCKETMQ


def _decoded(  # noqa: PLR0917 - both header decoders' hot path, positional on purpose
    code: int,
    language: int,
    version: int,
    opaque: int,
    flag: int,
    remark: str | None,
    ext: dict[str, str] | None,
    body: bytes | None,
    serialize_type: SerializeType,
) -> RemotingCommand:
    """The command either header decoder read: a known code as its request or response enum member,
    ext fields in wire order."""
    return RemotingCommand(
        (_RESPONSE_CODES if flag & RESPONSE_FLAG else _REQUEST_CODES).get(code, code),
        language,
        version,
        opaque,
        flag,
        remark,
        ext,
        body,
        serialize_type,
        None,  # keep the wire order of ext_fields
    )


def _plain_ints(code: object, flag: object, opaque: object, version: object) -> bool:
    """The header's four numbers are ints in Java's int range, as every Java client writes them
    (anything else is converted the way fastjson converts it)."""
    return (
        type(code) is int
        and type(flag) is int
        and type(opaque) is int
        and type(version) is int
        and _INT32_MIN <= code <= _INT32_MAX
        and _INT32_MIN <= flag <= _INT32_MAX
        and _INT32_MIN <= opaque <= _INT32_MAX
        and _INT32_MIN <= version <= _INT32_MAX
    )


def _checked_ints(header: dict[str, Any]) -> tuple[int, int, int, int]:
    """``code``, ``flag``, ``opaque`` and ``version`` converted the way fastjson converts them."""
    get = header.get
    return (
        _as_int(get("code", 0), "code"),
        _as_int(get("flag", 0), "flag"),
        _as_int(get("opaque", 0), "opaque"),
        _as_int(get("version", 0), "version"),
    )


def _decode_json(header: Any, body: bytes | None) -> RemotingCommand:
    """A parsed JSON header, liberal the way fastjson is (strings for numbers, language by ordinal)."""
    if type(header) is not dict:
        raise FrameError("JSON header is not an object")
    get = header.get
    code = get("code", 0)
    flag = get("flag", 0)
    opaque = get("opaque", 0)
    version = get("version", 0)
    if not _plain_ints(code, flag, opaque, version):
        code, flag, opaque, version = _checked_ints(header)
    remark = get("remark")
    if remark is not None and type(remark) is not str:
        remark = _as_text(remark)
    ext = get("extFields")
    if ext is not None:
        if type(ext) is not dict:
            raise FrameError("JSON header extFields is not an object")
        try:
            "".join(ext.values())  # C-speed check that every value is a str: nothing else joins
        except TypeError:
            ext = {k: _as_text(v) for k, v in ext.items() if v is not None}
    language = get("language", 0)
    known = _LANGUAGES.get(language) if type(language) is str else None
    language = known if known is not None else _language(language)
    return _decoded(code, language, version, opaque, flag, remark, ext, body, _JSON)


def _text(raw: bytes) -> str:
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace")  # Java decodes malformed UTF-8 to U+FFFD


def _decode_lenient(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")  # Java decodes malformed UTF-8 to U+FFFD


def _decode_ext_ascii(section: bytes) -> dict[str, str] | None:
    """The map section when it is pure ASCII and has no empty key or value; else None.

    The common case: byte offsets are then character offsets, so the section is decoded to ``str``
    once and keys and values are sliced out of that string (no per-field bytes copy or decode).
    ASCII bytes are all below 0x80, so neither length word can be negative; an overrun shows as an
    end position past the section. Anything unusual returns None for :func:`_decode_ext`.
    """
    text = section.decode("ascii")
    ext: dict[str, str] = {}
    unpack_short = _SHORT.unpack_from
    unpack_int = _INT.unpack_from
    size = len(section)
    pos = 0
    try:
        while pos < size:
            key_end = pos + 2 + unpack_short(section, pos)[0]
            value_start = key_end + 4
            end = value_start + unpack_int(section, key_end)[0]
            if end == value_start or key_end == pos + 2 or end > size:
                return None
            ext[text[pos + 2 : key_end]] = text[value_start:end]
            pos = end
    except struct.error:
        return None
    return ext


def _decode_ext(frame: bytes, pos: int, ext_end: int, decode: Callable[[bytes], str]) -> dict[str, str]:
    """The map section: repeated ``int16 keyLen, key, int32 valueLen, value``.

    Java reads a zero length as null: ``HashMap.put(k, null)`` hides an earlier value for ``k``, and a
    null key is unreachable by name, so both are left out here. Duplicate keys: the last one wins.
    """
    ext: dict[str, str] = {}
    for _ in _ext_slices(ext, frame, (pos, ext_end), decode, ext_end):
        pass
    return ext


def _ext_slices(
    ext: dict[str, str], frame: bytes, span: tuple[int, int], decode: Callable[[bytes], str], step: int
) -> Iterator[None]:
    """Fill ``ext`` from the map section ``frame[span[0]:span[1]]``, yielding after every ``step`` bytes."""
    pos, ext_end = span
    unpack_short = _SHORT.unpack_from
    unpack_int = _INT.unpack_from
    pause_at = pos + step
    while pos < ext_end:
        if pos >= pause_at:
            yield
            pause_at = pos + step
        if pos + 6 > ext_end:
            raise FrameError("truncated extFields entry")
        (key_len,) = unpack_short(frame, pos)
        key_end = pos + 2 + key_len
        if key_len < 0 or key_end + 4 > ext_end:
            raise FrameError(f"bad extFields key length {key_len}")
        (value_len,) = unpack_int(frame, key_end)
        value_start = key_end + 4
        end = value_start + value_len
        if value_len < 0 or end > ext_end:
            raise FrameError(f"bad extFields value length {value_len}")
        if key_len and value_len:
            ext[decode(frame[pos + 2 : key_end])] = decode(frame[value_start:end])
        elif key_len:
            ext.pop(decode(frame[pos + 2 : key_end]), None)
        pos = end


def _decode_binary(frame: bytes, header_length: int, body: bytes | None) -> RemotingCommand:
    steps = _binary_steps(frame, header_length, body, None)
    try:
        while True:
            next(steps)
    except StopIteration as done:
        command: RemotingCommand = done.value
        return command


def _binary_steps(
    frame: bytes, header_length: int, body: bytes | None, step: int | None
) -> Generator[None, None, RemotingCommand]:
    """A ROCKETMQ header; with ``step``, the map section is read ``step`` bytes at a time, yielding
    between slices (``decode_command_steps``), else at once (with the pure-ASCII fast path)."""
    if header_length < _MIN_BINARY_HEADER:
        raise FrameError(f"ROCKETMQ header of {header_length} bytes is shorter than {_MIN_BINARY_HEADER}")
    end = 4 + header_length
    code, language, version, opaque, flag, remark_len = _FIXED_DECODE.unpack_from(frame, 4)
    pos = 4 + _FIXED_DECODE.size
    remark = None
    if remark_len:
        if remark_len < 0 or pos + remark_len + 4 > end:
            raise FrameError(f"bad remark length {remark_len} in a {header_length}-byte header")
        remark = _text(frame[pos : pos + remark_len])
        pos += remark_len
    (ext_len,) = _INT.unpack_from(frame, pos)
    pos += 4
    ext: dict[str, str] | None = None
    if ext_len > 0:  # Java ignores a zero or negative map length
        ext_end = pos + ext_len
        if ext_end > end:
            raise FrameError(f"extFields length {ext_len} overruns the {header_length}-byte header")
        if step is not None:
            ext = {}
            yield from _ext_slices(ext, frame, (pos, ext_end), _decode_field, step)
        else:
            section = frame[pos:ext_end]
            if section.isascii():
                ext = _decode_ext_ascii(section)
            if ext is None:
                try:
                    ext = _decode_ext(frame, pos, ext_end, bytes.decode)
                except UnicodeDecodeError:
                    ext = _decode_ext(frame, pos, ext_end, _decode_lenient)
    return _decoded(
        code, _LANGUAGES.get(language, language), version, opaque, flag, remark, ext, body, _ROCKETMQ
    )


def _decode_field(raw: bytes) -> str:
    """One key or value: UTF-8, or the lenient decoding when it is not valid UTF-8 (per field, which
    gives what decoding the whole section leniently gives)."""
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return _decode_lenient(raw)


STEP_BYTES = 4 * 1024
"""How much of a ROCKETMQ header's map section ``decode_command_steps`` reads per step: about half a
millisecond for the costliest map (one-byte keys and values), so a caller's time budget is kept closely."""


def decode_command_steps(
    frame: bytes | bytearray | memoryview, step: int = STEP_BYTES
) -> Generator[None, None, RemotingCommand]:
    """:func:`decode_command` as a generator that yields after each ``step`` bytes of a ROCKETMQ
    header's map section, so a caller can interleave other work while a huge header (a 15 MiB map of
    two million fields costs seconds in one go) is read; the command is the generator's return value.
    Other frames are decoded in the first step."""
    if type(frame) is not bytes:
        frame = bytes(frame)
    try:
        serialize_type, header_length = split_header(frame)
    except FrameError:
        return decode_command(frame)  # refuses it as it refuses any frame without a whole header
    if serialize_type == SerializeType.ROCKETMQ:
        header_end = 4 + header_length
        body = frame[header_end:] if len(frame) > header_end else None
        return (yield from _binary_steps(frame, header_length, body, step))
    return decode_command(frame)


def decode_command(frame: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode one frame as :class:`~rmqtwin.codec.frame.FrameDecoder` yields it (no length word)."""
    if type(frame) is not bytes:
        frame = bytes(frame)
    serialize_type, header_length = split_header(frame)
    header_end = LENGTH_WORD_SIZE + header_length
    body = frame[header_end:] if len(frame) > header_end else None
    if serialize_type == 0:  # JSON
        raw = frame[4:header_end]
        try:
            header = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return _decode_json(_load_json_leniently(raw), body)
        # Fast path for the header every Java client writes: all fields present with their usual types.
        # Anything else (missing keys, numbers as strings, languages by ordinal...) takes _decode_json.
        try:
            code = header["code"]
            flag = header["flag"]
            opaque = header["opaque"]
            version = header["version"]
            language = _LANGUAGE_BY_NAME[header["language"]]
        except (KeyError, TypeError):
            return _decode_json(header, body)
        remark = header.get("remark")
        ext = header.get("extFields")
        if (
            not _plain_ints(code, flag, opaque, version)
            or (remark is not None and type(remark) is not str)
            or (ext is not None and type(ext) is not dict)
        ):
            return _decode_json(header, body)
        if ext:
            try:
                "".join(ext.values())  # C-speed check that every value is a str: nothing else joins
            except TypeError:
                return _decode_json(header, body)
        return _decoded(code, language, version, opaque, flag, remark, ext, body, _JSON)
    if serialize_type == 1:
        return _decode_binary(frame, header_length, body)
    raise FrameError(f"unknown serialize type {serialize_type}")


def decode_whole_frame(data: bytes | bytearray | memoryview) -> RemotingCommand:
    """Decode exactly one frame given with its length word (as :func:`encode_command` returns it)."""
    if len(data) < PREFIX_SIZE:
        raise FrameError(f"{len(data)} bytes cannot hold a frame")
    (length,) = _INT.unpack_from(data, 0)
    if length != len(data) - LENGTH_WORD_SIZE:
        raise FrameError(f"length word {length} does not match the {len(data) - 4} bytes that follow")
    return decode_command(memoryview(data)[LENGTH_WORD_SIZE:])


def ext_fields_in_wire_order(cmd: RemotingCommand) -> Sequence[tuple[str, str]]:
    """The ext entries in the order Java would write them (for dissectors and diffs)."""
    return _ext_items(cmd)
