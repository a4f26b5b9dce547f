"""Typed custom headers: the ``extFields`` of each request and response, as dataclasses.

Java turns a ``CommandCustomHeader`` into ``extFields`` by writing every non-null field of the class and
its superclasses as ``String.valueOf(value)`` (``RemotingCommand.makeCustomHeaderToNet``); primitives
(``boolean``/``int``/``long``) are never null, so Java always sends them. Here:

* attributes are snake_case; the wire name is the camelCase form (``consumer_group`` → ``consumerGroup``)
  unless the field says otherwise (``field(metadata={"wire": "clientID"})``);
* a field without a default is ``@CFNotNull`` (required); ``X | None = None`` is a nullable boxed field;
  ``bool = False`` / ``int = 0`` are Java primitives, always written;
* ``int`` fields are Java ``Integer`` (32-bit), :data:`Long` fields Java ``Long``; booleans travel as
  ``"true"``/``"false"`` and parse like ``Boolean.parseBoolean`` (anything but "true" is false).

What the real broker does with a bad header (4.9.8 and 5.3.3 ``RemotingCommand.decodeCommandCustomHeader``):
a missing ``@CFNotNull`` field or an unparsable number is only *logged* ("the custom field <x> is null")
and left null; the processor then fails on it, and ``NettyRemotingAbstract`` answers ``SYSTEM_ERROR`` (1)
with ``exception.toString()`` plus the first stack frame as remark (an NPE, or for the FastCodesHeader
classes, whose ``decode`` parses without catching, ``java.lang.NumberFormatException: For input string:
"x"``). :func:`from_ext_fields` therefore raises :class:`HeaderFieldError` carrying that response code and
a remark of the same shape (the field name where Java prints a stack frame); pass ``strict=False`` to
decode like Java instead (missing/unparsable fields left ``None``).

Observed on real 4.9.7 and 5.5.0 brokers (JDK 17): GET_MAX_OFFSET without ``queueId`` or with
``queueId=x`` → 1, ``java.lang.NullPointerException: Cannot invoke "java.lang.Integer.intValue()" because
the return value of "…GetMaxOffsetRequestHeader.getQueueId()" is null, …AdminBrokerProcessor…``;
SEND_MESSAGE_V2 with ``d=x`` → 1, ``java.lang.NumberFormatException: For input string: "x", …``. But a
processor's own checks may come first: SEND_MESSAGE_V2 without ``b`` → 1 ``The specified topic is blank.``
(4.9.7; an NPE in 5.5.0); PULL_MESSAGE without ``queueOffset`` → 24 (the group check runs first);
GET_ROUTEINFO_BY_TOPIC without ``topic`` → 17 for topic "null". A server that must match those decodes with
``strict=False`` and lets its processor meet the ``None``.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, TypeVar, Union

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.errors import HeaderFieldError
from rmqtwin.codec.fastjson import java_double_str, wire_name

__all__ = [
    "REQUEST_HEADERS",
    "RESPONSE_HEADERS",
    "AckMessageRequestHeader",
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "ChangeInvisibleTimeRequestHeader",
    "ChangeInvisibleTimeResponseHeader",
    "CheckTransactionStateRequestHeader",
    "CloneGroupOffsetRequestHeader",
    "CommandCustomHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "CreateTopicRequestHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "DeleteTopicRequestHeader",
    "EmptyHeader",
    "EndTransactionRequestHeader",
    "GetAllSubscriptionGroupRequestHeader",
    "GetAllSubscriptionGroupResponseHeader",
    "GetAllTopicConfigRequestHeader",
    "GetAllTopicConfigResponseHeader",
    "GetBrokerConfigResponseHeader",
    "GetConsumeStatsInBrokerHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetConsumerStatusRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "GetProducerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetSubscriptionGroupConfigRequestHeader",
    "GetTopicConfigRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "HeartbeatRequestHeader",
    "HeartbeatResponseHeader",
    "LockBatchMqRequestHeader",
    "Long",
    "NotificationRequestHeader",
    "NotificationResponseHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "PeekMessageRequestHeader",
    "PollingInfoRequestHeader",
    "PollingInfoResponseHeader",
    "PopMessageRequestHeader",
    "PopMessageResponseHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PutKVConfigRequestHeader",
    "QueryConsumeQueueRequestHeader",
    "QueryConsumeTimeSpanRequestHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryCorrectionOffsetHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "QuerySubscriptionByConsumerRequestHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "QueryTopicsByConsumerRequestHeader",
    "RecallMessageRequestHeader",
    "RecallMessageResponseHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "RegisterTopicRequestHeader",
    "ReplyMessageRequestHeader",
    "ResetOffsetRequestHeader",
    "ResumeCheckHalfMessageRequestHeader",
    "RpcRequestHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "TopicRequestHeader",
    "UnRegisterBrokerRequestHeader",
    "UnlockBatchMqRequestHeader",
    "UnregisterClientRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "UpdateGroupForbiddenRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
    "ViewMessageRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "decode_request_header",
    "decode_response_header",
    "from_ext_fields",
    "header_fields",
    "send_v1_to_v2",
    "send_v2_as_v1",
    "send_v2_to_v1",
    "to_ext_fields",
]

_LONG = "long"
Long = Annotated[int, _LONG]
"""A Java ``long``/``Long`` header field (64-bit); plain ``int`` fields are Java ``Integer`` (32-bit)."""

H = TypeVar("H", bound="CommandCustomHeader")


def _wire(name: str) -> Any:
    """Metadata for a required field whose Java name is not the camelCase of the attribute."""
    return field(metadata={"wire": name})


def _wire_opt(name: str, default: Any = None) -> Any:
    return field(default=default, metadata={"wire": name})


# --------------------------------------------------------------------------------------------- machinery

_KIND_STR, _KIND_INT, _KIND_LONG, _KIND_BOOL, _KIND_DOUBLE = range(5)
_INT_RE = re.compile(r"[+-]?[0-9]+\Z")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    attr: str
    wire: str
    kind: int
    required: bool
    default: Any


_SPECS: dict[type, tuple[_FieldSpec, ...]] = {}


def _kind_of(hint: Any) -> int:
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        non_none = [a for a in args if a is not type(None)]
        return _kind_of(non_none[0])
    if origin is Annotated:
        return _KIND_LONG if _LONG in args[1:] else _kind_of(args[0])
    if hint is str:
        return _KIND_STR
    if hint is bool:
        return _KIND_BOOL
    if hint is int:
        return _KIND_INT
    if hint is float:
        return _KIND_DOUBLE
    raise TypeError(f"unsupported header field type {hint!r}")


def header_fields(cls: type[CommandCustomHeader]) -> tuple[_FieldSpec, ...]:
    """Per-class field table (attribute, wire name, kind, required), built once."""
    specs = _SPECS.get(cls)
    if specs is None:
        hints = typing.get_type_hints(cls, include_extras=True)
        built = []
        for f in dataclasses.fields(cls):
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            default = None if required else f.default
            built.append(_FieldSpec(f.name, wire_name(f), _kind_of(hints[f.name]), required, default))
        specs = tuple(built)
        _SPECS[cls] = specs
    return specs


def _to_wire(kind: int, value: Any) -> str:
    if kind == _KIND_STR:
        return value if isinstance(value, str) else str(value)
    if kind == _KIND_BOOL:
        return "true" if value else "false"
    if kind == _KIND_DOUBLE:
        return java_double_str(float(value))
    return str(int(value))


_ENCODERS: dict[type, Callable[[Any], dict[str, str]]] = {}

_WIRE_EXPRESSIONS = {
    _KIND_STR: "v if type(v) is str else to_wire({kind}, v)",
    _KIND_INT: "str(v) if type(v) is int else to_wire({kind}, v)",
    _KIND_LONG: "str(v) if type(v) is int else to_wire({kind}, v)",
    _KIND_BOOL: '"true" if v else "false"',
    _KIND_DOUBLE: "to_wire({kind}, v)",
}


def _encoder(cls: type[CommandCustomHeader]) -> Callable[[Any], dict[str, str]]:
    """``to_ext_fields`` written for ``cls`` (one straight line of code per field), built once: the
    answer to every send and pull is made with one, and the generic loop cost a call per field."""
    found = _ENCODERS.get(cls)
    if found is not None:
        return found
    lines = ["def encode(header):", "    ext = {}"]
    for spec in header_fields(cls):
        value = _WIRE_EXPRESSIONS[spec.kind].format(kind=spec.kind)
        lines.append(f"    v = header.{spec.attr}")
        lines.append("    if v is not None:")
        lines.append(f"        ext[{spec.wire!r}] = {value}")
    lines.append("    return ext")
    names: dict[str, Any] = {"to_wire": _to_wire}
    exec(compile("\n".join(lines), f"<header encoder {cls.__name__}>", "exec"), names)
    encoder: Callable[[Any], dict[str, str]] = names["encode"]
    _ENCODERS[cls] = encoder
    return encoder


def to_ext_fields(header: CommandCustomHeader) -> dict[str, str]:
    """``makeCustomHeaderToNet``: every non-None field as a string, by its Java name."""
    return _encoder(type(header))(header)


class _BadValueError(Exception):
    pass


def _parse(kind: int, text: str) -> Any:
    if kind == _KIND_STR:
        return text
    if kind == _KIND_BOOL:
        return text.lower() == "true"  # Boolean.parseBoolean never fails
    if kind == _KIND_DOUBLE:
        try:
            return float(text.strip().rstrip("dDfF"))
        except ValueError:
            raise _BadValueError from None
    if _INT_RE.match(text) is None or len(text.lstrip("+-").lstrip("0")) > 19:  # beyond any long
        raise _BadValueError
    number = int(text)
    low, high = (_INT_MIN, _INT_MAX) if kind == _KIND_INT else (_LONG_MIN, _LONG_MAX)
    if not low <= number <= high:
        raise _BadValueError
    return number


def _parse_or_raise(kind: int, text: str, wire: str) -> Any:
    try:
        return _parse(kind, text)
    except _BadValueError:
        raise HeaderFieldError.unparsable(wire, text) from None


def _parse_or_default(kind: int, text: str, default: Any) -> Any:
    try:
        return _parse(kind, text)
    except _BadValueError:
        return default


_DECODERS: dict[tuple[type, bool, type | None], Callable[[Mapping[str, str]], Any]] = {}
_SAFE_DIGITS = {_KIND_INT: len(str(_INT_MAX)) - 1, _KIND_LONG: len(str(_LONG_MAX)) - 1}
"""Digit counts every number of which fits the kind: 9 (< 2^31 - 1), 18 (< 2^63 - 1)."""


def _decoder(
    cls: type[H], strict: bool, into: type | None = None, rename: Mapping[str, str | None] | None = None
) -> Callable[[Mapping[str, str]], H]:
    """A decoder function written for ``cls`` (one straight line of code per field), built once.

    Decoding headers is on the broker's hot path; a generic loop over the field table with a call per
    field cost several times more for a 13-field send header. With ``into``, the fields are read and
    checked as ``cls`` declares them but an ``into`` is built, each attribute renamed by ``rename``
    (``None``: read, checked, not kept), so a header converted on arrival is built only once.
    """
    key = (cls, strict, into)
    found = _DECODERS.get(key)
    if found is not None:
        return found
    renamed = rename or {}
    names: dict[str, Any] = {
        "cls": into or cls,
        "missing": HeaderFieldError.missing,
        "parse": _parse_or_raise if strict else _parse_or_default,
    }
    lines = ["def decode(ext):", "    get = ext.get"]
    args = []
    for i, spec in enumerate(header_fields(cls)):
        var = f"v{i}"
        names[f"d{i}"] = spec.default
        fallback = repr(spec.wire) if strict else f"d{i}"
        lines.append(f"    {var} = get({spec.wire!r})")
        lines.append(f"    if {var} is None:")
        if spec.required and strict:
            lines.append(f"        raise missing({spec.wire!r})")
        elif spec.required:
            lines.append("        pass")
        else:
            lines.append(f"        {var} = d{i}")
        if spec.kind == _KIND_STR:
            pass
        elif spec.kind in (_KIND_INT, _KIND_LONG):
            # The common case without the regex: plain ASCII digits too few to leave the range (9 for
            # an int, 18 for a long); signs, longer numbers and the rest as _parse reads them.
            digits = _SAFE_DIGITS[spec.kind]
            lines.append(f"    elif len({var}) <= {digits} and {var}.isdigit() and {var}.isascii():")
            lines.append(f"        {var} = int({var})")
            lines.append("    else:")
            lines.append(f"        {var} = parse({spec.kind}, {var}, {fallback})")
        else:
            lines.append("    else:")
            lines.append(f"        {var} = parse({spec.kind}, {var}, {fallback})")
        attr = renamed.get(spec.attr, spec.attr)
        if attr is not None:
            args.append(f"{attr}={var}")
    lines.append(f"    return cls({', '.join(args)})")
    exec(compile("\n".join(lines), f"<header decoder {cls.__name__}>", "exec"), names)
    decoder: Callable[[Mapping[str, str]], H] = names["decode"]
    _DECODERS[key] = decoder
    return decoder


def from_ext_fields(cls: type[H], ext: Mapping[str, str] | None, *, strict: bool = True) -> H:
    """Decode ``ext`` into ``cls``. Unknown keys are ignored, as in Java.

    ``strict`` (default): a missing required field or an unparsable value raises
    :class:`HeaderFieldError` naming the field. ``strict=False`` behaves like Java's decoder: the field
    keeps its default, or ``None`` when it has none (so a required ``str`` field may hold ``None``).
    """
    return _decoder(cls, strict)(ext if ext is not None else {})


# --------------------------------------------------------------------------------------------- bases


@dataclass(slots=True, kw_only=True)
class CommandCustomHeader:
    """Base of every header (Java ``CommandCustomHeader``)."""


@dataclass(slots=True, kw_only=True)
class EmptyHeader(CommandCustomHeader):
    """A header class without fields (responses made with one carry ``extFields:{}``)."""


@dataclass(slots=True, kw_only=True)
class RpcRequestHeader(CommandCustomHeader):
    """4.9.5+: ``bname``; 5.x adds namespace ``ns``, namespaced ``nsd`` and oneway ``oway``."""

    ns: str | None = None
    nsd: bool | None = None
    bname: str | None = None
    oway: bool | None = None


@dataclass(slots=True, kw_only=True)
class TopicRequestHeader(RpcRequestHeader):
    """5.x: ``lo`` (logical, static topics). ``TopicQueueRequestHeader`` adds no field."""

    lo: bool | None = None


# --------------------------------------------------------------------------------------------- send


@dataclass(slots=True, kw_only=True)
class SendMessageRequestHeader(TopicRequestHeader):
    """SEND_MESSAGE (10) and SEND_REPLY_MESSAGE (324). ``batch`` makes the broker parse a batch body."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool | None = False
    batch: bool | None = False
    max_reconsume_times: int | None = None


@dataclass(slots=True, kw_only=True)
class SendMessageRequestHeaderV2(TopicRequestHeader):
    """SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320), SEND_REPLY_MESSAGE_V2 (325): one letter per V1 field.

    Java 4.9.x declares ``k``/``m`` as primitive booleans (always sent); 5.x boxes them.
    """

    a: str  # producerGroup
    b: str  # topic
    c: str  # defaultTopic
    d: int  # defaultTopicQueueNums
    e: int  # queueId
    f: int  # sysFlag
    g: Long  # bornTimestamp
    h: int  # flag
    i: str | None = None  # properties
    j: int | None = None  # reconsumeTimes
    k: bool | None = False  # unitMode
    l: int | None = None  # noqa: E741 (maxReconsumeTimes)
    m: bool | None = False  # batch
    n: str | None = None  # brokerName (4.9.5+)


_RPC_ATTRS = ("ns", "nsd", "oway", "lo")


def send_v2_to_v1(v2: SendMessageRequestHeaderV2) -> SendMessageRequestHeader:
    """``createSendMessageRequestHeaderV1`` (``n`` becomes ``bname``); ns/nsd/oway/lo are kept too."""
    v1 = SendMessageRequestHeader(
        producer_group=v2.a,
        topic=v2.b,
        default_topic=v2.c,
        default_topic_queue_nums=v2.d,
        queue_id=v2.e,
        sys_flag=v2.f,
        born_timestamp=v2.g,
        flag=v2.h,
        properties=v2.i,
        reconsume_times=v2.j,
        unit_mode=v2.k,
        max_reconsume_times=v2.l,
        batch=v2.m,
        bname=v2.n,
    )
    for attr in _RPC_ATTRS:
        setattr(v1, attr, getattr(v2, attr))
    return v1


_V2_AS_V1: dict[str, str | None] = {
    "a": "producer_group",
    "b": "topic",
    "c": "default_topic",
    "d": "default_topic_queue_nums",
    "e": "queue_id",
    "f": "sys_flag",
    "g": "born_timestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsume_times",
    "k": "unit_mode",
    "l": "max_reconsume_times",
    "m": "batch",
    "n": "bname",
    "bname": None,  # the V2 header's own bname is not carried over
}


def send_v2_as_v1(ext: Mapping[str, str] | None, *, strict: bool = True) -> SendMessageRequestHeader:
    """``send_v2_to_v1(from_ext_fields(SendMessageRequestHeaderV2, ext))`` in one step: the V2 fields
    read and checked as V2 declares them, straight into the V1 header (the send path's conversion)."""
    decode = _decoder(SendMessageRequestHeaderV2, strict, SendMessageRequestHeader, _V2_AS_V1)
    header: SendMessageRequestHeader = decode(ext if ext is not None else {})  # type: ignore[assignment]
    return header


def send_v1_to_v2(v1: SendMessageRequestHeader) -> SendMessageRequestHeaderV2:
    """``createSendMessageRequestHeaderV2`` (``bname`` becomes ``n``); ns/nsd/oway/lo are kept too."""
    v2 = SendMessageRequestHeaderV2(
        a=v1.producer_group,
        b=v1.topic,
        c=v1.default_topic,
        d=v1.default_topic_queue_nums,
        e=v1.queue_id,
        f=v1.sys_flag,
        g=v1.born_timestamp,
        h=v1.flag,
        i=v1.properties,
        j=v1.reconsume_times,
        k=v1.unit_mode,
        l=v1.max_reconsume_times,
        m=v1.batch,
        n=v1.bname,
    )
    for attr in _RPC_ATTRS:
        setattr(v2, attr, getattr(v1, attr))
    return v2


@dataclass(slots=True, kw_only=True)
class SendMessageResponseHeader(CommandCustomHeader):
    """Send response. The broker adds ``MSG_REGION`` and ``TRACE_ON`` (the Java client reads them)."""

    msg_id: str
    queue_id: int
    queue_offset: Long
    transaction_id: str | None = None
    batch_uniq_id: str | None = None  # 5.x
    recall_handle: str | None = None  # 5.x
    msg_region: str | None = _wire_opt("MSG_REGION")
    trace_on: bool | None = _wire_opt("TRACE_ON")


@dataclass(slots=True, kw_only=True)
class ReplyMessageRequestHeader(TopicRequestHeader):
    """PUSH_REPLY_MESSAGE_TO_CLIENT (326), broker → requesting client."""

    producer_group: str
    topic: str
    default_topic: str
    default_topic_queue_nums: int
    queue_id: int
    sys_flag: int
    born_timestamp: Long
    flag: int
    properties: str | None = None
    reconsume_times: int | None = None
    unit_mode: bool | None = False
    born_host: str
    store_host: str
    store_timestamp: Long


# --------------------------------------------------------------------------------------------- pull / offsets


@dataclass(slots=True, kw_only=True)
class PullMessageRequestHeader(TopicRequestHeader):
    """PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361)."""

    consumer_group: str
    topic: str
    queue_id: int
    queue_offset: Long
    max_msg_nums: int
    sys_flag: int
    commit_offset: Long
    suspend_timeout_millis: Long
    subscription: str | None = None
    sub_version: Long
    expression_type: str | None = None
    max_msg_bytes: int | None = None  # 5.x
    request_source: int | None = None  # 5.x
    proxy_froward_client_id: str | None = _wire_opt("proxyFrowardClientId")  # 5.x, misspelt in Java
    lite_topic: str | None = None  # 5.5


@dataclass(slots=True, kw_only=True)
class PullMessageResponseHeader(CommandCustomHeader):
    """Pull response: always send all four offsets (the Java client unboxes them)."""

    suggest_which_broker_id: Long
    next_begin_offset: Long
    min_offset: Long
    max_offset: Long
    offset_delta: Long | None = None  # 5.x
    topic_sys_flag: int | None = None  # 5.x
    group_sys_flag: int | None = None  # 5.x
    forbidden_type: int | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class PopMessageRequestHeader(TopicRequestHeader):
    """POP_MESSAGE (200050, 5.x). ``initMode`` 0 starts a new group at the queue's minimum offset."""

    consumer_group: str
    topic: str
    queue_id: int
    max_msg_nums: int
    invisible_time: Long
    poll_time: Long
    born_time: Long
    init_mode: int
    exp_type: str | None = None
    exp: str | None = None
    order: bool | None = None
    attempt_id: str | None = None


@dataclass(slots=True, kw_only=True)
class PopMessageResponseHeader(CommandCustomHeader):
    """POP_MESSAGE answer; the client builds each message's ack ``extraInfo`` from these fields."""

    pop_time: Long
    invisible_time: Long
    revive_qid: int
    rest_num: Long
    start_offset_info: str | None = None
    msg_offset_info: str | None = None
    order_count_info: str | None = None


@dataclass(slots=True, kw_only=True)
class AckMessageRequestHeader(TopicRequestHeader):
    """ACK_MESSAGE (200051, 5.x): ``extraInfo`` is the popped message's ``POP_CK``."""

    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: Long
    lite_topic: str | None = None  # 5.5


@dataclass(slots=True, kw_only=True)
class ChangeInvisibleTimeRequestHeader(TopicRequestHeader):
    """CHANGE_MESSAGE_INVISIBLETIME (200053, 5.x)."""

    consumer_group: str
    topic: str
    queue_id: int
    extra_info: str
    offset: Long
    invisible_time: Long
    lite_topic: str | None = None  # 5.5
    suspend: bool | None = None  # 5.5


@dataclass(slots=True, kw_only=True)
class ChangeInvisibleTimeResponseHeader(CommandCustomHeader):
    pop_time: Long
    invisible_time: Long
    revive_qid: int


@dataclass(slots=True, kw_only=True)
class PeekMessageRequestHeader(TopicRequestHeader):
    """PEEK_MESSAGE (200052, 5.x): messages from the group's pop offset on, without popping them."""

    topic: str
    queue_id: int
    max_msg_nums: int
    consumer_group: str


@dataclass(slots=True, kw_only=True)
class NotificationRequestHeader(TopicRequestHeader):
    """NOTIFICATION (200054, 5.x): whether a pop would find a message, waiting up to ``pollTime``."""

    consumer_group: str
    topic: str
    queue_id: int
    poll_time: Long
    born_time: Long
    order: bool | None = None
    attempt_id: str | None = None
    exp_type: str | None = None
    exp: str | None = None


@dataclass(slots=True, kw_only=True)
class NotificationResponseHeader(CommandCustomHeader):
    has_msg: bool
    polling_full: bool = False


@dataclass(slots=True, kw_only=True)
class PollingInfoRequestHeader(TopicRequestHeader):
    """POLLING_INFO (200055, 5.x): how many pops of a group wait on a topic's queue."""

    consumer_group: str
    topic: str
    queue_id: int


@dataclass(slots=True, kw_only=True)
class PollingInfoResponseHeader(CommandCustomHeader):
    polling_num: int


@dataclass(slots=True, kw_only=True)
class RecallMessageRequestHeader(TopicRequestHeader):
    """RECALL_MESSAGE (370, 5.x): ``recallHandle`` is what the send answer of a timer message carried."""

    topic: str
    recall_handle: str
    producer_group: str | None = None


@dataclass(slots=True, kw_only=True)
class RecallMessageResponseHeader(CommandCustomHeader):
    """The broker adds ``MSG_REGION``."""

    msg_id: str | None = None
    msg_region: str | None = _wire_opt("MSG_REGION")


@dataclass(slots=True, kw_only=True)
class QueryConsumerOffsetRequestHeader(TopicRequestHeader):
    consumer_group: str
    topic: str
    queue_id: int
    set_zero_if_not_found: bool | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class QueryConsumerOffsetResponseHeader(CommandCustomHeader):
    offset: Long


@dataclass(slots=True, kw_only=True)
class UpdateConsumerOffsetRequestHeader(TopicRequestHeader):
    consumer_group: str
    topic: str
    queue_id: int
    commit_offset: Long


@dataclass(slots=True, kw_only=True)
class GetMaxOffsetRequestHeader(TopicRequestHeader):
    """5.x adds ``committed`` (a primitive defaulting to true, so 5.x clients always send it)."""

    topic: str
    queue_id: int
    committed: bool | None = None


@dataclass(slots=True, kw_only=True)
class GetMaxOffsetResponseHeader(CommandCustomHeader):
    offset: Long


@dataclass(slots=True, kw_only=True)
class GetMinOffsetRequestHeader(TopicRequestHeader):
    topic: str
    queue_id: int


@dataclass(slots=True, kw_only=True)
class GetMinOffsetResponseHeader(CommandCustomHeader):
    offset: Long


@dataclass(slots=True, kw_only=True)
class GetEarliestMsgStoretimeRequestHeader(TopicRequestHeader):
    topic: str
    queue_id: int


@dataclass(slots=True, kw_only=True)
class GetEarliestMsgStoretimeResponseHeader(CommandCustomHeader):
    timestamp: Long


@dataclass(slots=True, kw_only=True)
class SearchOffsetRequestHeader(TopicRequestHeader):
    """``boundaryType`` (5.x) travels as the enum name ``LOWER``/``UPPER``, read case-insensitively."""

    topic: str
    queue_id: int
    timestamp: Long
    boundary_type: str | None = None
    lite_topic: str | None = None  # 5.5


@dataclass(slots=True, kw_only=True)
class SearchOffsetResponseHeader(CommandCustomHeader):
    offset: Long


@dataclass(slots=True, kw_only=True)
class QueryConsumeQueueRequestHeader(TopicRequestHeader):
    """QUERY_CONSUME_QUEUE (321); Java uses primitives, so all are sent."""

    topic: str | None = None
    queue_id: int = 0
    index: Long = 0
    count: int = 0
    consumer_group: str | None = None


# --------------------------------------------------------------------------------------------- messages


@dataclass(slots=True, kw_only=True)
class QueryMessageRequestHeader(TopicRequestHeader):
    """QUERY_MESSAGE (12). ``_UNIQUE_KEY_QUERY`` is an extra ext field the client adds ("true": UNIQ_KEY)."""

    topic: str
    key: str
    max_num: int
    begin_timestamp: Long
    end_timestamp: Long
    unique_key_query: bool | None = _wire_opt("_UNIQUE_KEY_QUERY")
    last_key: str | None = None  # 5.5
    index_type: str | None = None  # 5.5


@dataclass(slots=True, kw_only=True)
class QueryMessageResponseHeader(CommandCustomHeader):
    index_last_update_timestamp: Long
    index_last_update_phyoffset: Long


@dataclass(slots=True, kw_only=True)
class ViewMessageRequestHeader(CommandCustomHeader):
    """VIEW_MESSAGE_BY_ID (33): ``offset`` is the commitlog (physical) offset."""

    offset: Long
    topic: str | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader(RpcRequestHeader):
    """CONSUMER_SEND_MSG_BACK (36): ``offset`` is the commitlog offset of the consumed message."""

    offset: Long
    group: str
    delay_level: int
    origin_msg_id: str | None = None
    origin_topic: str | None = None
    unit_mode: bool = False
    max_reconsume_times: int | None = None


@dataclass(slots=True, kw_only=True)
class EndTransactionRequestHeader(RpcRequestHeader):
    """END_TRANSACTION (37); ``commit_or_rollback``: 0 unknown, 8 commit, 12 rollback."""

    producer_group: str
    tran_state_table_offset: Long
    commit_log_offset: Long
    commit_or_rollback: int
    from_transaction_check: bool | None = False
    msg_id: str
    transaction_id: str | None = None
    topic: str | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class CheckTransactionStateRequestHeader(RpcRequestHeader):
    """CHECK_TRANSACTION_STATE (39), broker → producer, oneway; the body is the half message record."""

    tran_state_table_offset: Long
    commit_log_offset: Long
    msg_id: str | None = None
    transaction_id: str | None = None
    offset_msg_id: str | None = None
    topic: str | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class ResumeCheckHalfMessageRequestHeader(CommandCustomHeader):
    msg_id: str | None = None
    topic: str | None = None  # 5.x


# --------------------------------------------------------------------------------------------- clients


@dataclass(slots=True, kw_only=True)
class HeartbeatRequestHeader(RpcRequestHeader):
    """HEART_BEAT (34): 4.9.x sends no header; 5.x an empty RpcRequestHeader subclass."""


@dataclass(slots=True, kw_only=True)
class HeartbeatResponseHeader(CommandCustomHeader):
    """5.x broker's heartbeat response ext fields (heartbeat v2 negotiation)."""

    is_support_heart_beat_v2: bool | None = _wire_opt("IS_SUPPORT_HEART_BEAT_V2")
    is_sub_change: bool | None = _wire_opt("IS_SUB_CHANGE")


@dataclass(slots=True, kw_only=True)
class UnregisterClientRequestHeader(RpcRequestHeader):
    """UNREGISTER_CLIENT (35): note the capitals of ``clientID``."""

    client_id: str = _wire("clientID")
    producer_group: str | None = None
    consumer_group: str | None = None


@dataclass(slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader(RpcRequestHeader):
    consumer_group: str


@dataclass(slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader(RpcRequestHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED (40), broker → consumer, oneway."""

    consumer_group: str


@dataclass(slots=True, kw_only=True)
class LockBatchMqRequestHeader(RpcRequestHeader):
    """LOCK_BATCH_MQ (41): 4.9.x sends no header, 5.x an empty one; the request is in the body."""


@dataclass(slots=True, kw_only=True)
class UnlockBatchMqRequestHeader(RpcRequestHeader):
    """UNLOCK_BATCH_MQ (42): see :class:`LockBatchMqRequestHeader`."""


@dataclass(slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader(RpcRequestHeader):
    """GET_CONSUMER_RUNNING_INFO (307): admin → broker → client."""

    consumer_group: str
    client_id: str
    jstack_enable: bool = False


@dataclass(slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader(TopicRequestHeader):
    """CONSUME_MESSAGE_DIRECTLY (309): admin → broker → client."""

    consumer_group: str
    client_id: str | None = None
    msg_id: str | None = None
    broker_name: str | None = None
    topic: str | None = None  # 5.x
    topic_sys_flag: int | None = None  # 5.x
    group_sys_flag: int | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class GetConsumerStatusRequestHeader(TopicRequestHeader):
    """GET_CONSUMER_STATUS_FROM_CLIENT (221) / INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223)."""

    topic: str
    group: str
    client_addr: str | None = None


@dataclass(slots=True, kw_only=True)
class ResetOffsetRequestHeader(TopicRequestHeader):
    """RESET_CONSUMER_CLIENT_OFFSET (220) and INVOKE_BROKER_TO_RESET_OFFSET (222).

    ``timestamp``/``isForce`` are primitives (always sent); 5.x adds ``queueId`` (primitive, -1 = all
    queues, always sent by 5.x) and ``offset``.
    """

    topic: str
    group: str
    timestamp: Long
    is_force: bool
    queue_id: int | None = None
    offset: Long | None = None


# --------------------------------------------------------------------------------------------- admin


@dataclass(slots=True, kw_only=True)
class CreateTopicRequestHeader(TopicRequestHeader):
    """UPDATE_AND_CREATE_TOPIC (17). ``topicFilterType`` is ``SINGLE_TAG``/``MULTI_TAG``."""

    topic: str
    default_topic: str
    read_queue_nums: int
    write_queue_nums: int
    perm: int
    topic_filter_type: str
    topic_sys_flag: int | None = None
    order: bool
    attributes: str | None = None  # 5.x: "+key=value,…"
    force: bool | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class DeleteTopicRequestHeader(TopicRequestHeader):
    """DELETE_TOPIC_IN_BROKER (215)."""

    topic: str


@dataclass(slots=True, kw_only=True)
class GetTopicConfigRequestHeader(TopicRequestHeader):
    """GET_TOPIC_CONFIG (351, 5.x)."""

    topic: str


@dataclass(slots=True, kw_only=True)
class GetSubscriptionGroupConfigRequestHeader(RpcRequestHeader):
    """GET_SUBSCRIPTIONGROUP_CONFIG (352, 5.x)."""

    group: str


@dataclass(slots=True, kw_only=True)
class GetAllTopicConfigRequestHeader(CommandCustomHeader):
    """GET_ALL_TOPIC_CONFIG (21): no header up to 5.3; 5.5 pages with these optional fields."""

    topic_seq: int | None = None
    data_version: str | None = None
    max_topic_num: int | None = None


@dataclass(slots=True, kw_only=True)
class GetAllTopicConfigResponseHeader(CommandCustomHeader):
    total_topic_num: int | None = None  # 5.5


@dataclass(slots=True, kw_only=True)
class GetAllSubscriptionGroupRequestHeader(CommandCustomHeader):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): paging fields of 5.5."""

    group_seq: int | None = None
    data_version: str | None = None
    max_group_num: int | None = None


@dataclass(slots=True, kw_only=True)
class GetAllSubscriptionGroupResponseHeader(CommandCustomHeader):
    total_group_num: int | None = None  # 5.5


@dataclass(slots=True, kw_only=True)
class GetBrokerConfigResponseHeader(CommandCustomHeader):
    """GET_BROKER_CONFIG (26): ``version`` is the DataVersion JSON text."""

    version: str


@dataclass(slots=True, kw_only=True)
class DeleteSubscriptionGroupRequestHeader(RpcRequestHeader):
    """DELETE_SUBSCRIPTIONGROUP (207): 4.9.x sends ``removeOffset``, 5.x ``cleanOffset`` (both primitives)."""

    group_name: str
    remove_offset: bool | None = None
    clean_offset: bool | None = None


@dataclass(slots=True, kw_only=True)
class GetTopicStatsInfoRequestHeader(TopicRequestHeader):
    topic: str


@dataclass(slots=True, kw_only=True)
class GetConsumerConnectionListRequestHeader(RpcRequestHeader):
    consumer_group: str


@dataclass(slots=True, kw_only=True)
class GetProducerConnectionListRequestHeader(RpcRequestHeader):
    producer_group: str


@dataclass(slots=True, kw_only=True)
class GetConsumeStatsRequestHeader(TopicRequestHeader):
    """GET_CONSUME_STATS (208); 5.x ``topicList`` is a comma-separated list."""

    consumer_group: str
    topic: str | None = None
    topic_list: str | None = None


@dataclass(slots=True, kw_only=True)
class GetConsumeStatsInBrokerHeader(CommandCustomHeader):
    """GET_BROKER_CONSUME_STATS (317)."""

    is_order: bool


@dataclass(slots=True, kw_only=True)
class QueryTopicConsumeByWhoRequestHeader(TopicRequestHeader):
    topic: str


@dataclass(slots=True, kw_only=True)
class QueryTopicsByConsumerRequestHeader(RpcRequestHeader):
    """QUERY_TOPICS_BY_CONSUMER (343, 5.x)."""

    group: str


@dataclass(slots=True, kw_only=True)
class QuerySubscriptionByConsumerRequestHeader(TopicRequestHeader):
    """QUERY_SUBSCRIPTION_BY_CONSUMER (345, 5.x)."""

    group: str
    topic: str | None = None


@dataclass(slots=True, kw_only=True)
class UpdateGroupForbiddenRequestHeader(TopicRequestHeader):
    """UPDATE_AND_GET_GROUP_FORBIDDEN (353, 5.x): without ``readable`` it only reads."""

    group: str
    topic: str
    readable: bool | None = None


@dataclass(slots=True, kw_only=True)
class RegisterTopicRequestHeader(TopicRequestHeader):
    """REGISTER_TOPIC_IN_NAMESRV (217, 5.x name server); the body is a TopicRouteData."""

    topic: str


@dataclass(slots=True, kw_only=True)
class QueryConsumeTimeSpanRequestHeader(TopicRequestHeader):
    topic: str
    group: str


@dataclass(slots=True, kw_only=True)
class QueryCorrectionOffsetHeader(TopicRequestHeader):
    filter_groups: str | None = None
    compare_group: str
    topic: str


@dataclass(slots=True, kw_only=True)
class CloneGroupOffsetRequestHeader(RpcRequestHeader):
    src_group: str
    dest_group: str
    topic: str | None = None
    offline: bool = False


@dataclass(slots=True, kw_only=True)
class ViewBrokerStatsDataRequestHeader(CommandCustomHeader):
    stats_name: str
    stats_key: str


@dataclass(slots=True, kw_only=True)
class GetTopicsByClusterRequestHeader(CommandCustomHeader):
    cluster: str


# --------------------------------------------------------------------------------------------- namesrv


@dataclass(slots=True, kw_only=True)
class GetRouteInfoRequestHeader(TopicRequestHeader):
    """GET_ROUTEINFO_BY_TOPIC (105). ``acceptStandardJsonOnly`` (4.9.4+) asks for quoted integer keys."""

    topic: str
    accept_standard_json_only: bool | None = None


@dataclass(slots=True, kw_only=True)
class RegisterBrokerRequestHeader(CommandCustomHeader):
    """REGISTER_BROKER (103). ``bodyCrc32`` = CRC32 & 0x7FFFFFFF of the body, 0 = unchecked.

    5.x adds ``heartbeatTimeoutMillis``, ``enableActingMaster`` and the extra ext field ``__ZONE_NAME``.
    """

    broker_name: str
    broker_addr: str
    cluster_name: str
    ha_server_addr: str
    broker_id: Long
    compressed: bool = False
    body_crc32: int | None = 0
    heartbeat_timeout_millis: Long | None = None
    enable_acting_master: bool | None = None
    zone_name: str | None = _wire_opt("__ZONE_NAME")


@dataclass(slots=True, kw_only=True)
class RegisterBrokerResponseHeader(CommandCustomHeader):
    """Set only for a slave whose master is alive."""

    ha_server_addr: str | None = None
    master_addr: str | None = None


@dataclass(slots=True, kw_only=True)
class UnRegisterBrokerRequestHeader(CommandCustomHeader):
    """UNREGISTER_BROKER (104)."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@dataclass(slots=True, kw_only=True)
class QueryDataVersionRequestHeader(CommandCustomHeader):
    """QUERY_DATA_VERSION (322)."""

    broker_name: str
    broker_addr: str
    cluster_name: str
    broker_id: Long


@dataclass(slots=True, kw_only=True)
class QueryDataVersionResponseHeader(CommandCustomHeader):
    changed: bool


@dataclass(slots=True, kw_only=True)
class DeleteTopicFromNamesrvRequestHeader(TopicRequestHeader):
    """DELETE_TOPIC_IN_NAMESRV (216)."""

    topic: str
    cluster_name: str | None = None


@dataclass(slots=True, kw_only=True)
class PutKVConfigRequestHeader(CommandCustomHeader):
    namespace: str
    key: str
    value: str


@dataclass(slots=True, kw_only=True)
class GetKVConfigRequestHeader(CommandCustomHeader):
    namespace: str
    key: str


@dataclass(slots=True, kw_only=True)
class GetKVConfigResponseHeader(CommandCustomHeader):
    value: str | None = None


@dataclass(slots=True, kw_only=True)
class DeleteKVConfigRequestHeader(CommandCustomHeader):
    namespace: str
    key: str


@dataclass(slots=True, kw_only=True)
class GetKVListByNamespaceRequestHeader(CommandCustomHeader):
    namespace: str


@dataclass(slots=True, kw_only=True)
class WipeWritePermOfBrokerRequestHeader(CommandCustomHeader):
    broker_name: str


@dataclass(slots=True, kw_only=True)
class WipeWritePermOfBrokerResponseHeader(CommandCustomHeader):
    wipe_topic_count: int


@dataclass(slots=True, kw_only=True)
class AddWritePermOfBrokerRequestHeader(CommandCustomHeader):
    broker_name: str


@dataclass(slots=True, kw_only=True)
class AddWritePermOfBrokerResponseHeader(CommandCustomHeader):
    add_topic_count: int


# --------------------------------------------------------------------------------------------- registries

_RC = RequestCode

REQUEST_HEADERS: dict[int, type[CommandCustomHeader]] = {
    _RC.SEND_MESSAGE: SendMessageRequestHeader,
    _RC.SEND_MESSAGE_V2: SendMessageRequestHeaderV2,
    _RC.SEND_BATCH_MESSAGE: SendMessageRequestHeaderV2,
    _RC.SEND_REPLY_MESSAGE: SendMessageRequestHeader,
    _RC.SEND_REPLY_MESSAGE_V2: SendMessageRequestHeaderV2,
    _RC.PUSH_REPLY_MESSAGE_TO_CLIENT: ReplyMessageRequestHeader,
    _RC.PULL_MESSAGE: PullMessageRequestHeader,
    _RC.LITE_PULL_MESSAGE: PullMessageRequestHeader,
    _RC.QUERY_MESSAGE: QueryMessageRequestHeader,
    _RC.VIEW_MESSAGE_BY_ID: ViewMessageRequestHeader,
    _RC.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetRequestHeader,
    _RC.UPDATE_CONSUMER_OFFSET: UpdateConsumerOffsetRequestHeader,
    _RC.UPDATE_AND_CREATE_TOPIC: CreateTopicRequestHeader,
    _RC.GET_ALL_TOPIC_CONFIG: GetAllTopicConfigRequestHeader,
    _RC.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetRequestHeader,
    _RC.GET_MAX_OFFSET: GetMaxOffsetRequestHeader,
    _RC.GET_MIN_OFFSET: GetMinOffsetRequestHeader,
    _RC.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeRequestHeader,
    _RC.HEART_BEAT: HeartbeatRequestHeader,
    _RC.UNREGISTER_CLIENT: UnregisterClientRequestHeader,
    _RC.CONSUMER_SEND_MSG_BACK: ConsumerSendMsgBackRequestHeader,
    _RC.END_TRANSACTION: EndTransactionRequestHeader,
    _RC.GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupRequestHeader,
    _RC.CHECK_TRANSACTION_STATE: CheckTransactionStateRequestHeader,
    _RC.NOTIFY_CONSUMER_IDS_CHANGED: NotifyConsumerIdsChangedRequestHeader,
    _RC.LOCK_BATCH_MQ: LockBatchMqRequestHeader,
    _RC.UNLOCK_BATCH_MQ: UnlockBatchMqRequestHeader,
    _RC.PUT_KV_CONFIG: PutKVConfigRequestHeader,
    _RC.GET_KV_CONFIG: GetKVConfigRequestHeader,
    _RC.DELETE_KV_CONFIG: DeleteKVConfigRequestHeader,
    _RC.GET_KVLIST_BY_NAMESPACE: GetKVListByNamespaceRequestHeader,
    _RC.REGISTER_BROKER: RegisterBrokerRequestHeader,
    _RC.UNREGISTER_BROKER: UnRegisterBrokerRequestHeader,
    _RC.QUERY_DATA_VERSION: QueryDataVersionRequestHeader,
    _RC.GET_ROUTEINFO_BY_TOPIC: GetRouteInfoRequestHeader,
    _RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: GetAllSubscriptionGroupRequestHeader,
    _RC.GET_SUBSCRIPTIONGROUP_CONFIG: GetSubscriptionGroupConfigRequestHeader,
    _RC.GET_TOPIC_STATS_INFO: GetTopicStatsInfoRequestHeader,
    _RC.GET_CONSUMER_CONNECTION_LIST: GetConsumerConnectionListRequestHeader,
    _RC.GET_PRODUCER_CONNECTION_LIST: GetProducerConnectionListRequestHeader,
    _RC.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerRequestHeader,
    _RC.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerRequestHeader,
    _RC.DELETE_SUBSCRIPTIONGROUP: DeleteSubscriptionGroupRequestHeader,
    _RC.GET_CONSUME_STATS: GetConsumeStatsRequestHeader,
    _RC.DELETE_TOPIC_IN_BROKER: DeleteTopicRequestHeader,
    _RC.DELETE_TOPIC_IN_NAMESRV: DeleteTopicFromNamesrvRequestHeader,
    _RC.RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetRequestHeader,
    _RC.INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetRequestHeader,
    _RC.GET_CONSUMER_STATUS_FROM_CLIENT: GetConsumerStatusRequestHeader,
    _RC.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: GetConsumerStatusRequestHeader,
    _RC.GET_TOPICS_BY_CLUSTER: GetTopicsByClusterRequestHeader,
    _RC.QUERY_TOPIC_CONSUME_BY_WHO: QueryTopicConsumeByWhoRequestHeader,
    _RC.QUERY_TOPICS_BY_CONSUMER: QueryTopicsByConsumerRequestHeader,
    _RC.QUERY_SUBSCRIPTION_BY_CONSUMER: QuerySubscriptionByConsumerRequestHeader,
    _RC.UPDATE_AND_GET_GROUP_FORBIDDEN: UpdateGroupForbiddenRequestHeader,
    _RC.REGISTER_TOPIC_IN_NAMESRV: RegisterTopicRequestHeader,
    _RC.QUERY_CONSUME_TIME_SPAN: QueryConsumeTimeSpanRequestHeader,
    _RC.GET_CONSUMER_RUNNING_INFO: GetConsumerRunningInfoRequestHeader,
    _RC.QUERY_CORRECTION_OFFSET: QueryCorrectionOffsetHeader,
    _RC.CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResultRequestHeader,
    _RC.CLONE_GROUP_OFFSET: CloneGroupOffsetRequestHeader,
    _RC.VIEW_BROKER_STATS_DATA: ViewBrokerStatsDataRequestHeader,
    _RC.GET_BROKER_CONSUME_STATS: GetConsumeStatsInBrokerHeader,
    _RC.QUERY_CONSUME_QUEUE: QueryConsumeQueueRequestHeader,
    _RC.RESUME_CHECK_HALF_MESSAGE: ResumeCheckHalfMessageRequestHeader,
    _RC.GET_TOPIC_CONFIG: GetTopicConfigRequestHeader,
    _RC.POP_MESSAGE: PopMessageRequestHeader,
    _RC.ACK_MESSAGE: AckMessageRequestHeader,
    _RC.CHANGE_MESSAGE_INVISIBLETIME: ChangeInvisibleTimeRequestHeader,
    _RC.PEEK_MESSAGE: PeekMessageRequestHeader,
    _RC.NOTIFICATION: NotificationRequestHeader,
    _RC.POLLING_INFO: PollingInfoRequestHeader,
    _RC.RECALL_MESSAGE: RecallMessageRequestHeader,
}
"""Request header class by request code (codes whose requests carry no header are absent)."""

RESPONSE_HEADERS: dict[int, type[CommandCustomHeader]] = {
    _RC.SEND_MESSAGE: SendMessageResponseHeader,
    _RC.SEND_MESSAGE_V2: SendMessageResponseHeader,
    _RC.SEND_BATCH_MESSAGE: SendMessageResponseHeader,
    _RC.SEND_REPLY_MESSAGE: SendMessageResponseHeader,
    _RC.SEND_REPLY_MESSAGE_V2: SendMessageResponseHeader,
    _RC.PULL_MESSAGE: PullMessageResponseHeader,
    _RC.LITE_PULL_MESSAGE: PullMessageResponseHeader,
    _RC.QUERY_MESSAGE: QueryMessageResponseHeader,
    _RC.VIEW_MESSAGE_BY_ID: EmptyHeader,
    _RC.QUERY_CONSUMER_OFFSET: QueryConsumerOffsetResponseHeader,
    _RC.UPDATE_CONSUMER_OFFSET: EmptyHeader,
    _RC.GET_ALL_TOPIC_CONFIG: GetAllTopicConfigResponseHeader,
    _RC.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: GetAllSubscriptionGroupResponseHeader,
    _RC.GET_BROKER_CONFIG: GetBrokerConfigResponseHeader,
    _RC.SEARCH_OFFSET_BY_TIMESTAMP: SearchOffsetResponseHeader,
    _RC.GET_MAX_OFFSET: GetMaxOffsetResponseHeader,
    _RC.GET_MIN_OFFSET: GetMinOffsetResponseHeader,
    _RC.GET_EARLIEST_MSG_STORETIME: GetEarliestMsgStoretimeResponseHeader,
    _RC.HEART_BEAT: HeartbeatResponseHeader,
    _RC.UNREGISTER_CLIENT: EmptyHeader,
    _RC.END_TRANSACTION: EmptyHeader,
    _RC.GET_CONSUMER_LIST_BY_GROUP: EmptyHeader,
    _RC.GET_KV_CONFIG: GetKVConfigResponseHeader,
    _RC.REGISTER_BROKER: RegisterBrokerResponseHeader,
    _RC.QUERY_DATA_VERSION: QueryDataVersionResponseHeader,
    _RC.WIPE_WRITE_PERM_OF_BROKER: WipeWritePermOfBrokerResponseHeader,
    _RC.ADD_WRITE_PERM_OF_BROKER: AddWritePermOfBrokerResponseHeader,
    _RC.POP_MESSAGE: PopMessageResponseHeader,
    _RC.CHANGE_MESSAGE_INVISIBLETIME: ChangeInvisibleTimeResponseHeader,
    _RC.PEEK_MESSAGE: PopMessageResponseHeader,
    _RC.NOTIFICATION: NotificationResponseHeader,
    _RC.POLLING_INFO: PollingInfoResponseHeader,
    _RC.RECALL_MESSAGE: RecallMessageResponseHeader,
}
"""Response header class by the *request* code it answers."""


def decode_request_header(
    code: int, ext: Mapping[str, str] | None, *, strict: bool = True
) -> CommandCustomHeader | None:
    """The typed header of a request with ``code`` (None for codes whose requests carry no header)."""
    cls = REQUEST_HEADERS.get(code)
    return None if cls is None else from_ext_fields(cls, ext, strict=strict)


def decode_response_header(
    request_code: int, ext: Mapping[str, str] | None, *, strict: bool = False
) -> CommandCustomHeader | None:
    """The typed header of the response to a ``request_code`` request. Lenient by default: error
    responses (any code but SUCCESS) carry no header fields."""
    cls = RESPONSE_HEADERS.get(request_code)
    return None if cls is None else from_ext_fields(cls, ext, strict=strict)
