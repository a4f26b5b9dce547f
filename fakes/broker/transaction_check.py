"""The transaction back-check (``TransactionalMessageCheckService``, ``TransactionalMessageServiceImpl``).

Every ``transactionCheckInterval`` ms of reactor time the broker walks the half queue from the
``CID_RMQ_SYS_TRANS`` consumer offset. A half message with an op ("d") record is done; one older than
``transactionTimeOut`` (or its ``CHECK_IMMUNITY_TIME_IN_SECONDS``) with none is re-put to the half
queue with ``TRANSACTION_CHECK_TIMES`` incremented, and CHECK_TRANSACTION_STATE (oneway, body = the
half message encoded with its real topic and queue) goes to one live channel of its producer group;
the producer answers with END_TRANSACTION ``fromTransactionCheck=true`` about the re-put copy. After
``transactionCheckMax`` checks, or once older than ``fileReservedTime`` hours, the message is moved to
``TRANS_CHECK_MAX_TIME_TOPIC`` instead.

Java pulls op records 32 at a time and sleeps a second when it needs more; here every op record
past the op offset is read before the walk, which reaches the same decisions without sleeping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.command import create_request
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.headers import CheckTransactionStateRequestHeader, to_ext_fields
from rmqtwin.codec.java import in_java_hash_map_order
from rmqtwin.codec.message import (
    MESSAGE_MAGIC_CODE,
    MessageConst,
    MessageExt,
    decode_message_record,
    encode_message_record,
)
from rmqtwin.fakes.broker.topics import (
    PERM_READ,
    PERM_WRITE,
    TRANS_CHECK_MAX_TIME_TOPIC,
    TRANS_HALF_TOPIC,
    TRANS_OP_HALF_TOPIC,
)
from rmqtwin.store_mirror.commitlog import PutMessageStatus
from rmqtwin.store_mirror.message_store import GetMessageResult, GetMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner, properties_to_string

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

    from rmqtwin.fakes.broker.clients import ProducerManager
    from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore

log = Logger(namespace="rmqtwin.fakes.transaction")

TRANS_CHECK_GROUP = "CID_RMQ_SYS_TRANS"
REMOVE_TAG = "d"
OP_MSG_PULL_NUMS = 32
OFFSET_SEPARATOR = ","
PROPERTY_CHECK_TIMES = MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES
PROPERTY_IMMUNITY = MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS
PROPERTY_PREPARED_QUEUE_OFFSET = MessageConst.PROPERTY_TRANSACTION_PREPARED_QUEUE_OFFSET
GET_AVAILABLE_CHANNEL_RETRY_COUNT = 3


@dataclass
class CheckReport:
    """What one run did, per the Java log lines (tests and ``rmqtwin`` logs read it)."""

    checked: list[MessageExt] = field(default_factory=list)
    discarded: list[MessageExt] = field(default_factory=list)
    immunity_renewed: int = 0
    half_offset: int = -1
    op_offset: int = -1


def _java_long(text: str | None) -> int:
    """``getLong``: -1 for anything ``Long.parseLong`` refuses."""
    try:
        return int(text) if text is not None and text.strip() == text and text else -1
    except ValueError:
        return -1


@dataclass(eq=False, kw_only=True)
class TransactionalMessageCheckService:
    """Runs :meth:`check` every ``transactionCheckInterval`` ms on the broker's clock."""

    config: BrokerConfig
    clock: IReactorTime
    now_ms: Callable[[], int]
    topics: TopicTable
    offsets: ConsumerOffsetTable
    """``CID_RMQ_SYS_TRANS``'s offsets in the half and op queues."""
    store: MessageStore
    producers: ProducerManager
    """Whose channels CHECK_TRANSACTION_STATE goes to."""
    runs: int = field(default=0, init=False)
    _loop: LoopingCall | None = field(default=None, init=False)
    _channel_counter: int = field(default=0, init=False)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """The first run comes one interval after start, as ``waitForRunning(checkInterval)`` does."""
        if self._loop is not None:
            return
        loop = LoopingCall(self._run)
        loop.clock = self.clock
        interval = max(1, self.config.check_interval_ms) / 1000.0
        loop.start(interval, now=False).addErrback(lambda f: log.failure("transaction check failed", f))
        self._loop = loop

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._loop = None

    def _run(self) -> None:
        self.runs += 1
        config = self.config
        self.check(int(config.transaction_timeout), int(config.transaction_check_max))

    # -- TransactionalMessageServiceImpl.check ---------------------------------------------------
    def check(self, transaction_timeout: int, transaction_check_max: int) -> CheckReport:
        report = CheckReport()
        # TransactionalMessageBridge.fetchMessageQueues: the first check creates the half topic (one
        # queue, read-write) when no transaction made it yet, so it is listed (and registered) from then.
        self.topics.create_in_send_back_method(TRANS_HALF_TOPIC, 1, PERM_READ | PERM_WRITE)
        store = self.store
        for queue_id in sorted(store.get_queue_ids(TRANS_HALF_TOPIC)):
            self._check_queue(queue_id, transaction_timeout, transaction_check_max, report)
        return report

    def _fetch_offset(self, topic: str, queue_id: int) -> int:
        offset = self.offsets.query_offset(TRANS_CHECK_GROUP, topic, queue_id)
        if offset == -1:
            offset = self.store.get_min_offset_in_queue(topic, queue_id)
        return int(offset)

    def _update_offset(self, topic: str, queue_id: int, offset: int) -> None:
        self.offsets.commit_offset(TRANS_CHECK_GROUP, topic, queue_id, offset)

    def _check_queue(self, queue_id: int, timeout: int, check_max: int, report: CheckReport) -> None:
        start = self.now_ms()
        half_offset = self._fetch_offset(TRANS_HALF_TOPIC, queue_id)
        op_offset = self._fetch_offset(TRANS_OP_HALF_TOPIC, queue_id)
        if half_offset < 0 or op_offset < 0:
            return
        remove_map: dict[int, int] = {}
        op_msg_map: dict[int, set[int]] = {}
        done_op: list[int] = []
        self._fill_op_remove_map(queue_id, op_offset, half_offset, remove_map, op_msg_map, done_op)

        i = new_offset = half_offset
        null_count = 1
        while True:
            removed_op = remove_map.pop(i, None)
            if removed_op is not None:
                pending = op_msg_map.get(removed_op)
                if pending is not None:
                    pending.discard(i)
                    if not pending:
                        del op_msg_map[removed_op]
                        done_op.append(removed_op)
                i += 1
                new_offset = i
                continue
            msg, next_begin = self._get_half_msg(queue_id, i)
            if msg is None:
                null_count += 1
                if null_count > 2 or next_begin is None:
                    break
                i = new_offset = next_begin
                continue
            now = self.now_ms()
            if self._need_discard(msg, check_max) or self._need_skip(msg, now):
                self._resolve_discard(msg)
                report.discarded.append(msg)
                i += 1
                new_offset = i
                continue
            if msg.store_timestamp >= start:
                break
            age = now - msg.born_timestamp
            immunity = timeout
            immunity_text = msg.properties.get(PROPERTY_IMMUNITY)
            if immunity_text is not None:
                seconds = _java_long(immunity_text)
                immunity = timeout if seconds == -1 else seconds * 1000
                if age < immunity:
                    if self._check_prepare_queue_offset(remove_map, done_op, msg):
                        report.immunity_renewed += 1
                        i += 1
                        new_offset = i
                        continue
                    break
            elif 0 <= age < immunity:
                break
            if age > immunity or age <= -1:
                renewed = self._put_back_half_msg(msg)
                if renewed is None:
                    break
                report.checked.append(renewed)
                self._send_check_message(renewed)
            else:
                break  # Java waits for more op records; a later run sees the same state
            i += 1
            new_offset = i

        if new_offset != half_offset:
            self._update_offset(TRANS_HALF_TOPIC, queue_id, new_offset)
        new_op_offset = op_offset
        for done in sorted(done_op):
            if done != new_op_offset:
                break
            new_op_offset += 1
        if new_op_offset != op_offset:
            self._update_offset(TRANS_OP_HALF_TOPIC, queue_id, new_op_offset)
        report.half_offset, report.op_offset = new_offset, new_op_offset

    # -- reading ---------------------------------------------------------------------------------
    def _read(
        self, topic: str, queue_id: int, offset: int, nums: int
    ) -> tuple[list[MessageExt], GetMessageResult]:
        result = self.store.get_message(TRANS_CHECK_GROUP, topic, queue_id, offset, nums)
        found = []
        for buf in result.message_buffers:
            try:
                msg, _ = decode_message_record(bytes(buf), 0, decompress=False)
            except CodecError:
                continue
            found.append(msg)
        return found, result

    def _fill_op_remove_map(  # noqa: PLR0917 - mirrors fillOpRemoveMap
        self,
        queue_id: int,
        op_offset: int,
        mini_offset: int,
        remove_map: dict[int, int],
        op_msg_map: dict[int, set[int]],
        done_op: list[int],
    ) -> None:
        offset = op_offset
        while True:
            ops, result = self._read(TRANS_OP_HALF_TOPIC, queue_id, offset, OP_MSG_PULL_NUMS)
            if not ops:
                return
            for op in ops:
                halves: set[int] = set()
                if op.tags == REMOVE_TAG:
                    for text in op.body.decode("utf-8", "replace").split(OFFSET_SEPARATOR):
                        if not text:
                            continue
                        value = _java_long(text)
                        if value < mini_offset:
                            continue
                        remove_map[value] = op.queue_offset
                        halves.add(value)
                if halves:
                    op_msg_map[op.queue_offset] = halves
                else:
                    done_op.append(op.queue_offset)
            offset = int(result.next_begin_offset)

    def _get_half_msg(self, queue_id: int, offset: int) -> tuple[MessageExt | None, int | None]:
        """The half message at ``offset``; else None and where to continue (None: nothing new)."""
        found, result = self._read(TRANS_HALF_TOPIC, queue_id, offset, 1)
        if found:
            return found[0], None
        if result.status in (
            GetMessageStatus.NO_MESSAGE_IN_QUEUE,
            GetMessageStatus.OFFSET_OVERFLOW_ONE,
            GetMessageStatus.OFFSET_FOUND_NULL,
            GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
        ):
            return None, None
        next_begin = int(result.next_begin_offset)
        return None, next_begin if next_begin != offset else None

    # -- decisions -------------------------------------------------------------------------------
    @staticmethod
    def _need_discard(msg: MessageExt, check_max: int) -> bool:
        """Counts this check in ``TRANSACTION_CHECK_TIMES``; True once it reached the maximum."""
        text = msg.properties.get(PROPERTY_CHECK_TIMES)
        times = 1
        if text is not None:
            try:
                times = int(text)
            except ValueError:
                times = -1
            if times >= check_max:
                return True
            times += 1
        msg.properties[PROPERTY_CHECK_TIMES] = str(times)
        return False

    def _need_skip(self, msg: MessageExt, now: int) -> bool:
        return now - msg.born_timestamp > int(self.config.file_reserved_time) * 3600 * 1000

    def _check_prepare_queue_offset(
        self, remove_map: dict[int, int], done_op: list[int], msg: MessageExt
    ) -> bool:
        text = msg.properties.get(PROPERTY_PREPARED_QUEUE_OFFSET)
        if text is None:
            return self._put_immunity_msg_back(msg)
        prepared = _java_long(text)
        if prepared == -1:
            return False
        op_offset = remove_map.pop(prepared, None)
        if op_offset is not None:
            done_op.append(op_offset)
            return True
        return self._put_immunity_msg_back(msg)

    # -- writing ---------------------------------------------------------------------------------
    def _renew_half_message_inner(self, msg: MessageExt) -> MessageExtBrokerInner:
        """``renewHalfMessageInner``: flag and reconsume times are not carried over, as in Java."""
        props = in_java_hash_map_order(dict(msg.properties))
        return MessageExtBrokerInner(
            topic=msg.topic,
            body=msg.body,
            queue_id=msg.queue_id,
            sys_flag=msg.sys_flag,
            properties=props,
            properties_string=properties_to_string(props),
            born_timestamp=msg.born_timestamp,
            born_host=msg.born_host,
            store_host=msg.store_host,
        )

    def _put_immunity_msg_back(self, msg: MessageExt) -> bool:
        inner = self._renew_half_message_inner(msg)
        prepared = msg.properties.get(PROPERTY_PREPARED_QUEUE_OFFSET)
        inner.properties[PROPERTY_PREPARED_QUEUE_OFFSET] = (
            prepared if prepared is not None else str(msg.queue_offset)
        )
        inner.properties_string = properties_to_string(inner.properties)
        return self.store.put_message(inner).status is PutMessageStatus.PUT_OK

    def _put_back_half_msg(self, msg: MessageExt) -> MessageExt | None:
        """Append a copy to the half queue; the check then names the copy (offsets, offset msgId)."""
        result = self.store.put_message(self._renew_half_message_inner(msg))
        if result.status is not PutMessageStatus.PUT_OK or result.append is None:
            log.error(
                "put back of half message {msg_id} failed: {status}", msg_id=msg.msg_id, status=result.status
            )
            return None
        append = result.append
        return replace(
            msg,
            queue_offset=append.logics_offset,
            commitlog_offset=append.wrote_offset,
            msg_id=append.msg_id,
            properties=dict(msg.properties),
        )

    def _resolve_discard(self, msg: MessageExt) -> None:
        """``resolveDiscardMsg`` of the default check listener: park in TRANS_CHECK_MAX_TIME_TOPIC."""
        self.topics.create_in_send_back_method(TRANS_CHECK_MAX_TIME_TOPIC, 1, PERM_READ | PERM_WRITE)
        inner = self._renew_half_message_inner(msg)
        inner.topic, inner.queue_id = TRANS_CHECK_MAX_TIME_TOPIC, 0
        inner.flag, inner.reconsume_times = msg.flag, msg.reconsume_times
        result = self.store.put_message(inner)
        if result.status is not PutMessageStatus.PUT_OK:
            log.error(
                "discarding half message {msg_id} failed: {status}", msg_id=msg.msg_id, status=result.status
            )

    # -- AbstractTransactionalMessageCheckListener.sendCheckMessage ------------------------------
    def _send_check_message(self, msg: MessageExt) -> bool:
        uniq_key = msg.properties.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
        header = CheckTransactionStateRequestHeader(
            topic=msg.topic,
            commit_log_offset=msg.commitlog_offset,
            offset_msg_id=msg.msg_id,
            msg_id=uniq_key,
            transaction_id=uniq_key,
            tran_state_table_offset=msg.queue_offset,
            bname=self.config.broker_name,
        )
        group = msg.properties.get(MessageConst.PROPERTY_PRODUCER_GROUP)
        channel = self._available_channel(group) if group is not None else None
        if channel is None:
            log.warn("check transaction failed, no channel of producer group {group}", group=group)
            return False
        body = encode_check_body(msg)
        channel.send_oneway(
            create_request(RequestCode.CHECK_TRANSACTION_STATE, to_ext_fields(header), body, oneway=True)
        )
        return True

    def _available_channel(self, group: str) -> Any | None:
        """``ProducerManager.getAvailableChannel``: round-robin over the group's channels, trying the
        next ones (up to 3) when the picked one is not active."""
        channels = list(self.producers.groups.get(group, {}))
        if not channels:
            return None
        self._channel_counter += 1
        index = self._channel_counter % len(channels)
        for _ in range(GET_AVAILABLE_CHANNEL_RETRY_COUNT + 1):
            channel = channels[index]
            if getattr(channel, "is_active", True):
                return channel
            index = (index + 1) % len(channels)
        return None


def encode_check_body(msg: MessageExt) -> bytes:
    """``MessageDecoder.encode(msgExt, false)`` of the half message with its real topic and queue."""
    props = in_java_hash_map_order(dict(msg.properties))
    real = replace(
        msg,
        topic=props.get(MessageConst.PROPERTY_REAL_TOPIC, msg.topic),
        queue_id=int(props.get(MessageConst.PROPERTY_REAL_QUEUE_ID, msg.queue_id)),
        store_size=0,
        magic=MESSAGE_MAGIC_CODE,
        properties=props,
        properties_string=properties_to_string(props),
    )
    return encode_message_record(real, compute_crc=False)
