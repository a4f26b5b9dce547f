"""The stored-message record as the store handles it, on top of ``rmqtwin.codec.message``.

The codec owns the record layout (``encode_message_record``, ``fill_append_fields``,
``decode_message_record``). This module adds the store's side: ``MessageExtBrokerInner`` (what the broker
hands to the store), and ``check_message_and_return_size`` (``CommitLog.checkMessageAndReturnSize``), which
turns a record into what the consume queues and the index need and rejects anything that does not add up
(bad magic, CRC, length): that is how recovery finds torn tails.
"""

from __future__ import annotations

import functools
import mmap
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass

from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.java import java_string_hash
from rmqtwin.codec.message import (
    BLANK_MAGIC_CODE,
    END_FILE_MIN_BLANK_LENGTH,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    SYSFLAG_POSITION,
    Buffer,
    MessageConst,
    MessageExt,
    MessageSysFlag,
    body_length_position,
    decode_message_record,
    encode_blank_record,
)
from rmqtwin.codec.message import properties_to_string as _codec_properties_to_string

__all__ = [
    "SCHEDULE_TOPIC",
    "DelayTimeFn",
    "DispatchRequest",
    "MessageExtBrokerInner",
    "check_message_and_return_size",
    "parse_delay_levels",
    "properties_to_string",
    "record_size",
]

SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"

_BLANK_MAGIC_U = BLANK_MAGIC_CODE & 0xFFFFFFFF
_MAGICS_U = (MESSAGE_MAGIC_CODE & 0xFFFFFFFF, MESSAGE_MAGIC_CODE_V2 & 0xFFFFFFFF)
_HEADER = struct.Struct(">iI")
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_MAGIC_V1_U = MESSAGE_MAGIC_CODE & 0xFFFFFFFF
_PROP_CRC32 = MessageConst.PROPERTY_CRC32.encode()
_SCHEDULE_TOPIC = SCHEDULE_TOPIC.encode()
_V1_TOPIC_MAX = 127  # a v1 record's topic length is a signed byte


def properties_to_string(props: Mapping[str, str | None] | None) -> str:
    """Properties as 4.9.1-5.1.x store them (no trailing separator)."""
    return _codec_properties_to_string(props, trailing_separator=False)


class MessageExtBrokerInner(MessageExt):
    """``MessageExtBrokerInner``: a ``MessageExt`` on its way into the store.

    ``properties_string``, when set, is written verbatim (the broker controls the stored bytes).
    """

    properties: dict[str, str]
    properties_string: str | None

    def get_properties_string(self) -> str:
        if self.properties_string is None:
            self.properties_string = properties_to_string(self.properties)
        return self.properties_string

    def set_properties(self, props: dict[str, str]) -> None:
        self.properties = props
        self.properties_string = properties_to_string(props)

    @property
    def tran_type(self) -> int:
        return MessageSysFlag.get_transaction_value(self.sys_flag)

    @classmethod
    def moved(
        cls,
        msg: MessageExt,
        topic: str,
        queue_id: int,
        properties: dict[str, str],
        properties_string: str | None = None,
        *,
        sys_flag: int | None = None,
        prepared_transaction_offset: int = 0,
        store_host: tuple[str, int] | None = None,
        reconsume_times: int | None = None,
    ) -> MessageExtBrokerInner:
        """``msg`` put again under another topic, as a due delay-level or timer message, a committed
        half message, a message sent back for retry and a POP revive are: body, flag, born time and
        hosts and reconsume times carry over unless given."""
        return cls(
            topic=topic,
            body=msg.body,
            queue_id=queue_id,
            flag=msg.flag,
            properties=properties,
            properties_string=properties_string,
            sys_flag=msg.sys_flag if sys_flag is None else sys_flag,
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host if store_host is None else store_host,
            reconsume_times=msg.reconsume_times if reconsume_times is None else reconsume_times,
            prepared_transaction_offset=prepared_transaction_offset,
        )


@dataclass(slots=True)
class DispatchRequest:
    """What ``checkMessageAndReturnSize`` extracts: enough to build consume queue and index entries.

    ``success`` false: the bytes are not a valid record; ``msg_size`` 0 with success: a blank record.
    """

    success: bool
    msg_size: int
    topic: str = ""
    queue_id: int = 0
    commit_log_offset: int = 0
    tags_code: int = 0
    store_timestamp: int = 0
    consume_queue_offset: int = 0
    keys: str = ""
    uniq_key: str | None = None
    sys_flag: int = 0
    prepared_transaction_offset: int = 0
    properties: dict[str, str] | None = None


class DelayTimeFn:
    """Maps (delay level, store timestamp) to the delivery time (``computeDeliverTimestamp``)."""

    def __init__(self, levels_ms: list[int]) -> None:
        self.levels_ms = levels_ms

    @property
    def max_level(self) -> int:
        return len(self.levels_ms)

    def __call__(self, level: int, store_timestamp: int) -> int | None:
        """None when the level is not positive (the tagsCode then stays the tags hash)."""
        level = min(level, self.max_level)
        if level <= 0:
            return None
        return store_timestamp + self.levels_ms[level - 1]


def parse_delay_levels(spec: str) -> list[int]:
    """``messageDelayLevel`` ("1s 5s 10s ... 2h") into milliseconds per level, index 0 being level 1
    (``ScheduleMessageService.parseDelayLevel``)."""
    units = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    return [int(tok[:-1]) * units[tok[-1]] for tok in spec.split()]


@functools.lru_cache(maxsize=4096)
def _tags_hash(tags: str) -> int:
    """Tags repeat across messages; their Java hash is computed once per distinct value."""
    return java_string_hash(tags)


def compute_tags_code(
    topic: str, props: Mapping[str, str], store_timestamp: int, delay: DelayTimeFn | None
) -> int:
    """The consume-queue tagsCode: tags hash, or the delivery time for SCHEDULE_TOPIC_XXXX."""
    tags = props.get(MessageConst.PROPERTY_TAGS)
    code = _tags_hash(tags) if tags else 0
    if topic == SCHEDULE_TOPIC and delay is not None:
        level = props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        if level is not None:
            deliver = delay(int(level), store_timestamp)
            if deliver is not None:
                code = deliver
    return code


def write_blank(buf: bytearray | memoryview | mmap.mmap, pos: int, max_blank: int) -> None:
    """The end-of-file blank record: remaining length then BLANK_MAGIC."""
    buf[pos : pos + END_FILE_MIN_BLANK_LENGTH] = encode_blank_record(max_blank)


def check_message_and_return_size(
    buf: Buffer,
    pos: int,
    limit: int,
    check_crc: bool = True,
    delay: DelayTimeFn | None = None,
) -> DispatchRequest:
    """Validate the record at ``buf[pos:limit]`` and extract dispatch data, or report it invalid."""
    if pos + 8 > limit:
        return DispatchRequest(False, -1)
    total, magic = _HEADER.unpack_from(buf, pos)
    if magic == _BLANK_MAGIC_U:
        return DispatchRequest(True, 0)
    if magic not in _MAGICS_U:
        return DispatchRequest(False, -1)
    if total <= 0 or pos + total > limit:
        return DispatchRequest(False, -1)
    view = buf if isinstance(buf, memoryview) else memoryview(buf)
    try:
        msg, _end = decode_message_record(
            view[pos : pos + total], 0, read_body=check_crc, decompress=False, check_crc=check_crc
        )
    except (CodecError, struct.error, ValueError, IndexError) as exc:
        return DispatchRequest(False, total if "TOTALSIZE" in str(exc) else -1)
    props = msg.properties
    return DispatchRequest(
        True,
        total,
        msg.topic,
        msg.queue_id,
        msg.commitlog_offset,
        compute_tags_code(msg.topic, props, msg.store_timestamp, delay),
        msg.store_timestamp,
        msg.queue_offset,
        props.get(MessageConst.PROPERTY_KEYS, ""),
        props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
        msg.sys_flag,
        msg.prepared_transaction_offset,
        props,
    )


def record_size(
    buf: Buffer, pos: int, limit: int, check_crc: bool = True, delay: DelayTimeFn | None = None
) -> int:
    """The size of the valid record at ``buf[pos:limit]``, 0 for the end-of-file blank, -1 when it is not
    a valid record: all a clean restart's scan of the last three commitlog files asks (it dispatches
    nothing), without decoding each message into Python objects, which made that scan most of a restart's
    time (seconds per million messages).

    It reads the length fields and checks the body's CRC; a record these do not settle as valid (any
    inconsistency, a ``__CRC32#`` property, a ``SCHEDULE_TOPIC_XXXX`` message) goes through
    :func:`check_message_and_return_size`, so the answer is always that function's."""
    if pos + 8 > limit:
        return -1
    total, magic = _HEADER.unpack_from(buf, pos)
    if magic == _BLANK_MAGIC_U:
        return 0
    if magic not in _MAGICS_U or total <= 0 or pos + total > limit:
        return -1
    try:
        (sys_flag,) = _I32.unpack_from(buf, pos + SYSFLAG_POSITION)
        at = pos + body_length_position(sys_flag)
        (body_len,) = _I32.unpack_from(buf, at)
        body_at = at + 4
        at = body_at + body_len
        if magic == _MAGIC_V1_U:
            topic_len = buf[at]
            at += 1
        else:
            (topic_len,) = _I16.unpack_from(buf, at)
            at += 2
        topic_at = at
        at += topic_len
        (props_len,) = _I16.unpack_from(buf, at)
        at += 2
        settled = (
            body_len >= 0
            and topic_len >= 0
            and (topic_len <= _V1_TOPIC_MAX or magic != _MAGIC_V1_U)
            and props_len >= 0
            and at + props_len == pos + total
            and (
                not check_crc
                or body_len == 0
                or zlib.crc32(memoryview(buf)[body_at : body_at + body_len]) & 0x7FFFFFFF
                == _I32.unpack_from(buf, pos + 8)[0]
            )
            and bytes(buf[topic_at : topic_at + topic_len]) != _SCHEDULE_TOPIC
            and _PROP_CRC32 not in bytes(buf[at : at + props_len])
        )
    except (struct.error, IndexError):
        settled = False
    if settled:
        return int(total)
    req = check_message_and_return_size(buf, pos, limit, check_crc, delay)
    return req.msg_size if req.success else -1
