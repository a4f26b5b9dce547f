"""Protocol-aware fault injection: rules that match RocketMQ frames and make the proxy (or the twin)
misbehave on purpose.

A rule matches a request (client to broker) or the response to one, by request code, topic, group,
client address and broker, lets its first ``skip`` matches pass, applies with a ``probability`` (seeded,
so a run is reproducible), at most ``count`` times and for ``duration`` seconds. Its effect:

* ``latency`` (``ms``, ``jitter_ms``, ``distribution`` fixed / uniform / normal / exponential) and
  ``bandwidth`` (``kbps``): the frame, and everything after it in that direction, waits;
* ``drop``: the frame is not forwarded (a dropped request or response times the client out);
* ``answer`` (``code``, ``remark``): the request is answered in the broker's place, or the response is
  replaced by one with that code, same opaque;
* ``close`` / ``reset``: the connection is closed (FIN) or reset (RST) at that frame, which is not
  forwarded;
* ``corrupt``: the first message body of a pull answer gets its first byte flipped (its body CRC no
  longer matches: the consumer sees a CRC failure);
* ``duplicate``: the first message record of a pull answer is delivered twice.

Rules are JSON objects (the HTTP API, ``rmqtwin fault``, ``rmqtwin serve --fault``) or keyword
arguments (``rocketmq.faults.add(...)``); :meth:`FaultRule.parse` says what is wrong with a bad one.
The engine keeps no per-frame cost while it has no rule: :attr:`FaultEngine.holding` is checked
once per read by the proxy session, and nothing is decoded.
"""

from __future__ import annotations

import random
import re
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import orjson

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.errors import MessageDecodeError
from rmqtwin.codec.frame import (
    ONEWAY_FLAG,
    PREFIX_SIZE,
    RESPONSE_FLAG,
    frame_prefix,
    split_whole_frame,
    whole_frame_prefix,
)
from rmqtwin.codec.message import SYSFLAG_POSITION, body_length_position, store_host_spans
from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER
from rmqtwin.proxy.session import Close, Command, Delay, Heads, Hook, Send
from rmqtwin.proxy.wire import FrameHead, HeaderPeek, peek_header, peek_summary

__all__ = [
    "BODY_EFFECTS",
    "EFFECTS",
    "PULL_CODES",
    "SHORT_NAMED",
    "ConnectionFilter",
    "FaultEngine",
    "FaultHook",
    "FaultRule",
    "FrameFacts",
    "RuleError",
    "answer_frame",
]

EFFECTS = ("latency", "bandwidth", "drop", "answer", "close", "reset", "corrupt", "duplicate")
_RESPONSE_ONLY = ("corrupt", "duplicate")
DISTRIBUTIONS = ("fixed", "uniform", "normal", "exponential")
PULL_CODES = frozenset((RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE))

TOPIC_FIELDS = ("topic", "b")
"""Ext fields naming the topic (``b`` in SendMessageRequestHeaderV2's short names)."""
GROUP_FIELDS = ("consumerGroup", "producerGroup", "group", "a")
"""Ext fields naming the group (``a`` is the producer group in SendMessageRequestHeaderV2)."""
SHORT_NAMED = frozenset((RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE))


class RuleError(ValueError):
    """A rule that cannot be used, with the reason (HTTP 400)."""


def _code(value: object, enum: type[RequestCode] | type[ResponseCode], what: str) -> int:
    if isinstance(value, bool):
        raise RuleError(f"{what}: {value!r} is not a code")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if value.lstrip("-").isdigit():
            return int(value)
        try:
            return int(enum[value])
        except KeyError:
            raise RuleError(f"{what}: unknown {enum.__name__} {value!r}") from None
    raise RuleError(f"{what}: {value!r} is not a code")


def _number(spec: Mapping[str, object], key: str, default: float | None, *, minimum: float = 0.0) -> float:
    value = spec.get(key, default)
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        raise RuleError(f"{key}: a number is needed, got {value!r}")
    if value < minimum:
        raise RuleError(f"{key}: must be >= {minimum}, got {value!r}")
    return float(value)


def _text(spec: Mapping[str, object], key: str) -> str | None:
    value = spec.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise RuleError(f"{key}: a non-empty string is needed, got {value!r}")
    return value


@dataclass(slots=True)
class FaultRule:
    """One rule; ``hits`` counts the times it applied, ``seen`` the frames it matched."""

    name: str
    effect: str
    direction: str = "request"
    codes: frozenset[int] | None = None
    topic: str | None = None
    group: str | None = None
    client: str | None = None
    broker: str | None = None
    skip: int = 0
    probability: float = 1.0
    count: int | None = None
    duration: float | None = None
    enabled: bool = True
    ms: float = 0.0
    jitter_ms: float = 0.0
    distribution: str = "fixed"
    kbps: float = 0.0
    answer_code: int = ResponseCode.SYSTEM_BUSY
    remark: str | None = None
    seed: int | None = None
    hits: int = 0
    seen: int = 0
    added_at: float = 0.0
    rng: random.Random = field(default_factory=random.Random, repr=False)
    spec: dict[str, object] = field(default_factory=dict, repr=False)

    _KEYS = frozenset((
        "name", "effect", "direction", "codes", "code", "topic", "group", "client", "broker", "skip",
        "probability", "count", "duration", "enabled", "ms", "jitter_ms", "distribution", "kbps",
        "answer_code", "remark", "seed",
    ))  # fmt: skip

    @classmethod
    def parse(cls, spec: Mapping[str, object], *, default_name: str = "") -> FaultRule:
        """A rule from its JSON shape; :class:`RuleError` with the reason when it is not usable."""
        if not isinstance(spec, Mapping):
            raise RuleError("a rule is a JSON object")
        unknown = sorted(set(spec) - cls._KEYS)
        if unknown:
            raise RuleError(f"unknown field(s): {', '.join(unknown)}")
        effect = spec.get("effect")
        if effect not in EFFECTS:
            raise RuleError(f"effect: one of {', '.join(EFFECTS)} is needed, got {effect!r}")
        assert isinstance(effect, str)
        direction = spec.get("direction", "response" if effect in _RESPONSE_ONLY else "request")
        if direction not in ("request", "response"):
            raise RuleError(f"direction: 'request' or 'response', got {direction!r}")
        if effect in _RESPONSE_ONLY and direction != "response":
            raise RuleError(f"effect {effect} changes pull answers: direction must be 'response'")
        name = _text(spec, "name") or default_name
        if not name:
            raise RuleError("name: a non-empty string is needed")
        raw_codes = spec.get("codes", spec.get("code"))
        codes: frozenset[int] | None = None
        if raw_codes is not None:
            items = raw_codes if isinstance(raw_codes, list) else [raw_codes]
            codes = frozenset(_code(c, RequestCode, "codes") for c in items)
        rule = cls(name=name, effect=effect, direction=direction, codes=codes, spec=dict(spec))
        rule.topic, rule.group = _text(spec, "topic"), _text(spec, "group")
        rule.client, rule.broker = _text(spec, "client"), _text(spec, "broker")
        rule.skip = int(_number(spec, "skip", 0))
        rule.probability = _number(spec, "probability", 1.0)
        if rule.probability > 1:
            raise RuleError(f"probability: must be <= 1, got {rule.probability}")
        if spec.get("count") is not None:
            rule.count = int(_number(spec, "count", None, minimum=1))
        if spec.get("duration") is not None:
            rule.duration = _number(spec, "duration", None)
        enabled = spec.get("enabled", True)
        if not isinstance(enabled, bool):
            raise RuleError(f"enabled: true or false, got {enabled!r}")
        rule.enabled = enabled
        if effect == "latency":
            rule.ms = _number(spec, "ms", None)
            rule.jitter_ms = _number(spec, "jitter_ms", 0.0)
            distribution = spec.get("distribution", "fixed")
            if distribution not in DISTRIBUTIONS:
                raise RuleError(f"distribution: one of {', '.join(DISTRIBUTIONS)}, got {distribution!r}")
            rule.distribution = str(distribution)
        elif effect == "bandwidth":
            rule.kbps = _number(spec, "kbps", None, minimum=0.001)
        elif effect == "answer":
            rule.answer_code = _code(spec.get("answer_code", "SYSTEM_BUSY"), ResponseCode, "answer_code")
            remark = spec.get("remark")
            if remark is not None and not isinstance(remark, str):
                raise RuleError(f"remark: a string is needed, got {remark!r}")
            rule.remark = remark
        seed = spec.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise RuleError(f"seed: an integer is needed, got {seed!r}")
        rule.seed = seed
        rule.rng = random.Random(seed)
        return rule

    def to_json(self) -> dict[str, object]:
        return {**self.spec, "name": self.name, "enabled": self.enabled, "hits": self.hits, "seen": self.seen}

    def latency_seconds(self) -> float:
        base, jitter, rng = self.ms, self.jitter_ms, self.rng
        if self.distribution == "uniform":
            ms = base + rng.uniform(-jitter, jitter)
        elif self.distribution == "normal":
            ms = rng.gauss(base, jitter)
        elif self.distribution == "exponential":
            ms = rng.expovariate(1.0 / base) if base > 0 else 0.0
        else:
            ms = base
        return max(ms, 0.0) / 1000.0


@dataclass(frozen=True, slots=True)
class FrameFacts:
    """What a rule matches on, for one request (or the request a response answers)."""

    code: int
    topic: str | None
    group: str | None

    @classmethod
    def of(cls, code: int, ext: Mapping[str, str] | None) -> FrameFacts:
        if not ext:
            return cls(code, None, None)
        short = code in SHORT_NAMED
        group = next((ext[f] for f in GROUP_FIELDS if f in ext and (short or f != "a")), None)
        # a JSON header decoded as it is may hold a number where Java writes a string
        return cls(code, topic_of(code, ext), group if group is None or type(group) is str else str(group))

    @classmethod
    def of_request(cls, frame: bytes) -> tuple[FrameFacts, int, int, int] | None:
        """(facts, opaque, flag, serialize type) of a request frame (length word included); None for a
        response or what is not a frame. This runs for every request a rule may match."""
        header = header_fields_of(frame)
        if header is None:
            return None
        serialize_type, code, opaque, flag, ext = header
        if flag & RESPONSE_FLAG:
            return None
        return cls.of(code, ext), opaque, flag, serialize_type


def topic_of(code: int, ext: Mapping[str, str] | None) -> str | None:
    """The topic a request names (``topic``, or ``b`` in SendMessageRequestHeaderV2's short names)."""
    if not ext:
        return None
    topic = ext.get("topic")
    if topic is None and code in SHORT_NAMED:
        topic = ext.get("b")
    # a JSON header decoded as it is may hold a number where Java writes a string
    return topic if topic is None or type(topic) is str else str(topic)


def header_fields_of(frame: bytes) -> tuple[int, int, int, int, Mapping[str, str] | None] | None:
    """(serialize type, code, opaque, flag, ext fields) of a whole frame (length word included), None
    for what is not one: one ``orjson.loads`` of a JSON header, nothing copied but the header."""
    prefix = whole_frame_prefix(frame)
    if prefix is None:
        return None
    serialize_type, header_length = prefix
    if serialize_type == 0:
        try:
            obj = orjson.loads(frame[PREFIX_SIZE : PREFIX_SIZE + header_length])
            code, opaque = int(obj.get("code", 0)), int(obj.get("opaque", 0))
            flag = int(obj.get("flag", 0))
        except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
            return None
        ext = obj.get("extFields")
        if ext is not None and not isinstance(ext, dict):
            return None
        return 0, code, opaque, flag, ext
    peek = peek_header(frame)
    if peek is None:
        return None
    return serialize_type, peek.code, peek.opaque, peek.flag, peek.ext_fields


class FaultEngine:
    """The rules of one proxy or twin, changed at run time; shared by every connection's hook."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.rules: dict[str, FaultRule] = {}
        self.holding: dict[str, bool] = {"request": False, "response": False}
        """Whether any enabled rule looks at requests / responses: the only check made per read."""
        self.on_hit: list[Callable[[FaultRule], None]] = []
        self._active: dict[str, tuple[FaultRule, ...]] = {"request": (), "response": ()}
        """The enabled rules of each direction, in order: what match() walks."""
        self.generation = 0
        """Moves on each change of the rules: each connection's :class:`ConnectionFilter` is then
        worked out again."""

    def add(self, spec: Mapping[str, object] | FaultRule) -> FaultRule:
        rule = spec if isinstance(spec, FaultRule) else FaultRule.parse(spec, default_name=self._name())
        if rule.name in self.rules:
            raise RuleError(f"name: a rule named {rule.name!r} exists already")
        rule.added_at = self.clock()
        self.rules[rule.name] = rule
        self._changed()
        return rule

    def _name(self) -> str:
        n = len(self.rules) + 1
        while f"rule{n}" in self.rules:
            n += 1
        return f"rule{n}"

    def remove(self, name: str) -> FaultRule:
        rule = self.rules.pop(name)
        self._changed()
        return rule

    def set_enabled(self, name: str, enabled: bool) -> FaultRule:
        rule = self.rules[name]
        rule.enabled = enabled
        self._changed()
        return rule

    def reset(self) -> None:
        self.rules.clear()
        self._changed()

    def _changed(self) -> None:
        for direction in ("request", "response"):
            active = tuple(r for r in self.rules.values() if r.enabled and r.direction == direction)
            self._active[direction] = active
            self.holding[direction] = bool(active)
        self.generation += 1

    def connection_filter(self, client: str, broker: str) -> ConnectionFilter:
        """What the enabled rules may match on the connection of ``client`` through ``broker``."""
        return ConnectionFilter(self._active["request"] + self._active["response"], client, broker)

    def match(
        self, direction: str, facts: FrameFacts, client: str, broker: str, *, answer_code: int | None = None
    ) -> FaultRule | None:
        """The first enabled rule matching this frame that applies now (its limits and dice allowing).

        ``answer_code`` is the response's code: ``corrupt`` and ``duplicate`` match only successful pull
        answers (a pull answered PULL_NOT_FOUND has no message to change, so it is not counted).
        """
        now = self.clock()
        for rule in self._active[direction]:
            if rule.duration is not None and now - rule.added_at >= rule.duration:
                continue
            if rule.count is not None and rule.hits >= rule.count:
                continue
            if rule.codes is not None and facts.code not in rule.codes:
                continue
            if rule.topic is not None and facts.topic != rule.topic:
                continue
            if rule.group is not None and facts.group != rule.group:
                continue
            if rule.client is not None and not _address_matches(rule.client, client):
                continue
            if rule.broker is not None and not _address_matches(rule.broker, broker):
                continue
            if rule.effect in BODY_EFFECTS and (
                facts.code not in PULL_CODES or answer_code != ResponseCode.SUCCESS
            ):
                continue
            rule.seen += 1
            if rule.seen <= rule.skip:
                continue
            if rule.probability < 1.0 and rule.rng.random() >= rule.probability:
                continue
            rule.hits += 1
            for hit in self.on_hit:
                hit(rule)
            return rule
        return None


def _address_matches(pattern: str, address: str) -> bool:
    """``host`` matches any port of that host; ``host:port`` only that one."""
    return address == pattern or address.rpartition(":")[0].strip("[]") == pattern


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_%|.\-]+")
_JSON_CODE = b'{"code":'
_JSON_CODE_AT = PREFIX_SIZE + len(_JSON_CODE)
_UNSEEN: tuple[bytes, ...] = (b"",)
"""A code :attr:`ConnectionFilter.by_text` has not met (told apart by identity)."""
_I16 = struct.Struct(">h")


class ConnectionFilter:
    """Which frames of one connection any enabled rule may match, worked out once per rule set for
    that connection's client and broker (a rule for another address is left out here).

    Per request code, what admits a frame (it is then decoded and matched exactly): ``None`` admits
    every frame of that code (some rule names no plain topic or group), a tuple of plain names admits a
    frame whose header holds one of them as bytes (``bytes.find``, several times quicker than a regular
    expression), an empty tuple admits none. A frame no rule may match costs one dict look-up and, for
    a code some rule names, a few ``bytes.find``.
    """

    __slots__ = ("by_code", "by_text", "other", "requests", "responses", "unknown")

    def __init__(self, rules: Sequence[FaultRule], client: str, broker: str) -> None:
        rules = [
            r
            for r in rules
            if (r.client is None or _address_matches(r.client, client))
            and (r.broker is None or _address_matches(r.broker, broker))
        ]
        self.requests = any(r.direction == "request" for r in rules)
        """Whether a request rule may match this connection (its requests are then held)."""
        self.responses = any(r.direction == "response" for r in rules)
        """Whether a response rule may (the requests it may match are then remembered)."""
        codes = {c for r in rules if r.codes is not None for c in r.codes}
        self.by_code = {c: _needles([r for r in rules if r.codes is None or c in r.codes]) for c in codes}
        self.other = _needles([r for r in rules if r.codes is None])
        """Frames of a code no rule names."""
        self.unknown = _needles(rules)
        """Frames whose code was not where expected."""
        self.by_text: dict[bytes, tuple[bytes, ...] | None] = {}
        """The same by a JSON header's code as written (``310``), filled as codes are met: a JSON
        frame's look-up needs no ``int()``."""

    def admits(self, frame: bytes) -> bool:
        """Whether any rule may match this request frame (length word included)."""
        prefix = whole_frame_prefix(frame)
        if prefix is None:
            return False
        serialize_type, header_length = prefix
        needles: tuple[bytes, ...] | None = _UNSEEN
        text = b""
        if serialize_type == 0 and frame.startswith(_JSON_CODE, PREFIX_SIZE):
            comma = frame.find(b",", _JSON_CODE_AT, _JSON_CODE_AT + 8)
            if comma > 0:
                text = frame[_JSON_CODE_AT:comma]
                needles = self.by_text.get(text, _UNSEEN)
        if needles is _UNSEEN:
            code = quick_code(frame, serialize_type, header_length)
            needles = self.unknown if code is None else self.by_code.get(code, self.other)
            if code is not None and text and len(self.by_text) < 256:
                self.by_text[text] = needles
        if needles is None:
            return True
        end = PREFIX_SIZE + header_length
        for name in needles:  # noqa: SIM110 - a loop: any() over a generator costs more, per frame
            if frame.find(name, PREFIX_SIZE, end) >= 0:
                return True
        return False


def _needles(rules: Sequence[FaultRule]) -> tuple[bytes, ...] | None:
    """One plain name of each rule (a frame that lacks any one of a rule's names cannot match it);
    None when a rule has none to search for (a name JSON would escape, or no name at all)."""
    needles: list[bytes] = []
    for rule in rules:
        plain = [n.encode() for n in (rule.topic, rule.group) if n is not None and _PLAIN_NAME.fullmatch(n)]
        if not plain:
            return None
        needles.append(plain[0])
    return tuple(dict.fromkeys(needles))


def quick_code(frame: bytes, serialize_type: int, header_length: int) -> int | None:
    """The code of a frame without decoding its header: at a fixed place in a binary header, first in a
    JSON header as Java's fastjson writes it (keys sorted); None when it is not where expected."""
    if serialize_type == 1:
        return int(_I16.unpack_from(frame, PREFIX_SIZE)[0]) if header_length >= 2 else None
    if frame.startswith(_JSON_CODE, PREFIX_SIZE):
        start = PREFIX_SIZE + len(_JSON_CODE)
        comma = frame.find(b",", start, start + 8)
        digits = frame[start:comma]
        if comma > 0 and digits.isdigit():
            return int(digits)
    return None


_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")


def answer_frame(peek: HeaderPeek, code: int, remark: str | None) -> bytes:
    """A response to the request ``peek`` with ``code`` and ``remark``, in the request's serialization."""
    from rmqtwin.codec.codes import SerializeType
    from rmqtwin.codec.command import RemotingCommand, encode_command

    command = RemotingCommand(
        code=code,
        opaque=peek.opaque,
        flag=RESPONSE_FLAG,
        remark=remark,
        serialize_type=SerializeType(peek.serialize_type),
    )
    return encode_command(command)


def _has_records(body: bytes) -> bool:
    """Whether a pull answer's body is message records, one at least (the effects below change the
    first one)."""
    try:
        return bool(store_host_spans(body))
    except MessageDecodeError:
        return False


def corrupt_body(body: bytes) -> bytes | None:
    """A pull answer's body with the first byte of its first message body flipped (its body CRC no
    longer matches); None when there is no message body to corrupt."""
    if not _has_records(body):
        return None
    length_at = body_length_position(_I32.unpack_from(body, SYSFLAG_POSITION)[0])
    if _I32.unpack_from(body, length_at)[0] <= 0:
        return None
    out = bytearray(body)
    out[length_at + 4] ^= 0xFF
    return bytes(out)


def duplicate_body(body: bytes) -> bytes | None:
    """A pull answer's body with its first message record twice; None without a record."""
    if not _has_records(body):
        return None
    return body[: _U32.unpack_from(body, 0)[0]] + body


BODY_EFFECTS: dict[str, Callable[[bytes], bytes | None]] = {
    "corrupt": corrupt_body,
    "duplicate": duplicate_body,
}


def _with_body(frame: bytes, change: Callable[[bytes], bytes | None]) -> bytes | None:
    parts = split_whole_frame(frame)
    if parts is None:
        return None
    serialize_type, header, body = parts
    new = change(body)
    if new is None:
        return None
    return frame_prefix(len(header), len(new), serialize_type) + header + new


class FaultHook(Hook):
    """One connection's view of a :class:`FaultEngine`: applies matching rules to its frames.

    Responses are matched by the request they answer (its opaque, remembered while response rules
    exist), so "drop the answers to PULL_MESSAGE of topic T" works.
    """

    def __init__(self, engine: FaultEngine, client: str, broker: str) -> None:
        self.engine = engine
        self.client = client
        self.broker = broker
        self.requests: dict[int, FrameFacts] = {}
        self._filter = engine.connection_filter(client, broker)
        self._generation = engine.generation

    def connection_filter(self) -> ConnectionFilter:
        """This connection's filter for the rules as they are now."""
        engine = self.engine
        if self._generation != engine.generation:
            self._filter = engine.connection_filter(self.client, self.broker)
            self._generation = engine.generation
        return self._filter

    def holds(self, direction: int) -> bool:
        if direction == DIR_TO_SERVER:
            return self.connection_filter().requests
        # answers are held only while a request a response rule may match waits for one (checked on a
        # frame boundary: such a request was remembered before its answer's first byte came)
        return bool(self.requests) and self.connection_filter().responses

    def observe(
        self, direction: int, frames: list[bytes], heads: Heads | None, flags: int, out: list[Command]
    ) -> None:
        # requests that were not held (no request rule) are remembered here, held ones in frame()
        if direction == DIR_TO_SERVER and not flags:
            rules = self.connection_filter()
            if rules.responses and not rules.requests:
                for frame in frames:
                    if rules.admits(frame):
                        self._remember(frame)

    def _remember(self, frame: bytes) -> tuple[HeaderPeek, FrameFacts] | None:
        seen = FrameFacts.of_request(frame)
        if seen is None:
            return None
        facts, opaque, flag, serialize_type = seen
        if not flag & ONEWAY_FLAG and self._filter.responses:
            self.requests[opaque] = facts
            if len(self.requests) > 65536:  # answers that never came: forget the oldest
                del self.requests[next(iter(self.requests))]
        return HeaderPeek(serialize_type, facts.code, opaque, flag), facts

    def frame(self, direction: int, frame: bytes, head: FrameHead | None, out: list[Command]) -> bytes | None:
        if direction == DIR_TO_SERVER:
            rules = self._filter if self._generation == self.engine.generation else self.connection_filter()
            if not rules.admits(frame):
                return frame
            seen = self._remember(frame)
            if seen is None:
                return frame
            peek, facts = seen
            rule = self.engine.match("request", facts, self.client, self.broker)
        else:
            if not self.requests:  # no request a response rule may match is waiting for its answer
                return frame
            summary = peek_summary(frame)  # (serialize type, code, opaque, flag): no ext fields copied
            if summary is None or not summary[3] & RESPONSE_FLAG:
                return frame
            request = self.requests.pop(summary[2], None)
            if request is None:
                return frame
            peek, facts = HeaderPeek(*summary), request
            rule = self.engine.match("response", facts, self.client, self.broker, answer_code=peek.code)
        if rule is None:
            return frame
        return self._apply(rule, direction, frame, peek, facts, out)

    def _apply(  # noqa: PLR0917 - one branch per effect
        self,
        rule: FaultRule,
        direction: int,
        frame: bytes,
        peek: HeaderPeek,
        facts: FrameFacts,
        out: list[Command],
    ) -> bytes | None:
        effect = rule.effect
        if effect == "latency":
            out.append(Delay(direction, rule.latency_seconds()))
            return frame
        if effect == "bandwidth":
            out.append(Delay(direction, len(frame) * 8 / (rule.kbps * 1000)))
            return frame
        if effect == "drop":
            return None
        if effect == "answer":
            remark = rule.remark if rule.remark is not None else f"[fault {rule.name}]"
            answer = answer_frame(peek, rule.answer_code, remark)
            if direction == DIR_TO_SERVER:
                if not peek.is_oneway:
                    out.append(Send(DIR_TO_CLIENT, answer))
                return None
            return answer
        if effect in ("close", "reset"):
            out.append(Close(f"fault {rule.name}: {effect}", abort=effect == "reset"))
            return None
        changed = _with_body(frame, BODY_EFFECTS[effect])  # a successful pull answer (see match)
        return frame if changed is None else changed
