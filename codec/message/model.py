"""``Message`` and ``MessageExt``: a message as the client sends it and as the broker stores it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from rmqtwin.codec.compression import (
    COMPRESSED_FLAG,
    CompressionType,
    get_compression_type,
)
from rmqtwin.codec.message.constants import (
    MESSAGE_MAGIC_CODE,
    Host,
    MessageConst,
    MessageSysFlag,
)
from rmqtwin.codec.message.ids import (
    create_offset_msg_id,
)
from rmqtwin.codec.message.properties import (
    tags_code,
)

__all__ = ["Message", "MessageExt"]

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
