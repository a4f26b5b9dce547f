"""Comparison and encoding helpers shared by the golden-vector tests.

Java describes every vector field by field (see tests/golden/java/shared/rmqtwin/golden/Describe.java);
these helpers turn what the Python codec decodes into the same shape, and build Python encodings of the
fields Java intended for the reverse direction.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Mapping
from typing import Any

from rmqtwin.codec import bodies, fastjson, headers
from rmqtwin.codec.codes import LanguageCode, SerializeType
from rmqtwin.codec.command import JsonDialect, RemotingCommand, decode_command, encode_command
from rmqtwin.codec.compression import COMPRESSED_FLAG, CompressionType, compress
from rmqtwin.codec.java import in_java_hash_map_order
from rmqtwin.codec.message import (
    MESSAGE_MAGIC_CODE_V2,
    BatchItem,
    Message,
    MessageExt,
    encode_batch,
    encode_message_record,
)

# The names the generators write (each manifest must hold exactly these: a vector added on the Java
# side is added here too, so it gets its own test ids and xfail entries).
COMMANDS = (
    "request.GET_ROUTEINFO_BY_TOPIC",
    "request.GET_ROUTEINFO_BY_TOPIC.accept_standard_json",
    "request.SEND_MESSAGE_V2",
    "request.SEND_MESSAGE",
    "request.HEART_BEAT",
    "request.PULL_MESSAGE",
    "request.UPDATE_CONSUMER_OFFSET.oneway",
    "request.QUERY_CONSUMER_OFFSET",
    "request.GET_CONSUMER_LIST_BY_GROUP",
    "request.GET_MAX_OFFSET",
    "request.UNREGISTER_CLIENT",
    "request.CONSUMER_SEND_MSG_BACK",
    "request.GET_BROKER_CLUSTER_INFO",
    "request.UPDATE_AND_CREATE_TOPIC",
    "request.GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
    "request.GET_BROKER_RUNTIME_INFO",
    "request.GET_TOPIC_STATS_INFO",
    "request.GET_CONSUME_STATS",
    "request.GET_CONSUMER_CONNECTION_LIST",
    "request.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
    "request.SEND_BATCH_MESSAGE",
    "request.END_TRANSACTION.oneway",
    "request.LOCK_BATCH_MQ",
    "request.UNLOCK_BATCH_MQ",
    "request.VIEW_MESSAGE_BY_ID",
    "request.QUERY_MESSAGE",
    "request.DELETE_TOPIC_IN_BROKER",
    "request.REGISTER_BROKER",
    "request.GET_KV_CONFIG",
    "request.CHECK_TRANSACTION_STATE.oneway",
    "request.NOTIFY_CONSUMER_IDS_CHANGED.oneway",
    "request.SEARCH_OFFSET_BY_TIMESTAMP",
    "request.GET_MIN_OFFSET",
    "request.GET_EARLIEST_MSG_STORETIME",
    "request.DELETE_TOPIC_IN_NAMESRV",
    "request.GET_PRODUCER_CONNECTION_LIST",
    "request.PUT_KV_CONFIG",
    "request.INVOKE_BROKER_TO_RESET_OFFSET",
    "request.GET_CONSUMER_RUNNING_INFO",
    "request.GET_BROKER_CONFIG",
    "request.UPDATE_BROKER_CONFIG",
    "request.edge.empty_ext_value",
    "request.edge.non_ascii_remark_negative_opaque",
    "request.edge.empty_ext_fields_and_body",
    "request.edge.code_over_short",
    "request.edge.fastcodes_duplicate_keys",
    "response.SEND_MESSAGE",
    "response.PULL_MESSAGE.found",
    "response.PULL_MESSAGE.offset_moved",
    "response.QUERY_CONSUMER_OFFSET",
    "response.QUERY_CONSUMER_OFFSET.not_found",
    "response.GET_MAX_OFFSET",
    "response.GET_KV_CONFIG",
    "response.REGISTER_BROKER",
    "response.GET_ROUTEINFO_BY_TOPIC",
    "response.HEART_BEAT",
    "response.GET_MIN_OFFSET",
    "response.GET_EARLIEST_MSG_STORETIME",
    "response.SEARCH_OFFSET_BY_TIMESTAMP",
    "response.QUERY_MESSAGE",
    "response.VIEW_MESSAGE_BY_ID",
    "response.GET_BROKER_CONFIG",
    "response.GET_CONSUMER_LIST_BY_GROUP",
    "response.error.system_error",
    "response.error.not_supported",
    "response.error.topic_not_exist",
)
RECORDS = (
    "record.single_ipv4",
    "record.pull_body_three",
    "record.ipv6_born_and_store",
    "record.ipv6_born_only",
    "record.transaction_prepared",
    "record.transaction_commit",
    "record.compressed_lz4",
    "record.compressed_zstd",
    "record.compressed_zlib",
    "record.topic_127",
)
BATCHES = ("batch.three", "batch.single_empty_props")
BODIES = (
    "body.TopicRouteData.standard",
    "body.TopicRouteData.legacy",
    "body.TopicRouteData.standard_single",
    "body.TopicRouteData.legacy_single",
    "body.ClusterInfo",
    "body.TopicStatsTable",
    "body.ConsumeStats",
    "body.ConsumerOffsetSerializeWrapper",
    "body.TopicConfigSerializeWrapper",
    "body.HeartbeatData",
    "body.LockBatchRequestBody",
    "body.KVTable",
    "body.TopicList",
    "body.RegisterBrokerBody",
    "body.RegisterBrokerBody.compressed",
    "body.ConsumerConnection",
    "body.ProducerConnection",
    "body.GetConsumerListByGroupResponseBody",
    "body.LockBatchResponseBody",
    "body.ResetOffsetBody",
    "body.GroupList",
    "body.SubscriptionGroupWrapper",
    "body.ConsumerRunningInfo",
    "body.CheckClientRequestBody",
    "body.ConsumeMessageDirectlyResult",
    "body.GetConsumerStatusBody",
    "body.UnlockBatchRequestBody",
    "body.QueryConsumeTimeSpanBody",
    "body.SubscriptionGroupConfig",
    "body.ProducerTableInfo",
    "body.TopicConfig",
    "body.DelayOffsetSerializeWrapper",
)
V5_COMMANDS = (
    "request.SEARCH_OFFSET_BY_TIMESTAMP.boundary",
    "request.PULL_MESSAGE.5x_fields",
    "response.PULL_MESSAGE.5x_fields",
    "response.SEND_MESSAGE.5x_fields",
)
"""Vectors only the 5.5.0 generator writes (fields the 4.9.8 classes do not have)."""


def vector_names(line: str) -> tuple[str, ...]:
    commands = COMMANDS + (V5_COMMANDS if line == "v5" else ())
    return (
        *(f"{name}.{ser}" for name in commands for ser in ("json", "rocketmq")),
        *RECORDS,
        *BATCHES,
        *BODIES,
    )


def dialect(line: str) -> JsonDialect:
    """fastjson 1.x wrote the 4.9.8 headers; 5.5.0 serializes with fastjson2."""
    return JsonDialect.FASTJSON1 if line == "v4" else JsonDialect.FASTJSON2


def trailing_separator(line: str) -> bool:
    """5.2.0+ ``messageProperties2String`` keeps a 0x02 after the last property; 4.9.x drops it."""
    return line == "v5"


def unhex(text: str | None) -> bytes | None:
    return None if text is None else bytes.fromhex(text)


# ----------------------------------------------------------------------------------------------- commands


def _language_name(language: int) -> str | int:
    """The LanguageCode name Java writes; a code LanguageCode does not know stays a number."""
    try:
        return LanguageCode(language).name
    except ValueError:
        return language


def describe_command(cmd: RemotingCommand) -> dict[str, Any]:
    """The Python command in the shape of Java's ``Describe.command``.

    An empty body is reported as null (``RemotingCommand.decode`` gives a null body for zero bytes, and
    both encode to the same frame); ext values are kept as they are, so ``""`` and null stay distinct.
    """
    return {
        "code": int(cmd.code),
        "language": _language_name(cmd.language),
        "version": cmd.version,
        "opaque": cmd.opaque,
        "flag": cmd.flag,
        "remark": cmd.remark,
        "extFields": None if cmd.ext_fields is None else dict(sorted(cmd.ext_fields.items())),
        "body": cmd.body.hex() if cmd.body else None,
        "serializeType": SerializeType(cmd.serialize_type).name,
    }


def java_command(desc: Mapping[str, Any]) -> dict[str, Any]:
    """Java's view of a command, comparable with :func:`describe_command`: a key Java decoded to null
    (ROCKETMQ empty value, JSON ``null``) is the same as an absent key (``ext.get`` is None either way)."""
    ext = desc["extFields"]
    return {
        **desc,
        "extFields": None if ext is None else {k: v for k, v in sorted(ext.items()) if v is not None},
    }


def header_class(name: str) -> type[headers.CommandCustomHeader]:
    cls = getattr(headers, name, None)
    if not (isinstance(cls, type) and issubclass(cls, headers.CommandCustomHeader)):
        raise AssertionError(f"rmqtwin.codec.headers has no header class {name}")
    return cls


def describe_header(header: headers.CommandCustomHeader) -> dict[str, Any]:
    """Non-None fields by Java name, typed, like Java's ``Describe.header``."""
    out = {}
    for spec in headers.header_fields(type(header)):
        value = getattr(header, spec.attr)
        if value is not None:
            out[spec.wire] = value
    return dict(sorted(out.items()))


def header_wire_names(cls: type[headers.CommandCustomHeader]) -> set[str]:
    return {spec.wire for spec in headers.header_fields(cls)}


def command_from_description(desc: Mapping[str, Any], header_name: str | None) -> RemotingCommand:
    """A fresh Python command carrying the fields Java intended (not decoded from Java's bytes).

    With a header class, the ext fields go through the typed header (``from_ext_fields`` then
    ``to_ext_fields``), and ext entries outside the header (``MSG_REGION``, ``_UNIQUE_KEY_QUERY``) are
    added as the Java code adds them.
    """
    ext = desc["extFields"]
    ext_fields: dict[str, str] | None = None
    if ext is not None:
        ext_fields = {k: v for k, v in ext.items() if v is not None}
        if header_name is not None:
            cls = header_class(header_name)
            typed = headers.from_ext_fields(cls, ext_fields)
            extra = {k: v for k, v in ext_fields.items() if k not in header_wire_names(cls)}
            ext_fields = {**headers.to_ext_fields(typed), **extra}
    return RemotingCommand(
        code=desc["code"],
        language=LanguageCode[desc["language"]],
        version=desc["version"],
        opaque=desc["opaque"],
        flag=desc["flag"],
        remark=desc["remark"],
        ext_fields=ext_fields,
        body=unhex(desc["body"]),
        serialize_type=SerializeType[desc["serializeType"]],
    )


def decode_frame(frame: bytes) -> RemotingCommand:
    """Whole frame as the vector holds it: length word, then what ``decode_command`` takes."""
    assert int.from_bytes(frame[:4], "big") == len(frame) - 4, "vector length word"
    return decode_command(frame[4:])


def reencode_command(cmd: RemotingCommand, line: str) -> bytes:
    return encode_command(cmd, dialect(line))


# ----------------------------------------------------------------------------------------------- messages


def _host(value: tuple[str, int]) -> str:
    address, port = value
    return f"{ipaddress.ip_address(address)}|{port}"


def java_host(text: str) -> str:
    """Java's ``getHostAddress()|port``, with the address normalised (Java spells IPv6 unabbreviated)."""
    address, port = text.rsplit("|", 1)
    return f"{ipaddress.ip_address(address)}|{port}"


def describe_message(msg: MessageExt) -> dict[str, Any]:
    return {
        "storeSize": msg.store_size,
        "bodyCRC": msg.body_crc,
        "queueId": msg.queue_id,
        "flag": msg.flag,
        "queueOffset": msg.queue_offset,
        "commitLogOffset": msg.commitlog_offset,
        "sysFlag": msg.sys_flag,
        "bornTimestamp": msg.born_timestamp,
        "bornHost": _host(msg.born_host),
        "storeTimestamp": msg.store_timestamp,
        "storeHost": _host(msg.store_host),
        "reconsumeTimes": msg.reconsume_times,
        "preparedTransactionOffset": msg.prepared_transaction_offset,
        "body": msg.body.hex(),
        "topic": msg.topic,
        "properties": dict(sorted(msg.properties.items())),
        "msgId": msg.msg_id,
    }


def java_message(desc: Mapping[str, Any]) -> dict[str, Any]:
    """Java's description minus the consumer view, hosts normalised."""
    out = {k: v for k, v in desc.items() if k != "bodyDecompressed"}
    # MessageDecoder leaves a zero-length body null; MessageExt.body here is always bytes.
    out["body"] = out["body"] or ""
    out["bornHost"] = java_host(out["bornHost"])
    out["storeHost"] = java_host(out["storeHost"])
    return out


def _parse_host(text: str) -> tuple[str, int]:
    address, port = text.rsplit("|", 1)
    return str(ipaddress.ip_address(address)), int(port)


def message_from_description(desc: Mapping[str, Any]) -> MessageExt:
    """A fresh MessageExt with the fields Java intended; properties in Java HashMap order."""
    return MessageExt(
        topic=desc["topic"],
        flag=desc["flag"],
        properties=in_java_hash_map_order(desc["properties"]),
        body=bytes.fromhex(desc["body"] or ""),
        queue_id=desc["queueId"],
        queue_offset=desc["queueOffset"],
        sys_flag=desc["sysFlag"],
        born_timestamp=desc["bornTimestamp"],
        born_host=_parse_host(desc["bornHost"]),
        store_timestamp=desc["storeTimestamp"],
        store_host=_parse_host(desc["storeHost"]),
        commitlog_offset=desc["commitLogOffset"],
        body_crc=desc["bodyCRC"],
        reconsume_times=desc["reconsumeTimes"],
        prepared_transaction_offset=desc["preparedTransactionOffset"],
    )


def encode_records(messages: list[MessageExt], line: str) -> bytes:
    return b"".join(
        encode_message_record(m, trailing_separator=trailing_separator(line), compute_crc=False)
        for m in messages
    )


def describe_batch_item(item: BatchItem) -> dict[str, Any]:
    return {"flag": item.flag, "body": item.body.hex(), "properties": dict(sorted(item.properties.items()))}


def batch_from_description(items: list[Mapping[str, Any]]) -> list[Message]:
    return [
        Message(
            flag=i["flag"],
            body=bytes.fromhex(i["body"]),
            properties=in_java_hash_map_order(i["properties"] or {}),
        )
        for i in items
    ]


def encode_batch_items(items: list[BatchItem], line: str) -> bytes:
    return encode_batch([i.to_message() for i in items], trailing_separator=trailing_separator(line))


def encode_batch_messages(messages: list[Message], line: str) -> bytes:
    return encode_batch(messages, trailing_separator=trailing_separator(line))


# ----------------------------------------------------------------------------------------------- bodies


def canon(value: Any) -> Any:
    """The canonical content Java's ``Describe.canon`` writes, computed on this side too.

    Mappings with string or integer keys become objects with string keys (Java's generic parse reads a
    bare ``0`` key as ``"0"``); mappings with object keys become ``{"$pairs": [[key, value], ...]}``;
    lists are sorted (they are often Java sets). Sorting uses this side's JSON rendering, and Java's
    description is passed through ``canon`` again before comparing, so the two languages never need to
    agree on a sort order.
    """
    if isinstance(value, Mapping):
        if value.get("$pairs") is not None and len(value) == 1:
            pairs = [[canon(k), canon(v)] for k, v in value["$pairs"]]
            return {"$pairs": sorted(pairs, key=_sort_key)}
        if all(isinstance(k, str | int) and not isinstance(k, bool) for k in value):
            # fastjson's generic parser reads a bare integer key as a string; quoting is checked by bytes
            return {str(k): canon(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
        pairs = [[canon(k), canon(v)] for k, v in value.items()]
        return {"$pairs": sorted(pairs, key=_sort_key)}
    if isinstance(value, list | tuple):
        return sorted((canon(v) for v in value), key=_sort_key)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _sort_key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def tree_from_canon(value: Any, *, int_keys: bool) -> Any:
    """Back from canonical content to a fastjson tree: ``$pairs`` maps get ObjectKey keys, and with
    ``int_keys`` all-digit keys become ints again (``Map<Long, ...>`` / ``Map<Integer, ...>`` entries)."""
    if isinstance(value, Mapping):
        if set(value) == {"$pairs"}:
            out: dict[Any, Any] = {}
            for key, item in value["$pairs"]:
                k = (
                    fastjson.ObjectKey(tree_from_canon(key, int_keys=int_keys))
                    if isinstance(key, Mapping)
                    else key
                )
                out[k] = tree_from_canon(item, int_keys=int_keys)
            return out
        return {
            (int(k) if int_keys and k.isdigit() else k): tree_from_canon(v, int_keys=int_keys)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [tree_from_canon(v, int_keys=int_keys) for v in value]
    return value


def dump_body(tree: Any, form: str, line: str) -> bytes:
    """Re-encode a body tree the way the Java side wrote that form (5.5.0 writes with fastjson2)."""
    fastjson2 = line == "v5"
    if form == "standard":
        return fastjson.dumps(
            tree, quote_int_keys=True, browser_compatible=True, sort_map_keys=True, fastjson2=fastjson2
        )
    return fastjson.dumps(tree, quote_int_keys=False, fastjson2=fastjson2)


def body_class(name: str) -> type[bodies.Body]:
    cls = getattr(bodies, name, None)
    if not (isinstance(cls, type) and issubclass(cls, bodies.Body)):
        raise AssertionError(f"rmqtwin.codec.bodies has no body class {name}")
    return cls


def decode_typed_body(cls: type[bodies.Body], data: bytes, form: str) -> bodies.Body:
    if form == "compressed":
        assert issubclass(cls, bodies.RegisterBrokerBody), "only the register body has a compressed form"
        return cls.decode_body(data, compressed=True)
    return cls.decode(data)


def encode_typed_body(body: bodies.Body, form: str, line: str) -> bytes:
    """What the Java code that wrote the vector writes: the namesrv's standard route form,
    ``RegisterBrokerBody.encode(true)``, else ``RemotingSerializable.encode()``; 5.5.0 with fastjson2."""
    fastjson2 = line == "v5"
    if form == "compressed":
        assert isinstance(body, bodies.RegisterBrokerBody), "only the register body has a compressed form"
        return body.encode(compressed=True, fastjson2=fastjson2)
    if form == "standard":
        assert isinstance(body, bodies.TopicRouteData), "only route data has the standard form"
        return body.encode(standard_json=True, fastjson2=fastjson2)
    return body.encode(fastjson2=fastjson2)


# ----------------------------------------------------------------------- what Python sends to Java


def encode_for_java(line: str, vector: dict[str, Any]) -> dict[str, Any]:
    """Python's own encoding of the fields Java intended, as the verifier's input."""
    kind = vector["kind"]
    sent: dict[str, Any] = {"name": vector["name"], "kind": kind}
    if kind == "command":
        cmd = command_from_description(vector["command"], vector["headerClass"])
        sent["hex"] = reencode_command(cmd, line).hex()
        sent["headerClass"] = vector["headerClass"]
    elif kind == "records":
        messages = [message_from_description(m) for m in vector["messages"]]
        sent["hex"] = encode_records(messages, line).hex()
    elif kind == "batch":
        sent["hex"] = encode_batch_messages(batch_from_description(vector["items"]), line).hex()
    elif kind == "body":
        # The described content, through the typed body class, encoded as the Java side would.
        sent["bodyClass"] = vector["bodyClass"]
        sent["form"] = vector["form"]
        tree = tree_from_canon(vector["content"], int_keys=vector["form"] != "standard")
        typed = body_class(vector["bodyClass"]).decode(dump_body(tree, "legacy", line))
        sent["hex"] = encode_typed_body(typed, vector["form"], line).hex()
    else:
        raise ValueError(f"unknown vector kind {kind}")
    return sent


# Python-originated vectors: encodings that start on this side (see test_python_originated.py).

BODY = ("RocketMQ golden \u00fc " * 400).encode()
LONG_TOPIC = "T" * 100 + "-long-topic-" + "x" * 88  # 200 bytes: needs the v2 magic


def _message(topic: str, body: bytes, sys_flag: int, magic: int | None = None) -> MessageExt:
    msg = MessageExt(
        topic=topic,
        flag=3,
        properties={"UNIQ_KEY": "AC110001000118B4AAC20A2B3C0000", "TAGS": "TagA"},
        body=body,
        queue_id=2,
        queue_offset=17,
        sys_flag=sys_flag,
        born_timestamp=1700000000123,
        born_host=("2001:db8::7", 40000),
        store_timestamp=1700000000125,
        store_host=("127.0.0.1", 10911),
        commitlog_offset=123456789,
        reconsume_times=1,
    )
    if magic is not None:
        msg.magic = magic
    return msg


def python_originated(line: str) -> list[dict[str, Any]]:
    items = []
    for ct in CompressionType:
        msg = _message("TopicTest", compress(BODY, ct), COMPRESSED_FLAG | ct.compression_flag)
        record = encode_message_record(msg, trailing_separator=trailing_separator(line))
        items.append(
            {"name": f"originated.compressed_{ct.name.lower()}", "kind": "records", "hex": record.hex()}
        )
    long_topic = _message(LONG_TOPIC, b"v2 body", 0, MESSAGE_MAGIC_CODE_V2)
    record = encode_message_record(long_topic, trailing_separator=trailing_separator(line))
    items.append({"name": "originated.v2_magic_long_topic", "kind": "records", "hex": record.hex()})
    return (
        items
        + header_class_items()
        + body_class_items()
        + properties_items()
        + msg_id_items()
        + odd_frame_items()
    )


def _classes_of(module: Any, base: type) -> list[str]:
    """Names of the classes ``module`` defines that derive from ``base`` (``base`` itself excluded)."""
    return sorted(
        name
        for name, cls in vars(module).items()
        if isinstance(cls, type)
        and issubclass(cls, base)
        and cls.__module__ == module.__name__
        and cls is not base
    )


def python_header_classes() -> list[str]:
    """Every typed header class of ``rmqtwin.codec.headers`` (the Java class of the same name is checked)."""
    return _classes_of(headers, headers.CommandCustomHeader)


JAVA_HEADER_KINDS = {
    "String": "str",
    "BoundaryType": "str",
    "Integer": "int",
    "int": "int",
    "Long": "long",
    "long": "long",
    "Boolean": "bool",
    "boolean": "bool",
    "Double": "double",
    "double": "double",
}
"""Java type of a header field -> the field kind Python must use (5.x BoundaryType travels as its name)."""


def header_class_items() -> list[dict[str, Any]]:
    return [
        {"name": f"headerclass.{name}", "kind": "headerClass", "headerClass": name, "hex": ""}
        for name in python_header_classes()
    ]


# Java classes whose properties a Python body class also carries (5.x subclasses folded into one class).
BODY_ALSO_JAVA = {"TopicConfigSerializeWrapper": ("TopicConfigAndMappingSerializeWrapper",)}


def python_body_classes() -> list[str]:
    """Every typed body class of ``rmqtwin.codec.bodies`` (checked against the Java class of that name)."""
    return _classes_of(bodies, bodies.Body)


def body_class_items() -> list[dict[str, Any]]:
    names = set(python_body_classes())
    for extra in BODY_ALSO_JAVA.values():
        names.update(extra)
    return [
        {"name": f"bodyclass.{name}", "kind": "bodyClass", "bodyClass": name, "hex": ""}
        for name in sorted(names)
    ]


# Properties strings for MessageDecoder.string2messageProperties, well-formed and not (the parser keeps a
# chunk only when it has at least 3 chars and a 0x01 that is neither its first nor its last char).
PROPERTY_STRINGS = (
    "",
    "a\x01b",
    "a\x01b\x02",
    "KEYS\x01k1 k2\x02TAGS\x01TagA\x02UNIQ_KEY\x01AC11000100002A9F0000000000000001",
    "a\x01\x02b\x01c",
    "\x01bc\x02de\x01f",
    "ab\x01\x02cd\x01e",
    "abc\x02x\x01y",
    "k\x01v\x01w\x02k2\x01v2",
    "a\x011\x02a\x012",
    "\x02\x02a\x01b\x02\x02",
    "n\x01caf\u00e9 \u4e2d \U0001f680\x02\U0001f680\x01rocket",
)
# (name, value-or-None) pairs for MessageDecoder.messageProperties2String (null values are skipped).
PROPERTY_PAIRS: tuple[tuple[tuple[str, str | None], ...], ...] = (
    (),
    (("a", "b"),),
    (("KEYS", "k1 k2"), ("TAGS", "TagA"), ("WAIT", "true")),
    (("a", None), ("b", "1")),
    (("a", "1"), ("b", None)),
    (("empty", ""), ("x", "y")),
    (("n", "caf\u00e9 \U0001f680"),),
)


def properties_items() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = [
        {"name": f"originated.props.parse.{i}", "kind": "propertiesParse", "text": text, "hex": ""}
        for i, text in enumerate(PROPERTY_STRINGS)
    ]
    items += [
        {
            "name": f"originated.props.write.{i}",
            "kind": "propertiesWrite",
            "pairs": [list(p) for p in pairs],
            "hex": "",
        }
        for i, pairs in enumerate(PROPERTY_PAIRS)
    ]
    return items


# Offset msgIds for MessageDecoder.decodeMessageId: IPv4 (32 hex chars), IPv6 (56), lower-case hex, a
# negative offset, and a port word of -1 (InetSocketAddress rejects it: "port out of range:-1").
OFFSET_MSG_IDS = (
    "7F00000100002A9F00000000000F1206",
    "0A00000500002A9F0000000000001234",
    "0a00000500002a9f0000000000001234",
    "C0A8011400002A9F8000000000000000",
    "C0A80114FFFFFFFF0000000000000001",
    "20010DB8000000000000000000000001000027100000000100000000",
)


def msg_id_items() -> list[dict[str, Any]]:
    return [
        {"name": f"originated.msgid.{i}", "kind": "msgIdDecode", "text": text, "hex": ""}
        for i, text in enumerate(OFFSET_MSG_IDS)
    ]


def _json_frame(header: bytes, body: bytes = b"", serialize_type: int = 0) -> str:
    length = 4 + len(header) + len(body)
    return (
        length.to_bytes(4, "big") + ((serialize_type << 24) | len(header)).to_bytes(4, "big") + header + body
    ).hex()


def _binary_header(code: int, ext: bytes, remark: bytes = b"", ext_len: int | None = None) -> bytes:
    fixed = code.to_bytes(2, "big") + bytes([0]) + (409).to_bytes(2, "big") + (7).to_bytes(4, "big")
    fixed += (0).to_bytes(4, "big") + len(remark).to_bytes(4, "big", signed=True) + remark
    return fixed + (len(ext) if ext_len is None else ext_len).to_bytes(4, "big", signed=True) + ext


def _entry(key: bytes, value: bytes) -> bytes:
    return len(key).to_bytes(2, "big") + key + len(value).to_bytes(4, "big") + value


# Frames a sloppy or hostile peer may send. Java either decodes them (fastjson is lenient: numbers as
# strings, language by ordinal, missing keys, invalid UTF-8) or throws; the Python decoder must do the same.
ODD_FRAMES: dict[str, str] = {
    "json_numbers_as_strings": _json_frame(b'{"code":"105","flag":"0","opaque":"9","version":"409"}'),
    "json_language_ordinal": _json_frame(b'{"code":105,"language":9,"opaque":1}'),
    # (without "opaque" Java's decoded command keeps the per-JVM counter value its constructor drew)
    "json_missing_keys": _json_frame(b'{"opaque":1}'),
    "json_unknown_key": _json_frame(b'{"code":34,"opaque":2,"whatever":[1,{"a":null}]}'),
    "json_go_client_style": _json_frame(
        b'{"code":105,"language":"GO","version":317,"opaque":3,"flag":0,"remark":"","extFields":{}}'
    ),
    "json_ext_value_number": _json_frame(b'{"code":14,"opaque":4,"extFields":{"queueId":3,"topic":"T"}}'),
    "json_invalid_utf8_remark": _json_frame(b'{"code":1,"flag":1,"opaque":5,"remark":"bad \xff\xfe here"}'),
    "json_truncated": _json_frame(b'{"code":105,"opaque":'),
    "json_not_an_object": _json_frame(b"[1,2,3]"),
    "json_unknown_language": _json_frame(b'{"code":105,"language":"KOTLIN","opaque":6}'),
    "json_opaque_overflow": _json_frame(b'{"code":105,"opaque":4294967296}'),
    "json_header_longer_than_frame": (
        (12).to_bytes(4, "big") + (100).to_bytes(4, "big") + b'{"code":1}'[:8]
    ).hex(),
    "unknown_serialize_type": _json_frame(b'{"code":105,"opaque":1}', serialize_type=2),
    "json_pretty_unsorted": _json_frame(
        b'{\n  "version" : 409,\n  "opaque" : 11,\n  "extFields" : { "topic" : "T" },\n  "code" : 105\n}'
    ),
    "json_explicit_nulls": _json_frame(b'{"code":105,"opaque":12,"remark":null,"extFields":null}'),
    "json_ext_value_null": _json_frame(b'{"code":105,"opaque":13,"extFields":{"topic":"T","bname":null}}'),
    "json_ext_value_bool": _json_frame(
        b'{"code":105,"opaque":14,"extFields":{"acceptStandardJsonOnly":true}}'
    ),
    "json_duplicate_key": _json_frame(b'{"code":105,"opaque":15,"opaque":16}'),
    "json_escaped_unicode": _json_frame(
        b'{"code":1,"flag":1,"opaque":17,"remark":"\\u00e9\\ud83d\\ude80\\n"}'
    ),
    "json_code_as_float": _json_frame(b'{"code":105.0,"opaque":18}'),
    "json_trailing_garbage": _json_frame(b'{"code":105,"opaque":19} x'),
    "json_empty_header": _json_frame(b""),
    "binary_ok_with_body": _json_frame(_binary_header(105, _entry(b"topic", b"T")), b"BODY", 1),
    "binary_empty_remark_and_value": _json_frame(_binary_header(105, _entry(b"topic", b"")), b"", 1),
    "binary_zero_length_key": _json_frame(
        _binary_header(105, _entry(b"", b"v") + _entry(b"k", b"w")), b"", 1
    ),
    "binary_code_all_ones": _json_frame(_binary_header(0xFFFF, b""), b"", 1),
    "binary_unknown_language": _json_frame(
        _binary_header(105, b"")[:2] + bytes([99]) + _binary_header(105, b"")[3:], b"", 1
    ),
    "binary_ext_length_negative": _json_frame(_binary_header(105, b"", ext_len=-4), b"", 1),
    "binary_ext_length_past_header": _json_frame(
        _binary_header(105, _entry(b"topic", b"T"), ext_len=400), b"", 1
    ),
    "binary_entry_past_section": _json_frame(_binary_header(105, b"\x00\x05top"), b"", 1),
    "binary_negative_remark_length": _json_frame(
        _binary_header(105, b"")[:13] + (-5).to_bytes(4, "big", signed=True) + (0).to_bytes(4, "big"), b"", 1
    ),
    "binary_invalid_utf8_value": _json_frame(_binary_header(105, _entry(b"topic", b"T\xff")), b"", 1),
}


def odd_frame_items() -> list[dict[str, Any]]:
    return [
        {"name": f"originated.odd.{name}", "kind": "command", "hex": frame, "headerClass": None}
        for name, frame in ODD_FRAMES.items()
    ]
