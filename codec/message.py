"""Messages as the broker stores and serves them: the commitlog record, properties, msgIds, batches.

The stored-message record is one layout with three uses: a commitlog entry, and the body of PULL_MESSAGE,
QUERY_MESSAGE and VIEW_MESSAGE_BY_ID responses (a concatenation of records). Java sources:
``common/.../message/MessageDecoder.java`` (client decode and ``encode``), ``store/.../CommitLog.java``
(4.9.8 ``MessageExtEncoder``, ``checkMessageAndReturnSize``) and 5.x ``store/.../MessageExtEncoder.java``
(magic v2, batch encoder), ``MessageSysFlag``, ``MessageConst``, ``MessageClientIDSetter``.

Layout (big-endian; hosts are 4-byte IPv4 + int32 port, or 16-byte IPv6 + port when the sysFlag bit
says so; v1 topic length is a signed byte, v2 a short)::

    totalSize i32 | magic i32 | bodyCRC i32 | queueId i32 | flag i32 | queueOffset i64 |
    physicalOffset i64 | sysFlag i32 | bornTimestamp i64 | bornHost 8/20 | storeTimestamp i64 |
    storeHost 8/20 | reconsumeTimes i32 | preparedTransactionOffset i64 | bodyLen i32 + body |
    topicLen i8/i16 + topic | propertiesLen i16 + properties

``codec/layouts/message.py`` declares the same layout with construct; this module is the hot path
(``struct.unpack_from`` over a ``memoryview``).
"""

from __future__ import annotations

import os
import random
import socket
import struct
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Final, NamedTuple

from rmqtwin.codec.compression import (
    COMPRESSED_FLAG,
    COMPRESSION_LZ4_TYPE,
    COMPRESSION_TYPE_COMPARATOR,
    COMPRESSION_ZLIB_TYPE,
    COMPRESSION_ZSTD_TYPE,
    DEFAULT_COMPRESS_LEVEL,
    BodyDecompressError,
    CompressionType,
    compress,
    decompress_body,
    get_compression_type,
)
from rmqtwin.codec.errors import MessageDecodeError, MessageEncodeError, MessageIdError
from rmqtwin.codec.java import in_java_hash_map_order, java_string_hash

__all__ = [
    "BLANK_MAGIC_CODE",
    "BORN_HOST_POSITION",
    "BORN_TIMESTAMP_POSITION",
    "CRC32_RESERVED_LEN",
    "END_FILE_MIN_BLANK_LENGTH",
    "MESSAGE_MAGIC_CODE",
    "MESSAGE_MAGIC_CODE_V2",
    "NAME_VALUE_SEPARATOR",
    "PHY_POS_POSITION",
    "PROPERTY_SEPARATOR",
    "QUEUE_OFFSET_POSITION",
    "SYSFLAG_POSITION",
    "BatchItem",
    "Message",
    "MessageConst",
    "MessageExt",
    "MessageSysFlag",
    "UniqId",
    "UniqIdGenerator",
    "body_crc32",
    "create_offset_msg_id",
    "create_uniq_id",
    "decode_batch",
    "decode_message_record",
    "decode_message_records",
    "decode_offset_msg_id",
    "encode_batch",
    "encode_batch_item",
    "encode_blank_record",
    "encode_message_record",
    "expand_batch",
    "fill_append_fields",
    "in_java_hash_map_order",
    "is_blank_record",
    "iter_message_records",
    "java_string_hash",
    "merge_batch_properties",
    "message_record_length",
    "message_version_for_topic",
    "parse_prop_crc32",
    "parse_uniq_id",
    "prop_crc32_property",
    "properties_to_string",
    "store_host_spans",
    "string_to_properties",
    "tags_code",
    "uniq_id_nearly_time",
]

# --------------------------------------------------------------------------------------------------
# Constants

#: ``MessageDecoder.MESSAGE_MAGIC_CODE`` (0xDAA320A7 as a signed int): record version 1, 1-byte topic length.
MESSAGE_MAGIC_CODE: Final = -626843481
#: ``MessageDecoder.MESSAGE_MAGIC_CODE_V2`` (0xDAA320AB): 5.x record with a 2-byte topic length.
MESSAGE_MAGIC_CODE_V2: Final = -626843477
#: ``CommitLog.BLANK_MAGIC_CODE`` (0xCBD43194): the end-of-file filler of a commitlog segment.
BLANK_MAGIC_CODE: Final = -875286124
#: ``DefaultAppendMessageCallback.END_FILE_MIN_BLANK_LENGTH``: a record is written only if 8 bytes stay free.
END_FILE_MIN_BLANK_LENGTH: Final = 8
#: ``CommitLog.CRC32_RESERVED_LEN``: room for the 5.x ``__CRC32#`` property (``enabledAppendPropCRC``).
CRC32_RESERVED_LEN: Final = len("__CRC32#") + 1 + 10 + 1

NAME_VALUE_SEPARATOR: Final = "\x01"
PROPERTY_SEPARATOR: Final = "\x02"

#: Fixed positions inside a record (``MessageDecoder``): the broker patches these after encoding.
QUEUE_OFFSET_POSITION: Final = 20
PHY_POS_POSITION: Final = 28
SYSFLAG_POSITION: Final = 36
BORN_TIMESTAMP_POSITION: Final = 40
BORN_HOST_POSITION: Final = 48

_SHORT_MAX = 0x7FFF
_V1_TOPIC_MAX = 0x7F


class MessageSysFlag:
    """``org.apache.rocketmq.common.sysflag.MessageSysFlag``."""

    COMPRESSED_FLAG: Final = COMPRESSED_FLAG
    MULTI_TAGS_FLAG: Final = 0x1 << 1
    TRANSACTION_NOT_TYPE: Final = 0
    TRANSACTION_PREPARED_TYPE: Final = 0x1 << 2
    TRANSACTION_COMMIT_TYPE: Final = 0x2 << 2
    TRANSACTION_ROLLBACK_TYPE: Final = 0x3 << 2
    BORNHOST_V6_FLAG: Final = 0x1 << 4
    STOREHOSTADDRESS_V6_FLAG: Final = 0x1 << 5
    NEED_UNWRAP_FLAG: Final = 0x1 << 6
    INNER_BATCH_FLAG: Final = 0x1 << 7
    COMPRESSION_LZ4_TYPE: Final = COMPRESSION_LZ4_TYPE
    COMPRESSION_ZSTD_TYPE: Final = COMPRESSION_ZSTD_TYPE
    COMPRESSION_ZLIB_TYPE: Final = COMPRESSION_ZLIB_TYPE
    COMPRESSION_TYPE_COMPARATOR: Final = COMPRESSION_TYPE_COMPARATOR

    @staticmethod
    def get_transaction_value(flag: int) -> int:
        """``getTransactionValue``: one of the four ``TRANSACTION_*_TYPE`` values."""
        return flag & MessageSysFlag.TRANSACTION_ROLLBACK_TYPE

    @staticmethod
    def reset_transaction_value(flag: int, type_: int) -> int:
        """``resetTransactionValue``: replace the transaction type bits."""
        return (flag & ~MessageSysFlag.TRANSACTION_ROLLBACK_TYPE) | type_


class MessageConst:
    """Property names from ``org.apache.rocketmq.common.message.MessageConst`` (4.9.8 and 5.x)."""

    PROPERTY_KEYS: Final = "KEYS"
    PROPERTY_TAGS: Final = "TAGS"
    PROPERTY_WAIT_STORE_MSG_OK: Final = "WAIT"
    PROPERTY_DELAY_TIME_LEVEL: Final = "DELAY"
    PROPERTY_RETRY_TOPIC: Final = "RETRY_TOPIC"
    PROPERTY_REAL_TOPIC: Final = "REAL_TOPIC"
    PROPERTY_REAL_QUEUE_ID: Final = "REAL_QID"
    PROPERTY_TRANSACTION_PREPARED: Final = "TRAN_MSG"
    PROPERTY_PRODUCER_GROUP: Final = "PGROUP"
    PROPERTY_MIN_OFFSET: Final = "MIN_OFFSET"
    PROPERTY_MAX_OFFSET: Final = "MAX_OFFSET"
    PROPERTY_BUYER_ID: Final = "BUYER_ID"
    PROPERTY_ORIGIN_MESSAGE_ID: Final = "ORIGIN_MESSAGE_ID"
    PROPERTY_TRANSFER_FLAG: Final = "TRANSFER_FLAG"
    PROPERTY_CORRECTION_FLAG: Final = "CORRECTION_FLAG"
    PROPERTY_MQ2_FLAG: Final = "MQ2_FLAG"
    PROPERTY_RECONSUME_TIME: Final = "RECONSUME_TIME"
    PROPERTY_MSG_REGION: Final = "MSG_REGION"
    PROPERTY_TRACE_SWITCH: Final = "TRACE_ON"
    PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: Final = "UNIQ_KEY"
    PROPERTY_EXTEND_UNIQ_INFO: Final = "EXTEND_UNIQ_INFO"
    PROPERTY_MAX_RECONSUME_TIMES: Final = "MAX_RECONSUME_TIMES"
    PROPERTY_CONSUME_START_TIMESTAMP: Final = "CONSUME_START_TIME"
    PROPERTY_INNER_NUM: Final = "INNER_NUM"
    PROPERTY_INNER_BASE: Final = "INNER_BASE"
    DUP_INFO: Final = "DUP_INFO"
    PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS: Final = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET: Final = "TRAN_PREPARED_QUEUE_OFFSET"
    PROPERTY_TRANSACTION_ID: Final = "__transactionId__"
    PROPERTY_TRANSACTION_CHECK_TIMES: Final = "TRANSACTION_CHECK_TIMES"
    PROPERTY_INSTANCE_ID: Final = "INSTANCE_ID"
    PROPERTY_CORRELATION_ID: Final = "CORRELATION_ID"
    PROPERTY_MESSAGE_REPLY_TO_CLIENT: Final = "REPLY_TO_CLIENT"
    PROPERTY_MESSAGE_TTL: Final = "TTL"
    PROPERTY_REPLY_MESSAGE_ARRIVE_TIME: Final = "ARRIVE_TIME"
    PROPERTY_PUSH_REPLY_TIME: Final = "PUSH_REPLY_TIME"
    PROPERTY_CLUSTER: Final = "CLUSTER"
    PROPERTY_MESSAGE_TYPE: Final = "MSG_TYPE"
    PROPERTY_POP_CK: Final = "POP_CK"
    PROPERTY_POP_CK_OFFSET: Final = "POP_CK_OFFSET"
    PROPERTY_FIRST_POP_TIME: Final = "1ST_POP_TIME"
    PROPERTY_SHARDING_KEY: Final = "__SHARDINGKEY"
    PROPERTY_FORWARD_QUEUE_ID: Final = "PROPERTY_FORWARD_QUEUE_ID"
    PROPERTY_REDIRECT: Final = "REDIRECT"
    PROPERTY_INNER_MULTI_DISPATCH: Final = "INNER_MULTI_DISPATCH"
    PROPERTY_INNER_MULTI_QUEUE_OFFSET: Final = "INNER_MULTI_QUEUE_OFFSET"
    PROPERTY_TRACE_CONTEXT: Final = "TRACE_CONTEXT"
    PROPERTY_TIMER_DELAY_SEC: Final = "TIMER_DELAY_SEC"
    PROPERTY_TIMER_DELIVER_MS: Final = "TIMER_DELIVER_MS"
    PROPERTY_BORN_HOST: Final = "__BORNHOST"
    PROPERTY_BORN_TIMESTAMP: Final = "BORN_TIMESTAMP"
    PROPERTY_TRANSIENT_PREFIX: Final = "__RMQ.TRANSIENT."
    PROPERTY_TRANSIENT_TOPIC_CONFIG: Final = "__RMQ.TRANSIENT.TOPIC_SYS_FLAG"
    PROPERTY_TRANSIENT_GROUP_CONFIG: Final = "__RMQ.TRANSIENT.GROUP_SYS_FLAG"
    PROPERTY_TIMER_ENQUEUE_MS: Final = "TIMER_ENQUEUE_MS"
    PROPERTY_TIMER_DEQUEUE_MS: Final = "TIMER_DEQUEUE_MS"
    PROPERTY_TIMER_ROLL_TIMES: Final = "TIMER_ROLL_TIMES"
    PROPERTY_TIMER_OUT_MS: Final = "TIMER_OUT_MS"
    PROPERTY_TIMER_DEL_UNIQKEY: Final = "TIMER_DEL_UNIQKEY"
    PROPERTY_TIMER_DELAY_LEVEL: Final = "TIMER_DELAY_LEVEL"
    PROPERTY_TIMER_DELAY_MS: Final = "TIMER_DELAY_MS"
    PROPERTY_CRC32: Final = "__CRC32#"
    PROPERTY_DLQ_ORIGIN_TOPIC: Final = "DLQ_ORIGIN_TOPIC"
    PROPERTY_DLQ_ORIGIN_MESSAGE_ID: Final = "DLQ_ORIGIN_MESSAGE_ID"
    #: Legacy commercial delay marker some hooks look at.
    PROPERTY_START_DELIVER_TIME: Final = "__STARTDELIVERTIME"
    KEY_SEPARATOR: Final = " "


# --------------------------------------------------------------------------------------------------
# Messages


@dataclass(slots=True, eq=True)
class Message:
    """``org.apache.rocketmq.common.message.Message``: what a producer sends."""

    topic: str = ""
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    transaction_id: str | None = None

    def get_property(self, name: str) -> str | None:
        return self.properties.get(name)

    def put_property(self, name: str, value: str | None) -> None:
        """Set a property; ``None`` removes it (Java never stores null values)."""
        if value is None:
            self.properties.pop(name, None)
        else:
            self.properties[name] = value

    @property
    def tags(self) -> str | None:
        return self.properties.get(MessageConst.PROPERTY_TAGS)

    @tags.setter
    def tags(self, value: str | None) -> None:
        self.put_property(MessageConst.PROPERTY_TAGS, value)

    @property
    def keys(self) -> str | None:
        """The raw ``KEYS`` property: business keys separated by spaces."""
        return self.properties.get(MessageConst.PROPERTY_KEYS)

    @keys.setter
    def keys(self, value: str | Iterable[str] | None) -> None:
        if value is not None and not isinstance(value, str):
            value = MessageConst.KEY_SEPARATOR.join(value)
        self.put_property(MessageConst.PROPERTY_KEYS, value)

    @property
    def key_list(self) -> list[str]:
        """The keys the broker indexes (``IndexService``: split on spaces, empty ones dropped)."""
        keys = self.keys
        return [k for k in keys.split(MessageConst.KEY_SEPARATOR) if k] if keys else []

    @property
    def uniq_key(self) -> str | None:
        """The client-side msgId (``UNIQ_KEY``), set by the producer."""
        return self.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)

    @property
    def delay_time_level(self) -> int:
        """``getDelayTimeLevel``: the ``DELAY`` property, 0 when absent (a bad value raises like Java)."""
        level = self.properties.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        return int(level) if level is not None else 0

    @delay_time_level.setter
    def delay_time_level(self, level: int) -> None:
        self.properties[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(level)

    @property
    def wait_store_msg_ok(self) -> bool:
        """``isWaitStoreMsgOK``: true unless ``WAIT`` says ``false`` (Boolean.parseBoolean semantics)."""
        wait = self.properties.get(MessageConst.PROPERTY_WAIT_STORE_MSG_OK)
        return True if wait is None else wait.lower() == "true"

    @property
    def is_transaction_prepared(self) -> bool:
        """The ``TRAN_MSG`` property the producer sets on a half message."""
        return self.properties.get(MessageConst.PROPERTY_TRANSACTION_PREPARED, "").lower() == "true"


Host = tuple[str, int]
_NO_HOST: Final[Host] = ("0.0.0.0", 0)


@dataclass(slots=True, eq=True)
class MessageExt(Message):
    """``MessageExt`` (with ``MessageExtBrokerInner``'s version and properties string): a stored message.

    ``body`` holds the body as the caller sees it: decoded records carry the decompressed body (and the
    ``COMPRESSED_FLAG`` cleared, as 5.x ``MessageDecoder.decode`` does) unless decompression was turned off.
    ``properties_string``, when not ``None``, is written verbatim instead of rendering ``properties`` (the
    broker's ``MessageExtBrokerInner.propertiesString``); decoding leaves it ``None``.
    """

    queue_id: int = 0
    store_size: int = 0
    queue_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = _NO_HOST
    store_timestamp: int = 0
    store_host: Host = _NO_HOST
    msg_id: str = ""
    commitlog_offset: int = 0
    body_crc: int = 0
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    magic: int = MESSAGE_MAGIC_CODE
    broker_name: str = ""
    properties_string: str | None = field(default=None, compare=False, repr=False)

    @property
    def transaction_type(self) -> int:
        """One of ``MessageSysFlag.TRANSACTION_*_TYPE``."""
        return self.sys_flag & MessageSysFlag.TRANSACTION_ROLLBACK_TYPE

    @property
    def is_compressed(self) -> bool:
        return self.sys_flag & COMPRESSED_FLAG == COMPRESSED_FLAG

    @property
    def compression_type(self) -> CompressionType:
        return get_compression_type(self.sys_flag)

    @property
    def born_host_v6(self) -> bool:
        return self.sys_flag & MessageSysFlag.BORNHOST_V6_FLAG != 0

    @property
    def store_host_v6(self) -> bool:
        return self.sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG != 0

    @property
    def client_msg_id(self) -> str:
        """What ``MessageClientExt.getMsgId`` shows a consumer: ``UNIQ_KEY``, else the offset msgId."""
        return self.uniq_key or self.msg_id

    @property
    def offset_msg_id(self) -> str:
        """The broker's msgId for this record: store host + commitlog offset (``createMessageId``)."""
        return create_offset_msg_id(self.store_host, self.commitlog_offset)

    @property
    def tags_code(self) -> int:
        """The consume-queue tagsCode of a normal message (``tagsString2tagsCode``)."""
        return tags_code(self.tags)


# --------------------------------------------------------------------------------------------------
# Properties string


def properties_to_string(props: Mapping[str, str | None] | None, *, trailing_separator: bool) -> str:
    """``MessageDecoder.messageProperties2String``: ``name\\x01value`` pairs joined by ``\\x02``.

    Pairs whose value is ``None`` are skipped. 4.9.1-5.1.x drop the separator after the last pair
    (``trailing_separator=False``); 5.2.0+ keep it (``True``). Order is the mapping's iteration order (Java
    writes HashMap order; see :func:`in_java_hash_map_order`).
    """
    if not props:
        return ""
    out = "\x02".join(f"{k}\x01{v}" for k, v in props.items() if v is not None)
    if trailing_separator and out:
        out += "\x02"
    return out


def string_to_properties(s: str | None) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``: tolerant of a trailing separator and of junk chunks.

    A chunk between ``\\x02`` separators is kept only when it has at least 3 chars and its first ``\\x01``
    is neither its first nor its last char; later duplicates overwrite earlier ones.
    """
    result: dict[str, str] = {}
    if not s:
        return result
    for chunk in s.split("\x02"):
        # Non-empty name and value around the first 0x01 is the same as Java's index checks.
        name, _, value = chunk.partition("\x01")
        if name and value:
            result[name] = value
    return result


# --------------------------------------------------------------------------------------------------
# Java hashes


def tags_code(tags: str | None) -> int:
    """``MessageExtBrokerInner.tagsString2tagsCode``: the consume queue's tagsCode (0 without tags).

    The Java long is the int hash sign-extended, which is the same Python int.
    """
    if not tags:
        return 0
    return java_string_hash(tags)


def body_crc32(body: bytes | bytearray | memoryview) -> int:
    """``UtilAll.crc32``: java.util.zip.CRC32 masked to 31 bits (never negative)."""
    return zlib.crc32(body) & 0x7FFFFFFF


# --------------------------------------------------------------------------------------------------
# Hosts and msgIds


def _host_bytes(host: Host) -> bytes:
    """Address + port as ``MessageExt.socketAddress2ByteBuffer`` writes them (8 or 20 bytes)."""
    address, port = host
    try:
        if ":" in address:
            raw = socket.inet_pton(socket.AF_INET6, address)
        else:
            raw = (
                socket.inet_aton(address)
                if address.count(".") == 3
                else socket.inet_pton(socket.AF_INET, address)
            )
    except OSError:
        raise MessageEncodeError(f"not an IP address: {address!r}") from None
    return raw + struct.pack(">i", port)


def _host_from_bytes(raw: bytes | memoryview) -> str:
    if len(raw) == 4:
        return socket.inet_ntoa(raw)
    return socket.inet_ntop(socket.AF_INET6, raw)


def create_offset_msg_id(store_host: Host, commitlog_offset: int) -> str:
    """``MessageDecoder.createMessageId``: uppercase hex of store IP + port + commitlog offset.

    32 hex chars for an IPv4 store host, 56 for IPv6.
    """
    return (_host_bytes(store_host) + struct.pack(">q", commitlog_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """``MessageDecoder.decodeMessageId``: ``(host, port, commitlog offset)``; IPv4 iff 32 chars long."""
    if len(msg_id) not in (32, 56):
        raise MessageIdError(f"offset msgId must have 32 or 56 hex chars, got {len(msg_id)}: {msg_id!r}")
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raise MessageIdError(f"offset msgId is not hex: {msg_id!r}") from None
    ip_len = 4 if len(raw) == 16 else 16
    port, offset = struct.unpack_from(">iq", raw, ip_len)
    if not 0 <= port <= 0xFFFF:  # InetSocketAddress refuses it: "port out of range"
        raise MessageIdError(f"offset msgId has port out of range: {port}: {msg_id!r}")
    return _host_from_bytes(raw[:ip_len]), port, offset


# --------------------------------------------------------------------------------------------------
# UNIQ_KEY (MessageClientIDSetter)


class UniqId(NamedTuple):
    """The parts of a ``UNIQ_KEY``: ``ip + pid(u16) + classLoaderHash(i32) + msSinceMonthStart + counter``."""

    ip: str
    pid: int
    class_loader_hash: int
    time_since_month_start: int
    counter: int


def _month_start_ms(timestamp_ms: int, tz: tzinfo | None) -> tuple[int, int]:
    """Start of the month containing ``timestamp_ms`` and of the next one, in ``tz`` (None = local time).

    ``Calendar.getInstance()`` uses the JVM's default time zone; pass the same zone for the same ids.
    """
    moment = datetime.fromtimestamp(timestamp_ms / 1000, tz)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return int(start.timestamp() * 1000), int(nxt.timestamp() * 1000)


def _ip_bytes(ip: str | bytes) -> bytes:
    if isinstance(ip, bytes):
        if len(ip) not in (4, 16):
            raise ValueError("ip must be 4 or 16 bytes")
        return ip
    return socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)


def _to_int32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


def create_uniq_id(
    *,
    ip: str | bytes,
    pid: int,
    class_loader_hash: int,
    timestamp_ms: int,
    counter: int,
    month_start_ms: int | None = None,
    tz: tzinfo | None = None,
) -> str:
    """``MessageClientIDSetter.createUniqID`` for given inputs: 32 hex chars (56 with an IPv6 ip).

    ``month_start_ms`` defaults to the start of ``timestamp_ms``'s month in ``tz`` (local time when None,
    like Java's ``Calendar``). The time field is ``(int)(now - monthStart)`` with small negative values
    (NTP steps back under 1000 s) clamped to 0; the counter keeps its low 16 bits.
    """
    if month_start_ms is None:
        month_start_ms, _ = _month_start_ms(timestamp_ms, tz)
    diff = _to_int32(timestamp_ms - month_start_ms)
    if -1_000_000 < diff < 0:
        diff = 0
    raw = _ip_bytes(ip) + struct.pack(">Hii", pid & 0xFFFF, _to_int32(class_loader_hash), diff)
    return raw.hex().upper() + f"{counter & 0xFFFF:04X}"


def parse_uniq_id(uniq_id: str) -> UniqId:
    """Split a ``UNIQ_KEY`` into its parts (``getIPStrFromID``, ``getPidFromID`` and friends)."""
    if len(uniq_id) not in (32, 56):
        raise MessageIdError(f"UNIQ_KEY must have 32 or 56 hex chars, got {len(uniq_id)}: {uniq_id!r}")
    try:
        raw = bytes.fromhex(uniq_id)
    except ValueError:
        raise MessageIdError(f"UNIQ_KEY is not hex: {uniq_id!r}") from None
    ip_len = 16 if len(raw) == 28 else 4
    pid, loader, span, counter = struct.unpack_from(">HiIH", raw, ip_len)
    return UniqId(_host_from_bytes(raw[:ip_len]), pid, loader, span, counter)


def uniq_id_nearly_time(uniq_id: str, now_ms: int, tz: tzinfo | None = None) -> int:
    """``MessageClientIDSetter.getNearlyTimeFromID``: when the id was made, in ms, as seen at ``now_ms``.

    The id stores only ms since its month started: if that lands at or after ``now_ms`` in the current
    month, the id is taken to be from the previous month.
    """
    span = parse_uniq_id(uniq_id).time_since_month_start
    month_start, _ = _month_start_ms(now_ms, tz)
    if month_start + span >= now_ms:
        previous = datetime.fromtimestamp(month_start / 1000 - 1, tz)
        month_start, _ = _month_start_ms(int(previous.timestamp() * 1000), tz)
    return month_start + span


class UniqIdGenerator:
    """A stateful ``MessageClientIDSetter``: fixed ip/pid/loader prefix, a month start, a counter.

    Every input can be pinned for deterministic ids; ``clock`` returns ms since the epoch.
    """

    def __init__(
        self,
        *,
        ip: str | bytes = "127.0.0.1",
        pid: int | None = None,
        class_loader_hash: int | None = None,
        clock: Callable[[], int] | None = None,
        tz: tzinfo | None = None,
        counter: int = 0,
    ) -> None:
        self._ip = _ip_bytes(ip)
        self._pid = os.getpid() if pid is None else pid
        self._loader = random.getrandbits(31) if class_loader_hash is None else class_loader_hash
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._tz = tz
        self._counter = counter
        self._start, self._next_start = _month_start_ms(self._clock(), tz)

    def __call__(self) -> str:
        now = self._clock()
        if now >= self._next_start:
            self._start, self._next_start = _month_start_ms(now, self._tz)
        counter = self._counter
        self._counter = (counter + 1) & 0xFFFFFFFF
        return create_uniq_id(
            ip=self._ip,
            pid=self._pid,
            class_loader_hash=self._loader,
            timestamp_ms=now,
            counter=counter,
            month_start_ms=self._start,
        )


# --------------------------------------------------------------------------------------------------
# Stored record


_HEAD = struct.Struct(">iiiiiqqiq")  # totalSize .. bornTimestamp: 52 bytes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I16 = struct.Struct(">h")
_BLANK = struct.Struct(">ii")
# From the born host to the body length, per (born v6, store v6): ip, port, store timestamp,
# ip, port, reconsume times, prepared transaction offset, body length.
_MIDDLE = {
    (False, False): struct.Struct(">4siq4siiqi"),
    (True, False): struct.Struct(">16siq4siiqi"),
    (False, True): struct.Struct(">4siq16siiqi"),
    (True, True): struct.Struct(">16siq16siiqi"),
}
_V6_BITS = MessageSysFlag.BORNHOST_V6_FLAG | MessageSysFlag.STOREHOSTADDRESS_V6_FLAG


def message_record_length(
    sys_flag: int,
    body_length: int,
    topic_length: int,
    properties_length: int,
    magic: int = MESSAGE_MAGIC_CODE,
) -> int:
    """``calMsgLength``: the record size for these lengths (91 + n + t + p for v1 with IPv4 hosts)."""
    born = 20 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 8
    store = 20 if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG else 8
    topic_len_size = 2 if magic == MESSAGE_MAGIC_CODE_V2 else 1
    return (
        4 + 4 + 4 + 4 + 4 + 8 + 8 + 4 + 8 + born + 8 + store + 4 + 8
        + 4 + max(body_length, 0)
        + topic_len_size + topic_length
        + 2 + max(properties_length, 0)
    )  # fmt: skip


def message_version_for_topic(topic: str, *, auto_message_version_on_topic_len: bool = True) -> int:
    """The magic 5.x ``CommitLog`` picks: v2 when the topic has more than 127 chars (and the switch is on)."""
    if auto_message_version_on_topic_len and len(topic) > _V1_TOPIC_MAX:
        return MESSAGE_MAGIC_CODE_V2
    return MESSAGE_MAGIC_CODE


def encode_message_record(
    msg: MessageExt,
    *,
    trailing_separator: bool = False,
    compress_body: bool = False,
    compute_crc: bool = True,
    append_prop_crc: bool = False,
) -> bytes:
    """Lay ``msg`` out as a stored record, as the broker's encoder does.

    * ``store_size`` is computed (``calMsgLength``), and so is ``body_crc`` over the body as written unless
      ``compute_crc=False`` (then ``msg.body_crc`` is written, like ``MessageDecoder.encode``).
    * The IPv6 sysFlag bits are set from the host addresses (``CommitLog.asyncPutMessage``); a v6 bit set
      for an IPv4 host is an error.
    * ``compress_body=True`` compresses the body when sysFlag has ``COMPRESSED_FLAG``, with the sysFlag's
      type at level 5 (``MessageDecoder.encode(msg, needCompress=true)``); otherwise the body is written as
      it is (the broker stores the bytes it received).
    * Properties: ``msg.properties_string`` verbatim when set, else ``msg.properties`` rendered with or
      without the trailing separator (4.9 style by default).
    * ``msg.magic`` picks v1 (1-byte topic length, topic at most 127 bytes) or v2 (2-byte length).
    * ``append_prop_crc=True`` is 5.x ``enabledAppendPropCRC``: the properties end with a separator and
      :data:`CRC32_RESERVED_LEN` reserved bytes, which :func:`fill_append_fields` fills with the
      ``__CRC32#`` property once the record's final bytes are known (a record written so must be filled).
    """
    topic = msg.topic.encode()
    props_str = msg.properties_string
    if props_str is None:
        props_str = properties_to_string(msg.properties, trailing_separator=trailing_separator)
    props = props_str.encode()
    if append_prop_crc:
        if props and not props.endswith(b"\x02"):
            props += b"\x02"
        props += bytes(CRC32_RESERVED_LEN)
    if len(props) > _SHORT_MAX:
        raise MessageEncodeError(f"properties length {len(props)} exceeds {_SHORT_MAX}")
    magic = msg.magic
    if magic == MESSAGE_MAGIC_CODE:
        if len(topic) > _V1_TOPIC_MAX:
            raise MessageEncodeError(
                f"topic of {len(topic)} bytes needs the v2 record (MESSAGE_MAGIC_CODE_V2)"
            )
    elif magic == MESSAGE_MAGIC_CODE_V2:
        if len(topic) > _SHORT_MAX:
            raise MessageEncodeError(f"topic length {len(topic)} exceeds {_SHORT_MAX}")
    else:
        raise MessageEncodeError(f"unknown record magic {magic:#x}")

    born = _host_bytes(msg.born_host)
    store = _host_bytes(msg.store_host)
    sys_flag = msg.sys_flag
    for raw, bit in (
        (born, MessageSysFlag.BORNHOST_V6_FLAG),
        (store, MessageSysFlag.STOREHOSTADDRESS_V6_FLAG),
    ):
        if len(raw) == 20:
            sys_flag |= bit
        elif sys_flag & bit:
            raise MessageEncodeError("sysFlag marks an IPv6 host but the address is IPv4")

    body = msg.body
    if compress_body and sys_flag & COMPRESSED_FLAG:
        body = compress(body, get_compression_type(sys_flag), DEFAULT_COMPRESS_LEVEL)
    crc = body_crc32(body) if compute_crc else msg.body_crc
    total = message_record_length(sys_flag, len(body), len(topic), len(props), magic)

    return b"".join(
        (
            _HEAD.pack(
                total,
                magic,
                _to_int32(crc),
                msg.queue_id,
                msg.flag,
                msg.queue_offset,
                msg.commitlog_offset,
                sys_flag,
                msg.born_timestamp,
            ),
            born,
            _I64.pack(msg.store_timestamp),
            store,
            struct.pack(">iqi", msg.reconsume_times, msg.prepared_transaction_offset, len(body)),
            body,
            bytes((len(topic),)) if magic == MESSAGE_MAGIC_CODE else _I16.pack(len(topic)),
            topic,
            _I16.pack(len(props)),
            props,
        )
    )


def fill_append_fields(
    record: bytearray | memoryview,
    *,
    queue_offset: int,
    commitlog_offset: int,
    store_timestamp: int | None = None,
    offset: int = 0,
    append_prop_crc: bool = False,
) -> None:
    """Patch an encoded record in place the way ``DefaultAppendMessageCallback.doAppend`` does.

    The store encodes outside the lock and fills queue offset, physical offset and store timestamp when it
    knows them. ``append_prop_crc`` then writes the ``__CRC32#`` property into the reserved tail of a
    record encoded with ``append_prop_crc=True``: the masked CRC32 of every byte before that tail.
    """
    _I64.pack_into(record, offset + QUEUE_OFFSET_POSITION, queue_offset)
    _I64.pack_into(record, offset + PHY_POS_POSITION, commitlog_offset)
    if store_timestamp is not None:
        (sys_flag,) = _I32.unpack_from(record, offset + SYSFLAG_POSITION)
        born_len = 20 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 8
        _I64.pack_into(record, offset + BORN_HOST_POSITION + born_len, store_timestamp)
    if append_prop_crc:
        (total,) = _I32.unpack_from(record, offset)
        tail = offset + total - CRC32_RESERVED_LEN
        crc = body_crc32(memoryview(record)[offset:tail])
        record[tail : offset + total] = prop_crc32_property(crc).encode()


def prop_crc32_property(crc: int) -> str:
    """``MessageDecoder.createCrc32``: ``__CRC32#``, 0x01, ten digits least significant first, 0x02."""
    digits = []
    for _ in range(10):
        digits.append(str(crc % 10) if crc > 0 else "0")
        crc //= 10
    return f"{MessageConst.PROPERTY_CRC32}\x01{''.join(digits)}\x02"


def parse_prop_crc32(value: str) -> int:
    """The CRC in a ``__CRC32#`` property value (its digits are least significant first)."""
    return int(value[::-1]) if value.isdigit() else -1


def encode_blank_record(max_blank: int) -> bytes:
    """The 8-byte end-of-file marker: ``int maxBlank`` + ``BLANK_MAGIC_CODE`` (the rest stays as it is)."""
    return _BLANK.pack(max_blank, BLANK_MAGIC_CODE)


def is_blank_record(buf: bytes | bytearray | memoryview, offset: int = 0) -> bool:
    """Whether the record at ``offset`` is the end-of-file blank (move on to the next commitlog file)."""
    if len(buf) - offset < 8:
        return False
    return bool(_I32.unpack_from(buf, offset + 4)[0] == BLANK_MAGIC_CODE)


def decode_message_record(
    buf: bytes | bytearray | memoryview,
    offset: int = 0,
    *,
    read_body: bool = True,
    decompress: bool = True,
    check_crc: bool = False,
) -> tuple[MessageExt, int]:
    """Decode the record at ``offset``; return it and the offset just after it.

    Accepts v1 and v2 magic, IPv4 and IPv6 hosts. Raises :class:`MessageDecodeError` for an unknown magic
    (including the blank end-of-file marker), a truncated record, or a TOTALSIZE that disagrees with the
    field lengths (the store's ``checkMessageAndReturnSize`` rule). ``check_crc`` compares the stored body's
    CRC, and the whole record's when a 5.x ``__CRC32#`` property is present; ``decompress`` inflates a
    compressed body and clears ``COMPRESSED_FLAG`` (5.x behaviour); ``read_body=False`` skips the body
    (``body`` is then empty). ``msg_id`` is the offset msgId.
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    end = len(mv)
    if offset < 0 or end - offset < _HEAD.size:
        raise MessageDecodeError(f"truncated record at {offset}: {end - offset} bytes left")
    (
        total,
        magic,
        crc,
        queue_id,
        flag,
        queue_offset,
        commitlog_offset,
        sys_flag,
        born_ts,
    ) = _HEAD.unpack_from(mv, offset)
    if magic == MESSAGE_MAGIC_CODE:
        topic_len_size = 1
    elif magic == MESSAGE_MAGIC_CODE_V2:
        topic_len_size = 2
    elif magic == BLANK_MAGIC_CODE:
        raise MessageDecodeError(f"blank end-of-file record at {offset}, not a message")
    else:
        raise MessageDecodeError(f"illegal magic code {magic & 0xFFFFFFFF:#010x} at {offset}")
    record_end = offset + total
    if total < _HEAD.size or record_end > end:
        raise MessageDecodeError(f"record at {offset} claims {total} bytes, {end - offset} available")

    born_v6 = sys_flag & MessageSysFlag.BORNHOST_V6_FLAG != 0
    store_v6 = sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG != 0
    middle = _MIDDLE[born_v6, store_v6]
    pos = offset + _HEAD.size
    if pos + middle.size > record_end:
        raise MessageDecodeError(f"record at {offset} is shorter than its fixed fields")
    born_ip, born_port, store_ts, store_ip, store_port, reconsume, prepared, body_len = middle.unpack_from(
        mv, pos
    )
    pos += middle.size
    if body_len < 0 or pos + body_len > record_end:
        raise MessageDecodeError(f"record at {offset}: body length {body_len} out of range")
    body_view = mv[pos : pos + body_len]
    pos += body_len
    if pos + topic_len_size > record_end:
        raise MessageDecodeError(f"record at {offset}: truncated topic length")
    if topic_len_size == 1:
        topic_len = mv[pos]
        if topic_len > _V1_TOPIC_MAX:  # a signed byte in Java: negative lengths are invalid
            raise MessageDecodeError(f"record at {offset}: negative v1 topic length")
    else:
        (topic_len,) = _I16.unpack_from(mv, pos)
        if topic_len < 0:
            raise MessageDecodeError(f"record at {offset}: negative topic length")
    pos += topic_len_size
    if pos + topic_len + 2 > record_end:
        raise MessageDecodeError(f"record at {offset}: truncated topic")
    topic = str(mv[pos : pos + topic_len], "utf-8", "replace")
    pos += topic_len
    (props_len,) = _I16.unpack_from(mv, pos)
    pos += 2
    if props_len < 0 or pos + props_len > record_end:
        raise MessageDecodeError(f"record at {offset}: properties length {props_len} out of range")
    properties = string_to_properties(str(mv[pos : pos + props_len], "utf-8", "replace")) if props_len else {}
    pos += props_len
    if pos != record_end:
        raise MessageDecodeError(f"record at {offset}: TOTALSIZE {total} but fields add up to {pos - offset}")

    if check_crc and MessageConst.PROPERTY_CRC32 in properties:
        expected = parse_prop_crc32(properties[MessageConst.PROPERTY_CRC32])
        if body_crc32(mv[offset : record_end - CRC32_RESERVED_LEN]) != expected:
            raise MessageDecodeError(f"record at {offset}: __CRC32# property does not match the record")

    body = b""
    if body_len > 0 and read_body:
        if check_crc and body_crc32(body_view) != crc:
            raise MessageDecodeError(f"record at {offset}: body CRC mismatch")
        if decompress and sys_flag & COMPRESSED_FLAG:
            try:
                body = decompress_body(body_view, sys_flag)
            except BodyDecompressError as exc:
                raise BodyDecompressError(f"record at {offset}: {exc}") from exc
            sys_flag &= ~COMPRESSED_FLAG
        else:
            body = bytes(body_view)

    store_ip_bytes = bytes(store_ip)
    msg = MessageExt(
        topic=topic,
        flag=flag,
        properties=properties,
        body=body,
        queue_id=queue_id,
        store_size=total,
        queue_offset=queue_offset,
        sys_flag=sys_flag,
        born_timestamp=born_ts,
        born_host=(_host_from_bytes(born_ip), born_port),
        store_timestamp=store_ts,
        store_host=(_host_from_bytes(store_ip_bytes), store_port),
        msg_id=(store_ip_bytes + struct.pack(">iq", store_port, commitlog_offset)).hex().upper(),
        commitlog_offset=commitlog_offset,
        body_crc=crc,
        reconsume_times=reconsume,
        prepared_transaction_offset=prepared,
        magic=magic,
    )
    return msg, record_end


def iter_message_records(
    buf: bytes | bytearray | memoryview,
    *,
    read_body: bool = True,
    decompress: bool = True,
    check_crc: bool = False,
) -> Iterator[MessageExt]:
    """Decode every record of a pull / query body (``MessageDecoder.decodes``), in order.

    A malformed record raises :class:`MessageDecodeError` after the good ones before it were yielded
    (the Java client silently stops there instead).
    """
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    offset = 0
    end = len(mv)
    while offset < end:
        msg, offset = decode_message_record(
            mv, offset, read_body=read_body, decompress=decompress, check_crc=check_crc
        )
        yield msg


def store_host_spans(buf: bytes | bytearray | memoryview) -> list[tuple[int, int]]:
    """Where each record of a pull / query body keeps its store host: ``(start, length)`` of the
    address + port bytes (8 for IPv4, 20 for IPv6), in record order.

    Only the fixed head of each record is read, so this is cheap enough for a proxy's hot path.
    Raises :class:`MessageDecodeError` unless ``buf`` is exactly a sequence of v1/v2 records.
    """
    spans: list[tuple[int, int]] = []
    offset = 0
    end = len(buf)
    while offset < end:
        if end - offset < _HEAD.size:
            raise MessageDecodeError(f"truncated record at {offset}: {end - offset} bytes left")
        total, magic = _BLANK.unpack_from(buf, offset)
        if magic not in (MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2):
            raise MessageDecodeError(f"illegal magic code {magic & 0xFFFFFFFF:#010x} at {offset}")
        (sys_flag,) = _I32.unpack_from(buf, offset + SYSFLAG_POSITION)
        born_len = 20 if sys_flag & MessageSysFlag.BORNHOST_V6_FLAG else 8
        store_len = 20 if sys_flag & MessageSysFlag.STOREHOSTADDRESS_V6_FLAG else 8
        start = offset + BORN_HOST_POSITION + born_len + 8
        if total < start - offset + store_len or offset + total > end:
            raise MessageDecodeError(f"record at {offset} claims {total} bytes, {end - offset} available")
        spans.append((start, store_len))
        offset += total
    return spans


def decode_message_records(buf: bytes | bytearray | memoryview, **kwargs: bool) -> list[MessageExt]:
    """All records of a pull / query body as a list (see :func:`iter_message_records`)."""
    return list(iter_message_records(buf, **kwargs))


# --------------------------------------------------------------------------------------------------
# Batch body (SEND_BATCH_MESSAGE)


@dataclass(slots=True, frozen=True)
class BatchItem:
    """One message of a batch body as the broker reads it: flag, body and the raw properties string."""

    flag: int
    body: bytes
    properties_string: str

    @property
    def properties(self) -> dict[str, str]:
        return string_to_properties(self.properties_string)

    def to_message(self, topic: str = "") -> Message:
        return Message(topic=topic, flag=self.flag, properties=self.properties, body=self.body)


_BATCH_HEAD = struct.Struct(">iiiii")  # totalSize, magic (0), bodyCRC (0), flag, bodyLen


def encode_batch_item(msg: Message, *, trailing_separator: bool = False) -> bytes:
    """``MessageDecoder.encodeMessage``: ``size, 0, 0, flag, bodyLen+body, propsLen+props``."""
    props = properties_to_string(msg.properties, trailing_separator=trailing_separator).encode()
    if len(props) > _SHORT_MAX:
        raise MessageEncodeError(f"Properties size of message exceeded, properties size: {len(props)}")
    size = 20 + len(msg.body) + 2 + len(props)
    return b"".join(
        (_BATCH_HEAD.pack(size, 0, 0, msg.flag, len(msg.body)), msg.body, _I16.pack(len(props)), props)
    )


def encode_batch(messages: Iterable[Message], *, trailing_separator: bool = False) -> bytes:
    """``MessageDecoder.encodeMessages``: the SEND_BATCH_MESSAGE body (4.9 style without trailing 0x02)."""
    return b"".join(encode_batch_item(m, trailing_separator=trailing_separator) for m in messages)


def decode_batch(body: bytes | bytearray | memoryview) -> list[BatchItem]:
    """Split a batch body the way the broker's batch encoder walks it.

    TOTALSIZE, magic and CRC of each item are read and ignored, as in ``MessageExtBatchEncoder``; items
    are delimited by their body and properties lengths.
    """
    mv = body if isinstance(body, memoryview) else memoryview(body)
    end = len(mv)
    pos = 0
    items: list[BatchItem] = []
    while pos < end:
        if end - pos < _BATCH_HEAD.size:
            raise MessageDecodeError(f"truncated batch item at {pos}")
        _size, _magic, _crc, flag, body_len = _BATCH_HEAD.unpack_from(mv, pos)
        pos += _BATCH_HEAD.size
        if body_len < 0 or pos + body_len + 2 > end:
            raise MessageDecodeError(f"batch item body length {body_len} out of range")
        item_body = bytes(mv[pos : pos + body_len])
        pos += body_len
        (props_len,) = _I16.unpack_from(mv, pos)
        pos += 2
        if props_len < 0 or pos + props_len > end:
            raise MessageDecodeError(f"batch item properties length {props_len} out of range")
        props = str(mv[pos : pos + props_len], "utf-8", "replace")
        pos += props_len
        items.append(BatchItem(flag, item_body, props))
    return items


def merge_batch_properties(item_properties: str, batch_properties: str) -> str:
    """The stored properties of one batch item: its own, a 0x02 if they lack one at the end, the batch's.

    That is 4.9.x and 5.0-5.3.x; the 5.5.0 broker stores the item's own properties only (see
    :func:`expand_batch`).
    """
    if item_properties and batch_properties and not item_properties.endswith(PROPERTY_SEPARATOR):
        return item_properties + PROPERTY_SEPARATOR + batch_properties
    return item_properties + batch_properties


def expand_batch(
    body: bytes | bytearray | memoryview,
    template: MessageExt,
    batch_properties: str | Mapping[str, str] | None,
    *,
    trailing_separator: bool = False,
) -> list[MessageExt]:
    """The messages the broker stores for a batch (``MessageExtBatch`` + the batch encoder).

    Each gets the template's topic, queue id, sysFlag, born/store timestamps and hosts, reconsume times
    and magic; its own flag and body (with its CRC); prepared transaction offset 0; and properties =
    :func:`merge_batch_properties` of its own string and the batch's (rendered from a mapping with
    ``trailing_separator``), kept verbatim in ``properties_string``. Queue and commitlog offsets are left
    for the store to fill.

    Pass ``batch_properties=None`` for a 5.5.0 broker: since apache/rocketmq#9417 (May 2025, after 5.3.3)
    the batch encoder stores each item's own properties only, without the batch's (``WAIT``, ``CLUSTER``).
    4.9.x and 5.0-5.3.x brokers merge them.
    """
    if batch_properties is None:
        batch_properties = ""
    elif not isinstance(batch_properties, str):
        batch_properties = properties_to_string(batch_properties, trailing_separator=trailing_separator)
    out: list[MessageExt] = []
    for item in decode_batch(body):
        merged = merge_batch_properties(item.properties_string, batch_properties)
        out.append(
            MessageExt(
                topic=template.topic,
                flag=item.flag,
                properties=string_to_properties(merged),
                body=item.body,
                queue_id=template.queue_id,
                sys_flag=template.sys_flag,
                born_timestamp=template.born_timestamp,
                born_host=template.born_host,
                store_timestamp=template.store_timestamp,
                store_host=template.store_host,
                body_crc=body_crc32(item.body),
                reconsume_times=template.reconsume_times,
                prepared_transaction_offset=0,
                magic=template.magic,
                broker_name=template.broker_name,
                properties_string=merged,
            )
        )
    return out
