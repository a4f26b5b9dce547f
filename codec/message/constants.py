"""Record magics, fixed record positions, ``MessageSysFlag`` and ``MessageConst``."""

from __future__ import annotations

from typing import Final

from rmqtwin.codec.compression import (
    COMPRESSED_FLAG,
    COMPRESSION_LZ4_TYPE,
    COMPRESSION_TYPE_COMPARATOR,
    COMPRESSION_ZLIB_TYPE,
    COMPRESSION_ZSTD_TYPE,
)

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
    "MessageConst",
    "MessageSysFlag",
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


#: A host as ``(ip, port)``; IPv6 when the ip has a colon.
Host = tuple[str, int]
