"""Half messages and END_TRANSACTION (``TransactionalMessageBridge`` + ``EndTransactionProcessor``).

A ``TRAN_MSG=true`` send is stored in ``RMQ_SYS_TRANS_HALF_TOPIC`` queue 0 with ``REAL_TOPIC``/
``REAL_QID``; COMMIT re-puts it to the real topic (transaction bits = COMMIT, prepared offset =
the half record) and both COMMIT and ROLLBACK write the ``d`` op record: at once on the 4.9 line
(body: the half offset), in batches on the 5.x line (``TransactionalOpBatchService``: ``<offset>,``
each, one op message per half queue every ``transactionOpBatchInterval`` (3 s) or once
``transactionOpMsgMaxSize`` (4096) characters wait), so 5.5.0's check-back may ask about a message
ended less than a batch ago. The periodic
CHECK_TRANSACTION_STATE back-check is ``transaction_check.TransactionalMessageCheckService``; the
producer's answer to it is an END_TRANSACTION with ``fromTransactionCheck=true`` naming the re-put
copy of the half message, handled here like any other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.errors import CodecError, HeaderFieldError
from rmqtwin.codec.headers import (
    EndTransactionRequestHeader,
    ResumeCheckHalfMessageRequestHeader,
    from_ext_fields,
)
from rmqtwin.codec.java import in_java_hash_map_order
from rmqtwin.codec.message import MessageConst, MessageExt, MessageSysFlag, decode_offset_msg_id
from rmqtwin.fakes.broker.topics import PERM_READ, PERM_WRITE, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from rmqtwin.fakes.dispatch import Channel, response
from rmqtwin.store_mirror.commitlog import PutMessageResult, PutMessageStatus
from rmqtwin.store_mirror.record import (
    MessageExtBrokerInner,
    properties_to_string,
)

if TYPE_CHECKING:
    from twisted.internet.interfaces import IDelayedCall, IReactorTime

    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore


OP_BATCH_INTERVAL_MS = 3000  # BrokerConfig.transactionOpBatchInterval
OP_MSG_MAX_SIZE = 4096  # BrokerConfig.transactionOpMsgMaxSize
OFFSET_SEPARATOR = ","


@dataclass
class _OpContext:
    """``MessageQueueOpContext``: one half queue's ended offsets waiting for their op message."""

    last_write_ms: int
    data: list[str] = field(default_factory=list)
    total_size: int = 0


@dataclass(eq=False, kw_only=True)
class TransactionService:
    """Half messages in, END_TRANSACTION and RESUME_CHECK_HALF_MESSAGE (``EndTransactionProcessor``)."""

    config: BrokerConfig
    topics: TopicTable
    store: MessageStore
    store_host: tuple[str, int]
    now_ms: Callable[[], int]
    notify_message_arriving: Callable[[str, int], None]
    clock: IReactorTime
    op_contexts: dict[int, _OpContext] = field(default_factory=dict, init=False)
    _op_batch_call: IDelayedCall | None = field(default=None, init=False)

    def parse_half_message(self, msg: MessageExtBrokerInner) -> None:
        """Turn a prepared message into the half record (``parseHalfMessageInner``)."""
        props = dict(msg.properties)
        props["REAL_TOPIC"] = msg.topic
        props["REAL_QID"] = str(msg.queue_id)
        msg.sys_flag = MessageSysFlag.reset_transaction_value(
            msg.sys_flag, MessageSysFlag.TRANSACTION_NOT_TYPE
        )
        msg.topic = TRANS_HALF_TOPIC
        msg.queue_id = 0
        msg.properties = props
        msg.properties_string = properties_to_string(props)
        self.topics.create_in_send_back_method(TRANS_HALF_TOPIC, 1, PERM_READ | PERM_WRITE)

    def end_transaction(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        """``EndTransactionProcessor``: COMMIT or ROLLBACK a half message; UNKNOWN gets no answer."""
        try:
            header = from_ext_fields(EndTransactionRequestHeader, request.ext_fields)
        except HeaderFieldError as exc:
            return response(exc.response_code, exc.remark)
        if self.config.broker_role == "SLAVE":
            return response(ResponseCode.SLAVE_NOT_AVAILABLE)
        kind = header.commit_or_rollback
        if kind not in (MessageSysFlag.TRANSACTION_COMMIT_TYPE, MessageSysFlag.TRANSACTION_ROLLBACK_TYPE):
            return None
        commit_log_offset = header.commit_log_offset
        half = self.store.look_message_by_offset(commit_log_offset)
        if half is None:
            return response(ResponseCode.SYSTEM_ERROR, "Find prepared transaction message failed")
        if self.config.five and self._reject_commit_or_rollback(header, half):
            return response(ResponseCode.ILLEGAL_OPERATION)
        props = dict(half.properties)
        if props.get("PGROUP") != header.producer_group:
            return response(ResponseCode.SYSTEM_ERROR, "The producer group wrong")
        if half.queue_offset != header.tran_state_table_offset:
            return response(ResponseCode.SYSTEM_ERROR, "The transaction state table offset wrong")
        if half.commitlog_offset != commit_log_offset:
            return response(ResponseCode.SYSTEM_ERROR, "The commit log offset wrong")
        answer = response()
        if kind == MessageSysFlag.TRANSACTION_COMMIT_TYPE:
            stored = properties_to_string(props)
            props["WAIT"] = "false"
            props.pop("TRAN_MSG", None)
            real_topic = props.get("REAL_TOPIC", "")
            inner = MessageExtBrokerInner.moved(
                half,
                real_topic,
                int(props.get("REAL_QID", "0")),
                props,
                stored,
                sys_flag=MessageSysFlag.reset_transaction_value(
                    half.sys_flag, MessageSysFlag.TRANSACTION_COMMIT_TYPE
                ),
                prepared_transaction_offset=commit_log_offset,
            )
            result = self.store.put_message(inner)
            if result.status not in (
                PutMessageStatus.PUT_OK,
                PutMessageStatus.FLUSH_DISK_TIMEOUT,
                PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
                PutMessageStatus.SLAVE_NOT_AVAILABLE,
            ):
                return response(ResponseCode.SYSTEM_ERROR, result.status.name)
            self.notify_message_arriving(real_topic, inner.queue_id)
        self._delete_prepare_message(half)
        return answer

    def _reject_commit_or_rollback(self, header: EndTransactionRequestHeader, half: MessageExt) -> bool:
        """5.x ``rejectCommitOrRollback``: an answer not asked for by a check, after the message's
        ``CHECK_IMMUNITY_TIME_IN_SECONDS``, is refused (the check-back decides it)."""
        if header.from_transaction_check:
            return False
        text = half.properties.get(MessageConst.PROPERTY_CHECK_IMMUNITY_TIME_IN_SECONDS)
        if not text:
            return False
        timeout = int(self.config.transaction_timeout)
        try:
            immunity = int(text) * 1000
        except ValueError:
            immunity = timeout
        return self.now_ms() - half.born_timestamp > immunity

    # -- op messages (``deletePrepareMessage``; 5.x: ``TransactionalOpBatchService``) ------------------
    def _delete_prepare_message(self, half: MessageExt) -> None:
        if not self.config.five:
            self._put_op(half.queue_id, str(half.queue_offset))
            return
        context = self.op_contexts.get(half.queue_id)
        if context is None:
            context = self.op_contexts[half.queue_id] = _OpContext(last_write_ms=self.now_ms())
        data = f"{half.queue_offset}{OFFSET_SEPARATOR}"
        context.data.append(data)
        context.total_size += len(data)
        if context.total_size > self._op_max_size():
            self._schedule_op_batch(0.0)

    def _op_interval(self) -> int:
        return int(self.config.extra.get("transactionOpBatchInterval", OP_BATCH_INTERVAL_MS))

    def _op_max_size(self) -> int:
        return int(self.config.extra.get("transactionOpMsgMaxSize", OP_MSG_MAX_SIZE))

    def start_op_batch(self) -> None:
        """The 5.x batch service's first run comes one interval after start."""
        self._schedule_op_batch(self._op_interval() / 1000.0)

    def stop_op_batch(self) -> None:
        """At shutdown 5.5.0's service runs once more: the batches due are written, the rest lost."""
        if self._op_batch_call is not None:
            self._cancel_op_batch()
            self.batch_send_op_message()

    def _cancel_op_batch(self) -> None:
        if self._op_batch_call is not None and self._op_batch_call.active():
            self._op_batch_call.cancel()
        self._op_batch_call = None

    def _schedule_op_batch(self, delay: float) -> None:
        self._cancel_op_batch()
        self._op_batch_call = self.clock.callLater(delay, self._run_op_batch)

    def _run_op_batch(self) -> None:
        self._op_batch_call = None
        wakeup_ms = self.batch_send_op_message()
        self._schedule_op_batch(max(0, wakeup_ms - self.now_ms()) / 1000.0)

    def batch_send_op_message(self) -> int:
        """``batchSendOpMessage``: one op message for each queue whose batch is due (its interval
        since the last write passed, or full); returns when to run again (0: at once)."""
        start = self.now_ms()
        interval, max_size = self._op_interval(), self._op_max_size()
        first = start
        over_size = False
        for queue_id, context in self.op_contexts.items():
            if not context.data or (
                context.total_size < max_size and start - context.last_write_ms < interval
            ):
                continue
            body = []
            length = 0
            while context.data and length < max_size:
                piece = context.data.pop(0)
                body.append(piece)
                length += len(piece)
            context.total_size -= length
            context.last_write_ms = self.now_ms()
            first = min(first, context.last_write_ms)
            over_size = over_size or context.total_size >= max_size
            self._put_op(queue_id, "".join(body))
        wakeup = first + interval
        return 0 if over_size or wakeup <= start else wakeup

    def _put_op(self, queue_id: int, body: str) -> PutMessageResult:
        self.topics.create_in_send_back_method(TRANS_OP_HALF_TOPIC, 1, PERM_READ | PERM_WRITE)
        props = {"TAGS": "d", "WAIT": "false"}
        op = MessageExtBrokerInner(
            topic=TRANS_OP_HALF_TOPIC,
            body=body.encode(),
            queue_id=queue_id,
            properties=props,
            properties_string=properties_to_string(props),
            sys_flag=MessageSysFlag.TRANSACTION_NOT_TYPE,
            born_timestamp=self.now_ms(),
            born_host=self.store_host,
            store_host=self.store_host,
        )
        return self.store.put_message(op)

    def resume_check_half_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """RESUME_CHECK_HALF_MESSAGE (``mqadmin resumeCheckHalfMessage``): the half message at the offset
        ``msgId`` names is put back to the half queue with ``TRANSACTION_CHECK_TIMES=0``, so the check
        service asks its producer again. Anything wrong with the id or the record is one answer."""
        header = from_ext_fields(ResumeCheckHalfMessageRequestHeader, request.ext_fields, strict=False)
        msg = None
        if header.msg_id is not None:
            try:
                _, _, offset = decode_offset_msg_id(header.msg_id)
            except CodecError:
                offset = None
            if offset is not None:
                msg = self.store.look_message_by_offset(offset)
        if msg is None:
            return response(ResponseCode.SYSTEM_ERROR, RESUME_FAILED)
        props = dict(msg.properties)
        props[MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES] = "0"
        props = in_java_hash_map_order(props)
        inner = MessageExtBrokerInner.moved(msg, TRANS_HALF_TOPIC, 0, props, properties_to_string(props))
        if self.store.put_message(inner).status is not PutMessageStatus.PUT_OK:
            return response(ResponseCode.SYSTEM_ERROR, "Put message back to RMQ_SYS_TRANS_HALF_TOPIC failed.")
        return response()


RESUME_FAILED = "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC."
