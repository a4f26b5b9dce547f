"""The JSON dialect of fastjson 1.x, as RocketMQ writes and reads its remoting bodies.

Java RocketMQ serializes bodies with fastjson (``RemotingSerializable``), which is not standard JSON:

* non-String map keys are written bare: ``Map<Long,String>`` becomes ``{0:"10.0.0.1:10911"}``;
* object map keys (``Map<MessageQueue,…>``) are written as an object in key position:
  ``{{"brokerName":"b","queueId":0,"topic":"t"}:{…}}``;
* bean properties come out sorted by name (``String.compareTo``), nulls omitted, enums by name,
  doubles as Java's ``Double.toString``, a few extra characters escaped as ``\\uXXXX`` (0x7F-0x9F,
  U+2028/U+2029, upper-case hex digits) and non-ASCII written raw as UTF-8.

:func:`loads` reads that dialect (and the rest of what fastjson's lenient parser accepts: single quotes,
bare identifier keys, trailing commas), trying orjson first because most bodies are standard JSON.
:func:`dumps` writes it byte for byte like fastjson for our dataclass beans.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import orjson

from rmqtwin.codec.errors import FastjsonError

__all__ = [
    "ObjectKey",
    "bean_fields",
    "camel_case",
    "dumps",
    "java_double_str",
    "loads",
    "to_ints",
    "wire_name",
]


# --------------------------------------------------------------------------------------------- ObjectKey


def _freeze(value: Any) -> Any:
    if isinstance(value, ObjectKey):
        return value
    if isinstance(value, Mapping):
        return ObjectKey(value)
    if isinstance(value, list | tuple):
        return tuple(_freeze(v) for v in value)
    return value


class ObjectKey(Mapping[str, Any]):
    """An object used as a map key (fastjson's ``{{…}:v}`` form): immutable, hashable, equal by value.

    Java uses beans such as ``MessageQueue`` as keys of ``offsetTable``/``mqTable``; parsed bodies keep
    them as ObjectKey so they can be dict keys in Python too. Key order is kept for writing back.
    """

    __slots__ = ("_hash", "_items")

    def __init__(self, items: Mapping[str, Any] | Iterable[tuple[str, Any]] = ()) -> None:
        pairs = items.items() if isinstance(items, Mapping) else items
        self._items: dict[str, Any] = {k: _freeze(v) for k, v in pairs}
        self._hash: int | None = None

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self._items.items()))
        return self._hash

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ObjectKey):
            return self._items == other._items
        if isinstance(other, Mapping):
            return self._items == dict(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"ObjectKey({self._items!r})"

    def to_dict(self) -> dict[str, Any]:
        """A plain (mutable) dict copy, nested ObjectKeys included."""
        return {k: v.to_dict() if isinstance(v, ObjectKey) else v for k, v in self._items.items()}


# --------------------------------------------------------------------------------------------- beans


def camel_case(name: str) -> str:
    """``consumer_group`` → ``consumerGroup`` (a trailing ``_`` that dodges a Python keyword is dropped)."""
    name = name.rstrip("_")
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def wire_name(field: dataclasses.Field[Any]) -> str:
    """The Java name of a dataclass field: ``metadata["wire"]`` when the Java name is irregular."""
    explicit = field.metadata.get("wire")
    return explicit if explicit is not None else camel_case(field.name)


_BEAN_CACHE: dict[type, tuple[tuple[str, str], ...]] = {}


def bean_fields(cls: type) -> tuple[tuple[str, str], ...]:
    """``(attribute, java name)`` pairs of a dataclass, sorted as fastjson sorts bean properties.

    Fields with ``metadata["json"] is False`` are skipped (Java ``transient`` /
    ``@JSONField(serialize=false)``).
    """
    cached = _BEAN_CACHE.get(cls)
    if cached is None:
        pairs = [
            (f.name, wire_name(f))
            for f in dataclasses.fields(cls)
            if f.metadata.get("json", True) is not False
        ]
        # String.compareTo compares UTF-16 code units; Java names are ASCII, where that is code-point order.
        cached = tuple(sorted(pairs, key=lambda p: p[1]))
        _BEAN_CACHE[cls] = cached
    return cached


# --------------------------------------------------------------------------------------------- dumps

# fastjson's SerializeWriter escapes: \b \t \n \f \r \" \\ by letter, every other char below 0x20 plus
# 0x7F-0x9F and U+2028/U+2029 as \uXXXX with upper-case hex digits. '/' is left alone (checked against
# fastjson 1.2.69_noneautotype and 1.2.83).
_LETTER_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}
_NEEDS_ESCAPE_BROWSER = re.compile('[\x00-\x1f"\\\\/\x7f-\U0010ffff]')


def _escapes(chars: Iterable[int], hex_format: str) -> dict[int, str]:
    """A ``str.translate`` table of these chars' escapes: the work is C's, not a Python call per char
    (a table of groups with long names full of control chars spent most of its persisting there)."""
    return {c: _LETTER_ESCAPES.get(chr(c)) or "\\u" + format(c, hex_format) for c in chars}


def _any_of(table: dict[int, str]) -> re.Pattern[str]:
    """The search for a char the table escapes (a string with none is written as it is)."""
    return re.compile("[" + "".join(re.escape(chr(c)) for c in table) + "]")


_ESCAPES = _escapes([*range(0x20), ord('"'), ord("\\"), *range(0x7F, 0xA0), 0x2028, 0x2029], "04X")
_NEEDS_ESCAPE = _any_of(_ESCAPES)


def _escape_char_browser(m: re.Match[str]) -> str:
    ch = m.group()
    if ch == "/":
        return "\\/"
    letter = _LETTER_ESCAPES.get(ch)
    if letter is not None:
        return letter
    code = ord(ch)
    if code > 0xFFFF:  # Java chars are UTF-16 code units: a surrogate pair
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04X}\\u{0xDC00 + (code & 0x3FF):04X}"
    return f"\\u{code:04X}"


# fastjson2 (RocketMQ 5.5 bodies) escapes only what JSON requires, with lower-case hex digits.
_ESCAPES_2 = _escapes([*range(0x20), ord('"'), ord("\\")], "04x")
_NEEDS_ESCAPE_2 = _any_of(_ESCAPES_2)


_STYLE_V1, _STYLE_V1_BROWSER, _STYLE_V2 = range(3)


def _quote(s: str, style: int) -> str:
    if style == _STYLE_V1:
        if _NEEDS_ESCAPE.search(s) is None:
            return '"' + s + '"'
        return '"' + s.translate(_ESCAPES) + '"'
    if style == _STYLE_V2:
        if _NEEDS_ESCAPE_2.search(s) is None:
            return '"' + s + '"'
        return '"' + s.translate(_ESCAPES_2) + '"'
    return '"' + _NEEDS_ESCAPE_BROWSER.sub(_escape_char_browser, s) + '"'


def java_double_str(value: float) -> str:
    """Java's ``Double.toString`` (shortest digits, as fastjson's RyuDouble writes): ``1.0E7``, ``1.0E-4``."""
    if value == 0.0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    magnitude = abs(value)
    if 1e-3 <= magnitude < 1e7:
        return repr(value)  # Python's repr is plain decimal with a ".0" in exactly this range
    text = repr(magnitude)
    mantissa, _, exp_text = text.partition("e")
    int_part, _, frac = mantissa.partition(".")
    digits = int_part + frac
    point = len(int_part) + (int(exp_text) if exp_text else 0)
    stripped = digits.lstrip("0")
    point -= len(digits) - len(stripped)
    digits = stripped.rstrip("0") or "0"
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def _java_key_order(key: Any) -> tuple[int, Any]:
    """Natural order of a TreeMap (MapSortField): numbers numerically, strings by code unit."""
    if isinstance(key, bool):
        return (2, str(key))
    if isinstance(key, int | float):
        return (0, key)
    if isinstance(key, str):
        return (1, key)
    return (2, repr(key))


_JS_SAFE = 2**53 - 1
_BEAN_NAMES: dict[tuple[type, int], tuple[tuple[str, str], ...]] = {}


class _Writer:
    __slots__ = ("big_longs_as_strings", "browser", "quote_int_keys", "sort_map_keys", "style")

    def __init__(self, quote_int_keys: bool, browser: bool, sort_map_keys: bool, fastjson2: bool) -> None:
        self.quote_int_keys = quote_int_keys or browser
        self.browser = browser
        self.sort_map_keys = sort_map_keys
        self.style = _STYLE_V2 if fastjson2 else _STYLE_V1_BROWSER if browser else _STYLE_V1
        # fastjson2's BrowserCompatible writes longs outside +-2^53 as strings (JavaScript safety)
        self.big_longs_as_strings = fastjson2 and browser

    def value(self, obj: Any, out: list[str]) -> None:
        if obj is None:
            out.append("null")
        elif isinstance(obj, str):
            out.append(_quote(obj, self.style))
        elif isinstance(obj, bool):
            out.append("true" if obj else "false")
        elif isinstance(obj, enum.Enum):
            out.append(_quote(obj.name, self.style))
        elif isinstance(obj, int):
            if self.big_longs_as_strings and not -_JS_SAFE <= obj <= _JS_SAFE:
                out.append('"' + str(obj) + '"')
            else:
                out.append(str(obj))
        elif isinstance(obj, float):
            out.append("null" if math.isnan(obj) or math.isinf(obj) else java_double_str(obj))
        elif isinstance(obj, Mapping):
            self.mapping(obj, out)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            self.bean(obj, out)
        elif isinstance(obj, list | tuple | set | frozenset):
            out.append("[")
            first = True
            for item in obj:
                if not first:
                    out.append(",")
                first = False
                self.value(item, out)
            out.append("]")
        elif isinstance(obj, bytes | bytearray | memoryview):
            out.append('"' + base64.b64encode(bytes(obj)).decode("ascii") + '"')
        else:
            raise TypeError(f"cannot write {type(obj).__name__} as fastjson")

    def bean(self, obj: Any, out: list[str]) -> None:
        cls = type(obj)
        names = _BEAN_NAMES.get((cls, self.style))
        if names is None:
            names = tuple((attr, _quote(name, self.style) + ":") for attr, name in bean_fields(cls))
            _BEAN_NAMES[(cls, self.style)] = names
        separator = "{"
        for attr, name in names:
            val = getattr(obj, attr)
            if val is None:
                continue
            out.append(separator)
            separator = ","
            out.append(name)
            self.value(val, out)
        out.append("}" if separator == "," else "{}")

    def key(self, key: Any, out: list[str]) -> None:
        if isinstance(key, str):
            out.append(_quote(key, self.style))
        elif isinstance(key, enum.Enum):
            out.append(_quote(key.name, self.style))
        elif isinstance(key, bool):
            out.append('"true"' if key else '"false"')
        elif isinstance(key, int | float):
            text = str(key) if isinstance(key, int) else java_double_str(key)
            out.append('"' + text + '"' if self.quote_int_keys else text)
        elif isinstance(key, Mapping) or (dataclasses.is_dataclass(key) and not isinstance(key, type)):
            # fastjson writes the key object itself: {{"brokerName":…}:…}. BrowserCompatible quotes it.
            if self.browser:
                inner: list[str] = []
                self.value(key, inner)
                out.append(_quote("".join(inner), self.style))
            else:
                self.value(key, out)
        else:
            out.append(_quote(str(key), self.style))

    def mapping(self, obj: Mapping[Any, Any], out: list[str]) -> None:
        items: Iterable[tuple[Any, Any]] = obj.items()
        if self.sort_map_keys:
            items = sorted(items, key=lambda kv: _java_key_order(kv[0]))
        out.append("{")
        first = True
        for k, v in items:
            if v is None:  # WriteMapNullValue is off
                continue
            if not first:
                out.append(",")
            first = False
            self.key(k, out)
            out.append(":")
            self.value(v, out)
        out.append("}")


def dumps(
    obj: Any,
    *,
    quote_int_keys: bool = True,
    browser_compatible: bool = False,
    sort_map_keys: bool = False,
    fastjson2: bool = False,
) -> bytes:
    """Write ``obj`` as fastjson would (UTF-8 bytes).

    Dataclasses are beans (fields by Java name, sorted, nulls omitted); Enums by name; dict keys that
    are ints are bare unless ``quote_int_keys``; ObjectKey / dataclass keys in fastjson's object-key
    form. ``browser_compatible`` + ``sort_map_keys`` reproduce the namesrv's "standard JSON" route
    body (``BrowserCompatible`` escapes '/' and all non-ASCII, quotes every key; ``MapSortField``).
    ``fastjson2`` writes as RocketMQ 5.5 does (fastjson2: only control characters escaped, lower-case
    hex; its BrowserCompatible quotes keys and longs beyond 2^53 but escapes nothing more).
    """
    out: list[str] = []
    _Writer(quote_int_keys, browser_compatible, sort_map_keys, fastjson2).value(obj, out)
    return "".join(out).encode("utf-8", "surrogatepass")


_DEFAULT_WRITER = _Writer(quote_int_keys=True, browser=False, sort_map_keys=False, fastjson2=False)


def write(obj: Any, out: list[str]) -> None:
    """Append ``obj`` to ``out`` as :func:`dumps` writes it with its defaults, for writers that lay the
    text out around the values themselves (the store's pretty-printed config files): one writer, no
    bytes round trip per value."""
    _DEFAULT_WRITER.value(obj, out)


# --------------------------------------------------------------------------------------------- loads

_WS = " \t\n\r\f\b"
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[LSBFD]?")
_IDENT = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_SIMPLE_ESCAPES = {
    '"': '"',
    "'": "'",
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "0": "\0",
}


class _Parser:
    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> FastjsonError:
        snippet = self.text[max(0, self.pos - 20) : self.pos + 20]
        return FastjsonError(f"{what} at offset {self.pos} near {snippet!r}")

    def skip_ws(self) -> None:
        text, pos, n = self.text, self.pos, len(self.text)
        while pos < n and text[pos] in _WS:
            pos += 1
        self.pos = pos

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def value(self) -> Any:
        ch = self.peek()
        if ch == "{":
            return self.obj(as_key=False)
        if ch == "[":
            return self.array()
        if ch in "\"'":
            return self.string(ch)
        if ch == "" or ch in ",:]}":
            raise self.fail("value expected")
        number = self.number()
        if number is not None:
            return number
        word = self.ident()
        if word is not None:
            if word == "true":
                return True
            if word == "false":
                return False
            if word in ("null", "undefined"):
                return None
            if word in ("NaN", "Infinity"):
                return float("nan") if word == "NaN" else float("inf")
            raise self.fail(f"unexpected word {word!r}")
        raise self.fail(f"unexpected character {ch!r}")

    def key(self) -> Any:
        ch = self.peek()
        if ch in "\"'":
            return self.string(ch)
        if ch == "{":
            return self.obj(as_key=True)
        if ch == "[":
            return _freeze(self.array())
        number = self.number()
        if number is not None:
            return number
        word = self.ident()
        if word is not None:
            return word
        raise self.fail("object key expected")

    def number(self) -> int | float | None:
        """A number token at the cursor (Java suffixes ``L``, ``F``… allowed), read; None when none."""
        m = _NUMBER.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return _number(m.group())

    def ident(self) -> str | None:
        """A bare word at the cursor (a key, or true/false/null…), read; None when none."""
        m = _IDENT.match(self.text, self.pos)
        if m is None:
            return None
        self.pos = m.end()
        return m.group()

    def obj(self, *, as_key: bool) -> Any:
        self.pos += 1  # '{'
        result: dict[Any, Any] = {}
        while True:
            ch = self.peek()
            if ch == "}":
                self.pos += 1
                break
            if ch == ",":  # fastjson tolerates stray / trailing commas
                self.pos += 1
                continue
            k = self.key()
            if self.peek() != ":":
                raise self.fail("':' expected")
            self.pos += 1
            result[k] = self.value()
            ch = self.peek()
            if ch == ",":
                self.pos += 1
            elif ch != "}":
                raise self.fail("',' or '}' expected")
        return ObjectKey(result) if as_key else result

    def array(self) -> list[Any]:
        self.pos += 1  # '['
        result: list[Any] = []
        while True:
            ch = self.peek()
            if ch == "]":
                self.pos += 1
                return result
            if ch == ",":
                self.pos += 1
                continue
            result.append(self.value())
            ch = self.peek()
            if ch == ",":
                self.pos += 1
            elif ch != "]":
                raise self.fail("',' or ']' expected")

    def string(self, quote: str) -> str:
        text = self.text
        start = self.pos + 1
        end = text.find(quote, start)
        if end < 0:
            raise self.fail("unterminated string")
        chunk = text[start:end]
        if "\\" not in chunk:
            self.pos = end + 1
            return chunk
        parts: list[str] = []
        pos = start
        n = len(text)
        while True:
            if pos >= n:
                raise self.fail("unterminated string")
            bs = text.find("\\", pos)
            q = text.find(quote, pos)
            if q < 0:
                raise self.fail("unterminated string")
            if bs < 0 or q < bs:
                parts.append(text[pos:q])
                self.pos = q + 1
                return _join_surrogates("".join(parts))
            parts.append(text[pos:bs])
            esc = text[bs + 1 : bs + 2]
            if esc == "u":
                hexdigits = text[bs + 2 : bs + 6]
                try:
                    parts.append(chr(int(hexdigits, 16)))
                except ValueError:
                    self.pos = bs
                    raise self.fail("bad \\u escape") from None
                pos = bs + 6
            elif esc == "x":
                try:
                    parts.append(chr(int(text[bs + 2 : bs + 4], 16)))
                except ValueError:
                    self.pos = bs
                    raise self.fail("bad \\x escape") from None
                pos = bs + 4
            elif esc in _SIMPLE_ESCAPES:
                parts.append(_SIMPLE_ESCAPES[esc])
                pos = bs + 2
            else:
                self.pos = bs
                raise self.fail(f"bad escape {esc!r}")


def _number(token: str) -> int | float:
    if token[-1] in "LSBFD":
        suffix, token = token[-1], token[:-1]
        if suffix in "FD":
            return float(token)
    if "." in token or "e" in token or "E" in token:
        return float(token)
    return int(token)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _join_surrogates(s: str) -> str:
    """Java strings are UTF-16: a ``\\uD83D\\uDE00`` escape pair is one character."""
    if _SURROGATE.search(s) is None:
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


# Second fast path: rewrite the bare keys Java writes (integers, identifiers, flat MessageQueue-like
# objects) into marked string keys, let orjson parse, then restore the marked keys. Strings are matched
# first so nothing inside them is touched; anything else unusual falls through to the full parser.
_KEY_MARK_INT = "\x00\x01"
_KEY_MARK_OBJ = "\x00\x02"
_KEY_MARK_INT_JSON = "\\u0000\\u0001"  # the marker as escapes inside JSON text
_BARE_KEYS = re.compile(
    r'"(?:[^"\\]|\\.)*"'  # a string: left alone
    r"|(?<=[{,])([ \t\n\r]*)"  # else, in key position:
    r"(?:(-?[0-9]+)|([A-Za-z_$][A-Za-z0-9_$]*)|(\{[^{}]*\}))"  # integer | identifier | flat object
    r"([ \t\n\r]*):",
    re.DOTALL,
)


def _restore_keys(value: Any) -> Any:
    if isinstance(value, dict):
        restored = {}
        for raw, item in value.items():
            key: Any = raw
            if raw.startswith(_KEY_MARK_INT):
                key = int(raw[2:])
            elif raw.startswith(_KEY_MARK_OBJ):
                key = _freeze(_restore_keys(orjson.loads(raw[2:])))
            restored[key] = _restore_keys(item)
        return restored
    if isinstance(value, list):
        return [_restore_keys(item) for item in value]
    return value


def _quick_lenient(text: str) -> Any:
    marked = False

    def fix(m: re.Match[str]) -> str:
        nonlocal marked
        number, ident, obj = m.group(2), m.group(3), m.group(4)
        if number is not None:
            marked = True
            return f'{m.group(1)}"{_KEY_MARK_INT_JSON}{number}"{m.group(5)}:'
        if ident is not None:
            return f'{m.group(1)}"{ident}"{m.group(5)}:'
        if obj is not None:
            marked = True
            return f"{m.group(1)}{orjson.dumps(_KEY_MARK_OBJ + obj).decode()}{m.group(5)}:"
        return m.group()

    value = orjson.loads(_BARE_KEYS.sub(fix, text))
    return _restore_keys(value) if marked else value


def loads(data: bytes | bytearray | memoryview | str) -> Any:
    """Parse a fastjson-dialect document: standard JSON via orjson, anything else leniently.

    Bare numeric keys become ints, bare identifier keys strings, object keys :class:`ObjectKey`.
    Raises :class:`FastjsonError` when fastjson itself would reject the text.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    # bytes decode as Java's new String(bytes, UTF_8) does: invalid sequences become U+FFFD
    text = data if isinstance(data, str) else bytes(data).decode("utf-8", "replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\x00" not in text and "\\u0000" not in text:  # so the key markers cannot meet real keys
        try:
            return _quick_lenient(text)
        except (orjson.JSONDecodeError, ValueError):
            pass
    parser = _Parser(text)
    try:
        result = parser.value()
    except RecursionError:
        # fastjson gives up on deep nesting too (a JSONException, or a StackOverflowError the broker
        # catches): a body nested past Python's stack is rejected, not a crash of the handler
        raise parser.fail("nesting too deep") from None
    if parser.peek() != "":
        raise parser.fail("trailing characters")
    return result


def to_ints(mapping: Mapping[Any, Any], convert: Callable[[Any], Any] = lambda v: v) -> dict[int, Any]:
    """Keys of a ``Map<Long,…>`` as ints, whether they came quoted (standard JSON) or bare."""
    return {int(k): convert(v) for k, v in mapping.items()}
