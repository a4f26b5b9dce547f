"""The SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessages``/``decodeMessages``) and its expansion."""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rmqtwin.codec.errors import MessageDecodeError, MessageEncodeError
from rmqtwin.codec.message.constants import (
    _SHORT_MAX,
    PROPERTY_SEPARATOR,
)
from rmqtwin.codec.message.model import (
    Message,
    MessageExt,
)
from rmqtwin.codec.message.properties import (
    body_crc32,
    properties_to_string,
    string_to_properties,
)
from rmqtwin.codec.message.record import (
    _I16,
)

__all__ = [
    "BatchItem",
    "decode_batch",
    "encode_batch",
    "encode_batch_item",
    "expand_batch",
    "merge_batch_properties",
]

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
