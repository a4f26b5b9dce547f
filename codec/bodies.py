"""Typed remoting bodies (route data, cluster info, heartbeats, stats…) in the fastjson dialect.

Each body is a dataclass whose attributes are the snake_case of the Java bean properties (irregular
names via ``field(metadata={"wire": …})``). ``Body.decode(bytes)`` reads what Java writes (bare integer
keys, MessageQueue object keys, quoted or not), ignoring unknown properties and leaving missing ones at
their defaults (``None`` for required ones, as fastjson leaves a missing property null).
``body.encode()`` writes what Java's ``RemotingSerializable.encode()`` writes: fastjson 1.x (RocketMQ 4.9)
by default, fastjson2 (RocketMQ 5.5) with ``fastjson2=True``.

Java primitives are plain fields with Java's default (always written); Java objects are ``X | None``
(omitted when None). Properties only 5.x writes are ``None`` by default so 4.9 bodies stay byte-equal;
set them when talking to a 5.x peer. Java ``Set``s are lists here (order kept, elements need not hash).
"""

from __future__ import annotations

import base64
import dataclasses
import struct
import types
import typing
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, TypeVar, Union

from rmqtwin.codec import fastjson
from rmqtwin.codec.errors import BodyError

__all__ = [
    "AclConfig",
    "BatchAck",
    "BatchAckMessageRequestBody",
    "Body",
    "BrokerData",
    "BrokerStatsData",
    "BrokerStatsItem",
    "CheckClientRequestBody",
    "ClusterInfo",
    "Connection",
    "ConsumeMessageDirectlyResult",
    "ConsumeQueueData",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumeStatus",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "CreateTopicListRequestBody",
    "DataVersion",
    "DelayOffsetSerializeWrapper",
    "GetConsumerListByGroupResponseBody",
    "GetConsumerStatusBody",
    "GroupForbidden",
    "GroupList",
    "HeartbeatData",
    "KVTable",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "MessageQueue",
    "OffsetWrapper",
    "PlainAccessConfig",
    "ProcessQueueInfo",
    "ProducerConnection",
    "ProducerData",
    "ProducerInfo",
    "ProducerTableInfo",
    "QueryConsumeQueueResponseBody",
    "QueryConsumeTimeSpanBody",
    "QueryCorrectionOffsetBody",
    "QuerySubscriptionResponseBody",
    "QueueData",
    "QueueTimeSpan",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupList",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigSerializeWrapper",
    "TopicList",
    "TopicOffset",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
    "from_value",
    "route_standard_json",
]

T = TypeVar("T")


def _wire(name: str, default: Any = None) -> Any:
    return field(default=default, metadata={"wire": name})


# --------------------------------------------------------------------------------------------- conversion

Converter = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class _ClassPlan:
    fields: dict[str, tuple[str, Converter]]  # Java name -> (attribute, converter)
    required: tuple[str, ...]  # attributes without a default (set to None when absent)


_PLANS: dict[type, _ClassPlan] = {}
_CONVERTERS: dict[Any, Converter] = {}


def _plan(cls: type) -> _ClassPlan:
    """Per-class decoding plan, built once: a converter per property from its type hint."""
    plan = _PLANS.get(cls)
    if plan is None:
        resolved = typing.get_type_hints(cls)
        fields = dataclasses.fields(cls)
        plan = _ClassPlan(
            fields={
                fastjson.wire_name(f): (f.name, _converter(resolved[f.name]))
                for f in fields
                if f.metadata.get("json", True) is not False
            },
            required=tuple(
                f.name
                for f in fields
                if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            ),
        )
        _PLANS[cls] = plan
    return plan


def _strip_optional(hint: Any) -> Any:
    origin = typing.get_origin(hint)
    if origin is Union or origin is types.UnionType:
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def _to_str(value: Any) -> Any:
    return value if isinstance(value, str) else str(value)


def _to_int(value: Any) -> Any:
    return value if type(value) is int else int(value)


def _to_bool(value: Any) -> Any:
    return value if isinstance(value, bool) else str(value).lower() == "true"


def _to_float(value: Any) -> Any:
    return float(value)


def _identity(value: Any) -> Any:
    return value


def _bean_converter(cls: type) -> Converter:
    return lambda value: from_value(cls, value)


def _key_converter(hint: Any) -> Converter:
    if hint is int:
        return int
    if hint is str:
        return _to_str
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):

        def convert_object_key(key: Any) -> Any:
            if isinstance(key, str):  # BrowserCompatible writes object keys as their JSON text
                key = fastjson.loads(key)
            return from_value(hint, key)

        return convert_object_key
    return _identity


def _converter(hint: Any) -> Converter:
    """A function turning parsed JSON into ``hint`` (None passes through), cached per hint."""
    cached = _CONVERTERS.get(hint)
    if cached is not None:
        return cached
    base = _strip_optional(hint)
    origin = typing.get_origin(base)
    args = typing.get_args(base)
    convert: Converter
    if base is Any:
        convert = _identity
    elif isinstance(base, type) and dataclasses.is_dataclass(base):
        convert = _bean_converter(base)
    elif base in (str, int, bool, float):
        convert = {str: _to_str, int: _to_int, bool: _to_bool, float: _to_float}[base]
    elif origin is list:
        item = _converter(args[0])

        def convert_list(value: Any) -> Any:
            if isinstance(value, Mapping | str | bytes):
                raise BodyError(f"expected a JSON array, got {type(value).__name__}")
            return [None if v is None else item(v) for v in value]

        convert = convert_list
    elif origin is dict:
        key_of, value_of = _key_converter(args[0]), _converter(args[1])

        def convert_dict(value: Any) -> Any:
            if not isinstance(value, Mapping):
                raise BodyError(f"expected a JSON object, got {type(value).__name__}")
            return {key_of(k): None if v is None else value_of(v) for k, v in value.items()}

        convert = convert_dict
    else:
        convert = _identity
    _CONVERTERS[hint] = convert
    return convert


def from_value(cls: type[T], value: Any) -> T:
    """Build body ``cls`` from parsed JSON (a dict or ObjectKey); unknown properties are ignored."""
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise BodyError(f"{cls.__name__}: expected a JSON object, got {type(value).__name__}")
    plan = _plan(cls)
    kwargs: dict[str, Any] = {}
    fields = plan.fields
    for key, item in value.items():
        entry = fields.get(key) if isinstance(key, str) else None
        if entry is None:
            continue
        attr, convert = entry
        if item is None:
            kwargs[attr] = None
            continue
        try:
            kwargs[attr] = convert(item)
        except (TypeError, ValueError) as exc:
            raise BodyError(f"{cls.__name__}.{key}: {exc}") from None
    for attr in plan.required:
        if attr not in kwargs:
            kwargs[attr] = None  # fastjson leaves a missing property null
    return cls(**kwargs)


class Body:
    """Mixin of every body dataclass: ``decode`` from / ``encode`` to the fastjson dialect."""

    __slots__ = ()

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview | str) -> Self:
        """Parse a body as Java writes it (any dialect fastjson accepts)."""
        try:
            value = fastjson.loads(data)
        except fastjson.FastjsonError as exc:
            raise BodyError(f"{cls.__name__}: {exc}") from None
        return from_value(cls, value)

    def encode(self, *, fastjson2: bool = False) -> bytes:
        """``RemotingSerializable.encode()``: sorted properties, nulls omitted, bare integer keys."""
        return fastjson.dumps(self, quote_int_keys=False, fastjson2=fastjson2)


# --------------------------------------------------------------------------------------------- shared beans


@dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """A queue of a topic on a broker; hashable (map key) and ordered like Java's ``compareTo``."""

    topic: str
    broker_name: str
    queue_id: int

    @classmethod
    def from_key(cls, key: Mapping[str, Any]) -> MessageQueue:
        """From an :class:`ObjectKey` (or dict) as parsed from ``{{"brokerName":…}:…}``."""
        return from_value(cls, key)


@dataclass(slots=True, kw_only=True)
class DataVersion(Body):
    """Change stamp of a broker's topic/group tables; 5.x adds ``stateVersion``."""

    counter: int = 0
    timestamp: int = 0
    state_version: int | None = None  # 5.x

    def next_version(self, now_ms: int) -> None:
        """``DataVersion.nextVersion()``: every change to the table bumps the counter and the time."""
        self.counter += 1
        self.timestamp = now_ms


@dataclass(slots=True, kw_only=True)
class SubscriptionData(Body):
    """A consumer's subscription to one topic (``filterClassSource`` is never serialized)."""

    topic: str
    sub_string: str
    class_filter_mode: bool = False
    tags_set: list[str] = field(default_factory=list)
    code_set: list[int] = field(default_factory=list)
    sub_version: int = 0
    expression_type: str | None = "TAG"


# --------------------------------------------------------------------------------------------- route data


@dataclass(slots=True, kw_only=True)
class QueueData(Body):
    broker_name: str
    read_queue_nums: int = 0
    write_queue_nums: int = 0
    perm: int = 0
    topic_sys_flag: int = 0


@dataclass(slots=True, kw_only=True)
class BrokerData(Body):
    """``brokerAddrs`` is ``Map<Long,String>``: brokerId (0 = master) → ``ip:port``."""

    cluster: str
    broker_name: str
    broker_addrs: dict[int, str] = field(default_factory=dict)
    enable_acting_master: bool | None = None  # 5.x primitive (false)
    zone_name: str | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class TopicRouteData(Body):
    """GET_ROUTEINFO_BY_TOPIC body."""

    order_topic_conf: str | None = None
    queue_datas: list[QueueData] = field(default_factory=list)
    broker_datas: list[BrokerData] = field(default_factory=list)
    filter_server_table: dict[str, list[str]] = field(default_factory=dict)
    topic_queue_mapping_by_broker: dict[str, Any] | None = None  # 5.x static topics

    def encode(self, standard_json: bool = False, *, fastjson2: bool = False) -> bytes:
        """The namesrv's two forms: ``standard_json`` (request version ≥ V4_9_4 or
        ``acceptStandardJsonOnly``) = BrowserCompatible + MapSortField (quoted, sorted keys); else plain
        fastjson with bare broker ids."""
        if standard_json:
            return fastjson.dumps(
                self, browser_compatible=True, sort_map_keys=True, quote_int_keys=True, fastjson2=fastjson2
            )
        return fastjson.dumps(self, quote_int_keys=False, fastjson2=fastjson2)


V4_9_4 = 401  # MQVersion.Version.V4_9_4.ordinal()


def route_standard_json(request_version: int, accept_standard_json_only: bool | None = None) -> bool:
    """Which route form the namesrv writes (``DefaultRequestProcessor.getRouteInfoByTopic``, 4.9.8 and 5.x):
    standard JSON for clients at V4_9_4 or later, or when the request header asks for it."""
    return request_version >= V4_9_4 or bool(accept_standard_json_only)


@dataclass(slots=True, kw_only=True)
class ClusterInfo(Body):
    """GET_BROKER_CLUSTER_INFO body: always plain fastjson (bare broker ids) in both lines."""

    broker_addr_table: dict[str, BrokerData] = field(default_factory=dict)
    cluster_addr_table: dict[str, list[str]] = field(default_factory=dict)


# ------------------------------------------------------------------------------------- topics / register


@dataclass(slots=True)
class TopicConfig(Body):
    """A topic's config (defaults as Java's: 16/16 queues, perm RW, SINGLE_TAG); 5.x adds ``attributes``."""

    topic_name: str
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = 6
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] | None = None  # 5.x (written as {} when empty)

    def encode_line(self, *, v5: bool = False) -> str:
        """``TopicConfig.encode()``, the line of the compressed register body.

        4.9: ``name read write perm FILTER``; 5.x appends a separator and the attributes JSON (if any).
        """
        fields = (
            self.topic_name,
            self.read_queue_nums,
            self.write_queue_nums,
            self.perm,
            self.topic_filter_type,
        )
        line = " ".join(map(str, fields))
        if not v5:
            return line
        line += " "
        if self.attributes is not None:
            line += fastjson.dumps(self.attributes).decode("utf-8")
        return line

    @classmethod
    def decode_line(cls, line: str) -> TopicConfig:
        """``TopicConfig.decode(String)``; order and topicSysFlag are not carried by this form."""
        parts = line.split(" ", 5)
        if len(parts) < 5:
            raise BodyError(f"topic config line has fewer than 5 fields: {line!r}")
        try:
            config = cls(
                topic_name=parts[0],
                read_queue_nums=int(parts[1]),
                write_queue_nums=int(parts[2]),
                perm=int(parts[3]),
                topic_filter_type=parts[4],
            )
        except ValueError as exc:
            raise BodyError(f"topic config line {line!r}: {exc}") from None
        if len(parts) == 6 and parts[5]:
            try:
                attributes = fastjson.loads(parts[5])
            except fastjson.FastjsonError:
                attributes = None  # Java ignores attributes it cannot parse
            if isinstance(attributes, Mapping):
                config.attributes = {str(k): str(v) for k, v in attributes.items()}
        return config


@dataclass(slots=True, kw_only=True)
class CreateTopicListRequestBody(Body):
    """UPDATE_AND_CREATE_TOPIC_LIST (18, 5.x) body: ``mqadmin updateTopicList``."""

    topic_config_list: list[TopicConfig] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class TopicConfigSerializeWrapper(Body):
    """Broker topic table (GET_ALL_TOPIC_CONFIG, REGISTER_BROKER, ``topics.json``).

    The mapping properties are those of 5.x ``TopicConfigAndMappingSerializeWrapper`` (static topics).
    """

    topic_config_table: dict[str, TopicConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)
    mapping_data_version: DataVersion | None = None  # 5.x
    topic_queue_mapping_info_map: dict[str, Any] | None = None  # 5.x
    topic_queue_mapping_detail_map: dict[str, Any] | None = None  # 5.x


_INT = struct.Struct(">i")


@dataclass(slots=True, kw_only=True)
class RegisterBrokerBody(Body):
    """REGISTER_BROKER body: JSON, or (header ``compressed=true``) Java's deflated binary form."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = field(
        default_factory=TopicConfigSerializeWrapper
    )
    filter_server_list: list[str] = field(default_factory=list)

    def encode(self, compressed: bool = False, *, fastjson2: bool = False) -> bytes:
        """``RegisterBrokerBody.encode(compress)``. The compressed form of 5.x (``fastjson2``) has 6-field
        topic lines and the static-topic mapping section."""
        if not compressed:
            return fastjson.dumps(self, quote_int_keys=False, fastjson2=fastjson2)
        wrapper = self.topic_config_serialize_wrapper
        out = bytearray()

        def chunk(data: bytes) -> None:
            out.extend(_INT.pack(len(data)))
            out.extend(data)

        chunk(wrapper.data_version.encode(fastjson2=fastjson2))
        out.extend(_INT.pack(len(wrapper.topic_config_table)))
        for config in wrapper.topic_config_table.values():
            chunk(config.encode_line(v5=fastjson2).encode("utf-8"))
        chunk(fastjson.dumps(self.filter_server_list, fastjson2=fastjson2))
        if fastjson2:
            infos = wrapper.topic_queue_mapping_info_map or {}
            out.extend(_INT.pack(len(infos)))
            for info in infos.values():
                chunk(fastjson.dumps(info, fastjson2=True))
        return zlib.compress(bytes(out), 9)  # Deflater(BEST_COMPRESSION), zlib-wrapped

    @classmethod
    def decode_body(cls, data: bytes, compressed: bool = False) -> RegisterBrokerBody:
        """``RegisterBrokerBody.decode(data, compressed, version)``; reads a 5.x mapping section too."""
        if not compressed:
            return cls.decode(data)
        try:
            raw = zlib.decompress(data)
        except zlib.error as exc:
            raise BodyError(f"compressed register body: {exc}") from None
        pos = 0

        def take(n: int) -> bytes:
            nonlocal pos
            if n < 0 or pos + n > len(raw):
                raise BodyError("compressed register body: End of compressed data has reached")
            piece = raw[pos : pos + n]
            pos += n
            return piece

        def take_int() -> int:
            return int(_INT.unpack(take(4))[0])

        wrapper = TopicConfigSerializeWrapper(data_version=DataVersion.decode(take(take_int())))
        for _ in range(take_int()):
            config = TopicConfig.decode_line(take(take_int()).decode("utf-8", "replace"))
            wrapper.topic_config_table[config.topic_name] = config
        filter_json = take(take_int())
        try:
            filters = [str(v) for v in fastjson.loads(filter_json)]
        except (fastjson.FastjsonError, TypeError):
            filters = []  # Java logs and keeps an empty list
        if pos < len(raw):
            infos: dict[str, Any] = {}
            for _ in range(take_int()):
                info = fastjson.loads(take(take_int()))
                if isinstance(info, Mapping):
                    infos[str(info.get("topic"))] = info
            wrapper.topic_queue_mapping_info_map = infos
        return cls(topic_config_serialize_wrapper=wrapper, filter_server_list=filters)


@dataclass(slots=True, kw_only=True)
class TopicList(Body):
    """GET_ALL_TOPIC_LIST_FROM_NAMESERVER and friends."""

    topic_list: list[str] = field(default_factory=list)
    broker_addr: str | None = None


@dataclass(slots=True, kw_only=True)
class KVTable(Body):
    """GET_KVLIST_BY_NAMESPACE, GET_BROKER_RUNTIME_INFO, REGISTER_BROKER response body."""

    table: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------- clients


@dataclass(slots=True, kw_only=True)
class ProducerData(Body):
    group_name: str


@dataclass(slots=True, kw_only=True)
class ConsumerData(Body):
    """``consumeType`` CONSUME_PASSIVELY/CONSUME_ACTIVELY, ``messageModel`` CLUSTERING/BROADCASTING."""

    group_name: str
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
    subscription_data_set: list[SubscriptionData] = field(default_factory=list)
    unit_mode: bool = False


@dataclass(slots=True, kw_only=True)
class HeartbeatData(Body):
    """HEART_BEAT body (note ``clientID``); 5.x adds ``heartbeatFingerprint`` and ``withoutSub``."""

    client_id: str = _wire("clientID")
    producer_data_set: list[ProducerData] = field(default_factory=list)
    consumer_data_set: list[ConsumerData] = field(default_factory=list)
    heartbeat_fingerprint: int | None = None  # 5.x primitive
    without_sub: bool | None = None  # 5.x primitive


@dataclass(slots=True, kw_only=True)
class Connection(Body):
    """One client channel; ``language`` is the LanguageCode name."""

    client_id: str | None = None
    client_addr: str | None = None
    language: str | None = None
    version: int = 0


@dataclass(slots=True, kw_only=True)
class ConsumerConnection(Body):
    """GET_CONSUMER_CONNECTION_LIST body."""

    connection_set: list[Connection] = field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None


@dataclass(slots=True, kw_only=True)
class ProducerConnection(Body):
    """GET_PRODUCER_CONNECTION_LIST body."""

    connection_set: list[Connection] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class ProducerInfo(Body):
    """One producer channel of GET_ALL_PRODUCER_INFO; ``language`` is the LanguageCode name."""

    client_id: str | None = None
    remote_ip: str | None = _wire("remoteIP")
    language: str | None = None
    version: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True, kw_only=True)
class ProducerTableInfo(Body):
    """GET_ALL_PRODUCER_INFO body (``mqadmin producer``): producer channels by group."""

    data: dict[str, list[ProducerInfo]] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class GetConsumerListByGroupResponseBody(Body):
    consumer_id_list: list[str] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class LockBatchRequestBody(Body):
    """LOCK_BATCH_MQ body; 5.x adds ``onlyThisBroker``."""

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: list[MessageQueue] = field(default_factory=list)
    only_this_broker: bool | None = None  # 5.x primitive


@dataclass(slots=True, kw_only=True)
class UnlockBatchRequestBody(Body):
    """UNLOCK_BATCH_MQ body; 5.x adds ``onlyThisBroker``."""

    consumer_group: str | None = None
    client_id: str | None = None
    mq_set: list[MessageQueue] = field(default_factory=list)
    only_this_broker: bool | None = None  # 5.x primitive


@dataclass(slots=True, kw_only=True)
class LockBatchResponseBody(Body):
    lock_okmq_set: list[MessageQueue] = field(default_factory=list, metadata={"wire": "lockOKMQSet"})


@dataclass(slots=True, kw_only=True)
class CheckClientRequestBody(Body):
    """CHECK_CLIENT_CONFIG body (sent for non-TAG subscriptions); 5.x adds ``namespace``."""

    client_id: str | None = None
    group: str | None = None
    subscription_data: SubscriptionData | None = None
    namespace: str | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class GroupList(Body):
    """QUERY_TOPIC_CONSUME_BY_WHO body."""

    group_list: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------- stats / offsets


@dataclass(slots=True, kw_only=True)
class OffsetWrapper(Body):
    broker_offset: int = 0
    consumer_offset: int = 0
    last_timestamp: int = 0
    pull_offset: int | None = None  # 5.x primitive


@dataclass(slots=True, kw_only=True)
class ConsumeStats(Body):
    """GET_CONSUME_STATS body: ``offsetTable`` keyed by MessageQueue (fastjson object keys)."""

    offset_table: dict[MessageQueue, OffsetWrapper] = field(default_factory=dict)
    consume_tps: float = 0.0


@dataclass(slots=True, kw_only=True)
class TopicOffset(Body):
    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0


@dataclass(slots=True, kw_only=True)
class TopicStatsTable(Body):
    """GET_TOPIC_STATS_INFO body; 5.x adds ``topicPutTps``."""

    offset_table: dict[MessageQueue, TopicOffset] = field(default_factory=dict)
    topic_put_tps: float | None = None  # 5.x primitive


@dataclass(slots=True, kw_only=True)
class QueueTimeSpan(Body):
    message_queue: MessageQueue | None = None
    min_time_stamp: int = 0
    max_time_stamp: int = 0
    consume_time_stamp: int = 0
    delay_time: int = 0
    min_time_stamp_str: str | None = None
    max_time_stamp_str: str | None = None
    consume_time_stamp_str: str | None = None


@dataclass(slots=True, kw_only=True)
class QueryConsumeTimeSpanBody(Body):
    """QUERY_CONSUME_TIME_SPAN body."""

    consume_time_span_set: list[QueueTimeSpan] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class ConsumerOffsetSerializeWrapper(Body):
    """GET_ALL_CONSUMER_OFFSET body / ``consumerOffset.json``: ``topic@group`` → {queueId: offset}."""

    offset_table: dict[str, dict[int, int]] = field(default_factory=dict)
    data_version: DataVersion | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class DelayOffsetSerializeWrapper(Body):
    """GET_ALL_DELAY_OFFSET body / ``delayOffset.json``: delay level → next schedule-queue offset
    (4.9's class lives in the store, 5.x's in the broker, which adds the data version)."""

    offset_table: dict[int, int] = field(default_factory=dict)
    data_version: DataVersion | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class ResetOffsetBody(Body):
    """RESET_CONSUMER_CLIENT_OFFSET / INVOKE_BROKER_TO_RESET_OFFSET body."""

    offset_table: dict[MessageQueue, int] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class GetConsumerStatusBody(Body):
    """GET_CONSUMER_STATUS_FROM_CLIENT / INVOKE_BROKER_TO_GET_CONSUMER_STATUS body."""

    message_queue_table: dict[MessageQueue, int] = field(default_factory=dict)
    consumer_table: dict[str, dict[MessageQueue, int]] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class ConsumeStatsList(Body):
    """GET_BROKER_CONSUME_STATS body (``mqadmin brokerConsumeStats``): per subscription group, the
    ConsumeStats of each topic it consumes; 5.x adds ``totalInflightDiff``."""

    consume_stats_list: list[dict[str, list[ConsumeStats]]] = field(default_factory=list)
    broker_addr: str | None = None
    total_diff: int = 0
    total_inflight_diff: int | None = None  # 5.x primitive


@dataclass(slots=True, kw_only=True)
class QueryCorrectionOffsetBody(Body):
    """QUERY_CORRECTION_OFFSET body: queueId → the offset the other groups have all reached."""

    correction_offsets: dict[int, int] = field(default_factory=dict)


@dataclass(slots=True, kw_only=True)
class BrokerStatsItem(Body):
    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0


@dataclass(slots=True, kw_only=True)
class BrokerStatsData(Body):
    """VIEW_BROKER_STATS_DATA body (``mqadmin statsAll``): one stats item over a minute, hour and day."""

    stats_minute: BrokerStatsItem | None = None
    stats_hour: BrokerStatsItem | None = None
    stats_day: BrokerStatsItem | None = None


@dataclass(slots=True, kw_only=True)
class ConsumeQueueData(Body):
    """One consume-queue entry as ``mqadmin queryCq`` prints it."""

    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None


@dataclass(slots=True, kw_only=True)
class QueryConsumeQueueResponseBody(Body):
    """QUERY_CONSUME_QUEUE body."""

    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] | None = None
    max_queue_index: int = 0
    min_queue_index: int = 0


# --------------------------------------------------------------------------------------------- groups


@dataclass(slots=True, kw_only=True)
class SubscriptionGroupConfig(Body):
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body (Java defaults); 5.x-only properties default to None."""

    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = 16
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    consume_message_orderly: bool | None = None  # 5.x
    group_retry_policy: Any = None  # 5.x (GroupRetryPolicy bean, kept as parsed)
    group_sys_flag: int | None = None  # 5.x
    consume_timeout_minute: int | None = None  # 5.x (15)
    subscription_data_set: list[Any] | None = None  # 5.x (SimpleSubscriptionData beans)
    attributes: dict[str, str] | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class BatchAck(Body):
    """One queue's acks in a BATCH_ACK_MESSAGE body: ``b`` is the acked offsets (from ``so``) as
    ``BitSet.toByteArray`` in base64, as fastjson writes a byte array."""

    consumer_group: str | None = _wire("c")
    topic: str | None = _wire("t")
    retry: str | None = _wire("r")
    start_offset: int = _wire("so", 0)
    queue_id: int = _wire("q", 0)
    revive_queue_id: int = _wire("rq", 0)
    pop_time: int = _wire("pt", 0)
    invisible_time: int = _wire("it", 0)
    bit_set: str | None = _wire("b")

    def offsets(self) -> list[int]:
        """The acked offsets: ``startOffset`` plus each set bit's index."""
        raw = base64.b64decode(self.bit_set or "")
        bits = int.from_bytes(raw, "little")
        return [self.start_offset + i for i in range(bits.bit_length()) if bits >> i & 1]


@dataclass(slots=True, kw_only=True)
class BatchAckMessageRequestBody(Body):
    """BATCH_ACK_MESSAGE (200151, 5.x) body."""

    broker_name: str | None = None
    acks: list[BatchAck] | None = None


@dataclass(slots=True, kw_only=True)
class SubscriptionGroupList(Body):
    """UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST body (5.x)."""

    group_config_list: list[SubscriptionGroupConfig] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class GroupForbidden(Body):
    """UPDATE_AND_GET_GROUP_FORBIDDEN answer (5.x): whether ``group`` may read ``topic``."""

    topic: str | None = None
    group: str | None = None
    readable: bool | None = None


@dataclass(slots=True, kw_only=True)
class QuerySubscriptionResponseBody(Body):
    """QUERY_SUBSCRIPTION_BY_CONSUMER answer (5.x); no subscription while the group is offline."""

    subscription_data: SubscriptionData | None = None
    group: str | None = None
    topic: str | None = None


@dataclass(slots=True, kw_only=True)
class SubscriptionGroupWrapper(Body):
    """GET_ALL_SUBSCRIPTIONGROUP_CONFIG body / ``subscriptionGroup.json``."""

    subscription_group_table: dict[str, SubscriptionGroupConfig] = field(default_factory=dict)
    data_version: DataVersion = field(default_factory=DataVersion)
    forbidden_table: dict[str, dict[str, int]] | None = None  # 5.x


# ------------------------------------------------------------------------------------------------ acl


@dataclass(slots=True, kw_only=True)
class PlainAccessConfig(Body):
    """One account of the ACL files as the broker lists it: permissions as written (``"PUB|SUB"``,
    ``"topicA=DENY"``), not parsed."""

    access_key: str | None = None
    secret_key: str | None = None
    white_remote_address: str | None = None
    admin: bool = False
    default_topic_perm: str | None = None
    default_group_perm: str | None = None
    topic_perms: list[str] | None = None
    group_perms: list[str] | None = None


@dataclass(slots=True, kw_only=True)
class AclConfig(Body):
    """GET_BROKER_CLUSTER_ACL_CONFIG body (4.9.7's ``GetBrokerClusterAclConfigResponseBody``, whose
    properties are those of ``AclConfig``): every global white address and account of the files."""

    global_white_addrs: list[str] | None = None
    plain_access_configs: list[PlainAccessConfig] | None = None


# --------------------------------------------------------------------------------- consumer running info


@dataclass(slots=True, kw_only=True)
class ProcessQueueInfo(Body):
    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mi_b: int = _wire("cachedMsgSizeInMiB", 0)
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    droped: bool = False  # sic
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0


@dataclass(slots=True, kw_only=True)
class ConsumeStatus(Body):
    pull_rt: float = _wire("pullRT", 0.0)
    pull_tps: float = _wire("pullTPS", 0.0)
    consume_rt: float = _wire("consumeRT", 0.0)
    consume_oktps: float = _wire("consumeOKTPS", 0.0)
    consume_failed_tps: float = _wire("consumeFailedTPS", 0.0)
    consume_failed_msgs: int = 0


@dataclass(slots=True, kw_only=True)
class ConsumerRunningInfo(Body):
    """GET_CONSUMER_RUNNING_INFO reply (client → broker → admin). Unknown/odd parts are kept as parsed."""

    properties: dict[str, str] = field(default_factory=dict)
    subscription_set: list[SubscriptionData] = field(default_factory=list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = field(default_factory=dict)
    status_table: dict[str, ConsumeStatus] = field(default_factory=dict)
    jstack: str | None = None
    mq_pop_table: dict[MessageQueue, Any] | None = None  # 5.x
    user_consumer_info: dict[str, str] | None = None  # 5.x


@dataclass(slots=True, kw_only=True)
class ConsumeMessageDirectlyResult(Body):
    """CONSUME_MESSAGE_DIRECTLY reply; ``consumeResult`` CR_SUCCESS, CR_LATER, CR_ROLLBACK, …"""

    order: bool = False
    auto_commit: bool = True
    consume_result: str | None = None
    remark: str | None = None
    spent_time_mills: int = 0
