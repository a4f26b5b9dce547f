"""SEND_MESSAGE / SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE and CONSUMER_SEND_MSG_BACK.

Follows ``SendMessageProcessor`` and ``AbstractSendMessageProcessor.msgCheck`` of 4.9.8: the same
checks in the same order with the same codes and remarks, topic auto-creation through the
request's default topic (TBW102), retry/DLQ redirection, ``CLUSTER`` added and ``WAIT`` left out
of the stored properties.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred, gatherResults, succeed

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.headers import (
    ConsumerSendMsgBackRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    send_v2_as_v1,
)
from rmqtwin.codec.java import java_int
from rmqtwin.codec.message import (
    MessageSysFlag,
    UniqIdGenerator,
    decode_batch,
    encode_message_record,
    merge_batch_properties,
    string_to_properties,
)
from rmqtwin.fakes.broker.attributes import CLEANUP_POLICY
from rmqtwin.fakes.broker.timer import (
    TIMER_TOPIC,
    build_recall_handle,
    timer_illegal_remark,
    transform_timer_message,
)
from rmqtwin.fakes.broker.topics import (
    DLQ_GROUP_TOPIC_PREFIX,
    NOT_ALLOWED_SEND_TOPICS,
    PERM_READ,
    PERM_WRITE,
    RETRY_GROUP_TOPIC_PREFIX,
    TOPIC_MAX_LENGTH,
    is_writeable,
    parameter_error,
    validate_topic,
)
from rmqtwin.fakes.dispatch import (
    REJECT_REQUEST_REMARK,
    Channel,
    HandlerResult,
    decode_header,
    decode_header_fast,
    host_tuple,
    response,
    suggest_todo,
)
from rmqtwin.store_mirror.commitlog import PutMessageResult, PutMessageStatus
from rmqtwin.store_mirror.record import (
    MessageExtBrokerInner,
    properties_to_string,
)

_FLUSH_CODES = {
    PutMessageStatus.FLUSH_DISK_TIMEOUT: ResponseCode.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT: ResponseCode.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE: ResponseCode.SLAVE_NOT_AVAILABLE,
}
"""A SYNC_FLUSH send the store kept but could not flush in time: SUCCESS's siblings, as Java answers."""

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.stats import BrokerStats
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.broker.transaction import TransactionService
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.config import TopicConfig
    from rmqtwin.store_mirror.message_store import MessageStore

V3_4_9 = 121
DLQ_NUMS_PER_GROUP = 1

_SEND_V2_CODES = (
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.SEND_REPLY_MESSAGE_V2,
)


def send_header(request: RemotingCommand) -> SendMessageRequestHeader:
    """``parseRequestHeader``: the V1 header of any send request (a V2 header converted)."""
    v2 = request.code in _SEND_V2_CODES
    group_key = "a" if v2 else "producerGroup"
    if request.ext_fields is not None and group_key not in request.ext_fields:
        # @CFNotNull, but Java only logs its absence and no send processor reads it: real 4.9.7 and
        # 5.5.0 store such a message and answer 0.
        request.ext_fields = {**request.ext_fields, group_key: ""}
    if v2:
        return send_v2_as_v1(request.ext_fields)
    return decode_header(request, SendMessageRequestHeader)


BATCH_TOO_LARGE_REMARK = (
    "java.lang.RuntimeException: message body size exceeded, "
    "org.apache.rocketmq.store.MessageExtEncoder.encode(MessageExtEncoder.java:290)"
)
"""What 5.5.0 answers (SYSTEM_ERROR) a batch whose records add up to more than maxMessageSize."""


def _records_size(batch: list[MessageExtBrokerInner]) -> int:
    """The stored size of a batch's records, headers and properties included."""
    return sum(len(encode_message_record(m)) for m in batch)


@dataclass(eq=False, kw_only=True)
class SendProcessor:
    config: BrokerConfig
    topics: TopicTable
    groups: SubscriptionGroupTable
    store: MessageStore
    stats: BrokerStats
    store_host: tuple[str, int]
    now_ms: Callable[[], int]
    transactions: TransactionService
    """Turns a prepared message into its half record."""
    notify_message_arriving: Callable[[str, int], None]
    sync_flush: bool
    """``flushDiskType=SYNC_FLUSH``: a send that asks to wait answers once its record is flushed."""
    submit_replica_request: Callable[[PutMessageResult], Deferred[PutMessageStatus] | None]
    """What a SYNC_MASTER send waits for besides the flush (None: nothing)."""
    uniq_ids: UniqIdGenerator = field(init=False)

    def __post_init__(self) -> None:
        self.uniq_ids = UniqIdGenerator(ip=self.store_host[0], clock=self.now_ms)

    def response_ext(self) -> dict[str, Any]:
        return {"MSG_REGION": self.config.region_id, "TRACE_ON": self.config.trace_on}

    def _forbidden(self, what: str = "sending message") -> RemotingCommand:
        return response(
            ResponseCode.NO_PERMISSION,
            f"the broker[{self.config.broker_ip1}] {what} is forbidden",
            self.response_ext(),
        )

    # -- checks ---------------------------------------------------------------------------------
    def msg_check(
        self, channel: Channel, header: SendMessageRequestHeader
    ) -> tuple[TopicConfig | None, RemotingCommand | None]:
        """``msgCheck``: the topic config to send to, or the failure response."""
        topic = header.topic
        ext_fields = self.response_ext()
        if not is_writeable(self.config.broker_permission) and self.topics.is_order_topic(topic):
            return None, self._forbidden()
        five = self.config.five
        problem = validate_topic(topic, five=five)
        if problem is not None:
            return None, response(parameter_error(five), problem, ext_fields)
        if topic in NOT_ALLOWED_SEND_TOPICS:
            return None, response(
                ResponseCode.NO_PERMISSION, f"Sending message to topic[{topic}] is forbidden.", ext_fields
            )
        config = self.topics.get(topic)
        if config is None:
            sys_flag = (2 if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else 1) if header.unit_mode else 0
            config = self.topics.create_in_send_message_method(
                topic, header.default_topic, header.default_topic_queue_nums, sys_flag
            )
            if config is None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                config = self.topics.create_in_send_back_method(topic, 1, PERM_WRITE | PERM_READ, sys_flag)
            if config is None:
                return None, response(
                    ResponseCode.TOPIC_NOT_EXIST,
                    f"topic[{topic}] not exist, apply first please!{suggest_todo(self.config.five)}",
                    ext_fields,
                )
        queue_id = header.queue_id
        valid = max(config.write_queue_nums, config.read_queue_nums)
        if queue_id >= valid:
            return None, response(
                parameter_error(five),
                f"request queueId[{queue_id}] is illegal, {topic_config_str(config, five=five)} "
                f"Producer: {channel.remote_addr}",
                ext_fields,
            )
        return config, None

    # -- SEND_MESSAGE / V2 / BATCH ----------------------------------------------------------------
    def process_send(self, channel: Channel, request: RemotingCommand) -> Any:
        if self._rejected():
            return response(ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
        v2 = request.code in _SEND_V2_CODES
        if not self.config.five and (request.ext_fields or {}).get("b" if v2 else "topic") is None:
            # 4.9.7's msgCheck meets the null topic before anything else does (5.5.0 fails with an NPE);
            # only the V2 header (a FastCodesHeader) fails earlier, on a number that does not parse.
            if v2:
                decode_header_fast(request, SendMessageRequestHeaderV2)
            return response(ResponseCode.SYSTEM_ERROR, validate_topic(None), self.response_ext())
        header = send_header(request)
        if header.batch or request.code == RequestCode.SEND_BATCH_MESSAGE:
            return self.send_batch(channel, request, header)
        return self.send_message(channel, request, header)

    def send_message(
        self, channel: Channel, request: RemotingCommand, header: SendMessageRequestHeader
    ) -> Any:
        config, failure = self.msg_check(channel, header)
        if failure is not None or config is None:
            return failure
        if not request.body and self.config.five:
            # 5.5.0 fails on the null body after its checks; 4.9.7 stores an empty message.
            return response(ResponseCode.SYSTEM_ERROR, "java.lang.NullPointerException", self.response_ext())
        topic = header.topic
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = random.randrange(99_999_999) % max(1, config.write_queue_nums)
        reconsume_times = header.reconsume_times or 0
        delay_to_zero = False
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            group = topic[len(RETRY_GROUP_TOPIC_PREFIX) :]
            group_config = self.groups.find(group)
            if group_config is None:
                return response(
                    ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                    f"subscription group not exist, {group} {suggest_todo(self.config.five)}",
                    self.response_ext(),
                )
            max_reconsume = group_config.retry_max_times
            header_max = header.max_reconsume_times
            if request.version >= V3_4_9 and header_max is not None:
                max_reconsume = header_max
            if reconsume_times >= max_reconsume:
                topic = DLQ_GROUP_TOPIC_PREFIX + group
                queue_id = random.randrange(99_999_999) % DLQ_NUMS_PER_GROUP
                config = self.topics.create_in_send_back_method(
                    topic, DLQ_NUMS_PER_GROUP, PERM_WRITE | PERM_READ
                )
                delay_to_zero = True
        sys_flag = header.sys_flag
        if config.topic_filter_type == "MULTI_TAG":
            sys_flag |= MessageSysFlag.MULTI_TAGS_FLAG
        props = string_to_properties(header.properties or "")
        if delay_to_zero:
            # 4.9.8 sets DELAY=0 before the request's properties replace the map: a client DELAY survives.
            props.setdefault("DELAY", "0")
        five = self.config.five
        if five:
            # 5.x brokers give a message without a unique id one (the answer's transactionId), refuse
            # a keyless message to a compacted topic, add the region and trace switch, keep WAIT.
            if not props.get("UNIQ_KEY"):
                props["UNIQ_KEY"] = self.uniq_ids()
            if (config.attributes or {}).get(CLEANUP_POLICY) == "COMPACTION" and not props.get(
                "KEYS", ""
            ).strip():
                return response(
                    ResponseCode.MESSAGE_ILLEGAL, "Required message key is missing", self.response_ext()
                )
            props["MSG_REGION"] = self.config.region_id
            props["TRACE_ON"] = "true" if self.config.trace_on else "false"
        props["CLUSTER"] = self.config.broker_cluster_name
        wait = props.get("WAIT") if five else props.pop("WAIT", None)
        msg = MessageExtBrokerInner(
            topic=topic,
            body=request.body or b"",
            queue_id=queue_id,
            flag=header.flag,
            properties=props,
            properties_string=properties_to_string(props),
            sys_flag=sys_flag,
            born_timestamp=header.born_timestamp,
            born_host=host_tuple(channel.remote_addr),
            store_host=self.store_host,
            reconsume_times=reconsume_times,
        )
        recall_handle = None
        if props.get("TRAN_MSG", "false").lower() == "true":
            if self.config.reject_transaction_message:
                return self._forbidden("sending transaction message")
            self.transactions.parse_half_message(msg)
        elif five:
            parked = transform_timer_message(props, topic, queue_id, self.now_ms())
            if parked is False:
                remark = timer_illegal_remark()
                return response(ResponseCode.MESSAGE_ILLEGAL, remark, self.response_ext())
            if parked:
                msg.topic, msg.queue_id = TIMER_TOPIC, 0
                msg.properties_string = properties_to_string(props)
                if not topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                    # ``attachRecallHandle``: one past TIMER_OUT_MS, which was rounded down.
                    recall_handle = build_recall_handle(
                        topic, self.config.broker_name, int(props["TIMER_OUT_MS"]) + 1, props["UNIQ_KEY"]
                    )
        if wait is not None and not five:
            props["WAIT"] = wait
        result = self.store.put_message(msg)
        return self._handle_put_result(
            result,
            msg,
            queue_id,
            wait_store=wait != "false",
            five=five,
            transaction_id=props.get("UNIQ_KEY"),
            recall_handle=recall_handle,
        )

    def send_batch(self, channel: Channel, request: RemotingCommand, header: SendMessageRequestHeader) -> Any:
        topic = header.topic
        config, failure = self.msg_check(channel, header)
        if failure is not None or config is None:
            return failure
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = random.randrange(99_999_999) % max(1, config.write_queue_nums)
        if len(topic) > TOPIC_MAX_LENGTH:
            return response(
                ResponseCode.MESSAGE_ILLEGAL,
                f"message topic length too long {len(topic)}",
                self.response_ext(),
            )
        sys_flag = header.sys_flag
        if config.topic_filter_type == "MULTI_TAG":
            sys_flag |= MessageSysFlag.MULTI_TAGS_FLAG
        props = string_to_properties(header.properties or "")
        props["CLUSTER"] = self.config.broker_cluster_name
        batch_props = properties_to_string(props)
        if not request.body:
            # Both real lines fail on the null body: SYSTEM_ERROR with the exception text.
            return response(ResponseCode.SYSTEM_ERROR, "java.lang.NullPointerException", self.response_ext())
        try:
            items = decode_batch(request.body)
        except CodecError as exc:
            # Real 4.9.7 and 5.5.0 answer a malformed batch body with the decoder's exception
            # (ArrayIndexOutOfBounds / BufferUnderflow) as SYSTEM_ERROR and store nothing.
            return response(
                ResponseCode.SYSTEM_ERROR,
                f"java.nio.BufferUnderflowException: {exc}",
                self.response_ext(),
            )
        born_host = host_tuple(channel.remote_addr)
        born_timestamp = header.born_timestamp
        reconsume_times = header.reconsume_times or 0
        batch = []
        five = self.config.five
        for item in items:
            # 4.9 appends the batch's properties to each message's; 5.5.0 stores each message's own.
            merged = (
                item.properties_string
                if five
                else merge_batch_properties(item.properties_string, batch_props)
            )
            batch.append(
                MessageExtBrokerInner(
                    topic=topic,
                    body=item.body,
                    queue_id=queue_id,
                    flag=item.flag,
                    properties=string_to_properties(merged),
                    properties_string=merged,
                    sys_flag=sys_flag,
                    born_timestamp=born_timestamp,
                    born_host=born_host,
                    store_host=self.store_host,
                    reconsume_times=reconsume_times,
                )
            )
        if not batch:
            return self._failed_put(PutMessageStatus.MESSAGE_ILLEGAL)
        if five and len(batch) > 1 and _records_size(batch) > self.config.max_message_size:
            # 5.5.0's MessageExtEncoder throws on a batch over maxMessageSize (a 4.5 MiB batch of
            # 0.9 MiB bodies); 4.9.7's store answers it MESSAGE_ILLEGAL, as the twin's store does.
            return response(ResponseCode.SYSTEM_ERROR, BATCH_TOO_LARGE_REMARK, self.response_ext())
        result = self.store.put_messages(batch)
        return self._handle_put_result(
            result,
            batch[0],
            queue_id,
            wait_store=props.get("WAIT") != "false",
            five=five,
            transaction_id=props.get("UNIQ_KEY"),
        )

    def _handle_put_result(
        self,
        result: PutMessageResult,
        msg: MessageExtBrokerInner,
        queue_id: int,
        *,
        wait_store: bool,
        five: bool,
        transaction_id: str | None = None,
        recall_handle: str | None = None,
    ) -> HandlerResult:
        """The answer to a stored send; 5.x answers carry the message's (a batch's own) UNIQ_KEY as
        ``transactionId``, which rocketmq-proxy and Spring's transactional send commit by."""
        if result.status is not PutMessageStatus.PUT_OK or result.append is None:
            return self._failed_put(result.status)
        append = result.append
        topic = msg.topic
        self.stats.on_put(topic, append.msg_num or 1)
        self.notify_message_arriving(topic, msg.queue_id)
        ext_fields = SendMessageResponseHeader(
            msg_id=append.msg_id,
            queue_id=queue_id,
            queue_offset=append.logics_offset,
            msg_region=self.config.region_id,
            trace_on=self.config.trace_on,
        )
        if five:
            ext_fields.transaction_id = transaction_id
            ext_fields.recall_handle = recall_handle
        replicated = self.submit_replica_request(result) if wait_store else None
        if (not wait_store or not self.sync_flush) and replicated is None:
            return response(ext_fields=ext_fields)
        flushed = (
            self.store.wait_for_flush(result)
            if wait_store and self.sync_flush
            else succeed(PutMessageStatus.PUT_OK)
        )

        def answer(statuses: list[PutMessageStatus]) -> RemotingCommand:
            # handleDiskFlushAndHA: a replica failure outranks a flush failure
            failed = [s for s in statuses if s is not PutMessageStatus.PUT_OK]
            code = _FLUSH_CODES.get(failed[-1], ResponseCode.SUCCESS) if failed else ResponseCode.SUCCESS
            return response(code, ext_fields=ext_fields)

        waits = [flushed] + ([replicated] if replicated is not None else [])
        return gatherResults(waits).addCallback(answer)

    def _failed_put(self, status: PutMessageStatus) -> RemotingCommand:
        ext_fields = self.response_ext()
        if status is PutMessageStatus.CREATE_MAPEDFILE_FAILED:
            return response(
                ResponseCode.SYSTEM_ERROR, "create mapped file failed, server is busy or broken.", ext_fields
            )
        if status in (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED):
            return response(
                ResponseCode.MESSAGE_ILLEGAL,
                "the message is illegal, maybe msg body or properties length not matched. "
                f"msg body length limit {self.config.max_message_size}B, "
                "msg properties length limit 32KB.",
                ext_fields,
            )
        if status is PutMessageStatus.SERVICE_NOT_AVAILABLE:
            return response(
                ResponseCode.SERVICE_NOT_AVAILABLE,
                "service not available now. It may be caused by one of the following reasons: "
                "the broker's disk is full [0.0], messages are put to the slave, "
                "message store has been shut down, etc.",
                ext_fields,
            )
        if status is PutMessageStatus.OS_PAGECACHE_BUSY:
            return response(
                ResponseCode.SYSTEM_ERROR, "[PC_SYNCHRONIZED]broker busy, start flow control for a while"
            )
        if status is PutMessageStatus.UNKNOWN_ERROR:
            return response(ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR", ext_fields)
        return response(ResponseCode.SYSTEM_ERROR, "UNKNOWN_ERROR DEFAULT", ext_fields)

    # -- CONSUMER_SEND_MSG_BACK ---------------------------------------------------------------
    def _rejected(self) -> bool:
        """5.x ``SendMessageProcessor.rejectRequest``: a slave turns sends away before reading them (4.9
        lets the store refuse them: SERVICE_NOT_AVAILABLE)."""
        config = self.config
        return config.five and config.slave

    def consumer_send_msg_back(self, channel: Channel, request: RemotingCommand) -> Any:
        if self._rejected():
            return response(ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
        header = decode_header(request, ConsumerSendMsgBackRequestHeader)
        group = header.group
        group_config = self.groups.find(group)
        if group_config is None:
            return response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group} {suggest_todo(self.config.five)}",
            )
        if not is_writeable(self.config.broker_permission):
            return response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.config.broker_ip1}] sending message is forbidden",
            )
        retry_queue_nums = group_config.retry_queue_nums
        if retry_queue_nums <= 0:
            return response()
        new_topic = RETRY_GROUP_TOPIC_PREFIX + group
        queue_id = random.randrange(99_999_999) % retry_queue_nums
        config = self.topics.create_in_send_back_method(
            new_topic, retry_queue_nums, PERM_WRITE | PERM_READ, 2 if header.unit_mode else 0
        )
        if not is_writeable(config.perm):
            return response(
                ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden"
            )
        offset = header.offset
        msg_ext = self.store.look_message_by_offset(offset)
        if msg_ext is None:
            return response(ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {offset}")
        props = dict(msg_ext.properties)
        props.setdefault("RETRY_TOPIC", msg_ext.topic)
        props["WAIT"] = "false"
        delay_level = header.delay_level
        max_reconsume = group_config.retry_max_times
        if request.version >= V3_4_9 and header.max_reconsume_times is not None:
            max_reconsume = header.max_reconsume_times
        if msg_ext.reconsume_times >= max_reconsume or delay_level < 0:
            new_topic = DLQ_GROUP_TOPIC_PREFIX + group
            queue_id = random.randrange(99_999_999) % DLQ_NUMS_PER_GROUP
            self.topics.create_in_send_back_method(new_topic, DLQ_NUMS_PER_GROUP, PERM_WRITE | PERM_READ)
            props["DELAY"] = "0"
        else:
            if delay_level == 0:
                delay_level = 3 + msg_ext.reconsume_times
            props["DELAY"] = str(delay_level)
        if not props.get("ORIGIN_MESSAGE_ID"):
            props["ORIGIN_MESSAGE_ID"] = msg_ext.offset_msg_id
        msg = MessageExtBrokerInner.moved(
            msg_ext,
            new_topic,
            queue_id,
            props,
            properties_to_string(props),
            reconsume_times=java_int(msg_ext.reconsume_times + 1),  # an int in Java, wrapping
        )
        result = self.store.put_message(msg)
        if result.status is PutMessageStatus.PUT_OK:
            self.notify_message_arriving(msg.topic, msg.queue_id)
            return response()
        return response(ResponseCode.SYSTEM_ERROR, result.status.name)


def topic_config_str(config: TopicConfig, *, five: bool = False) -> str:
    """Java ``TopicConfig.toString`` (quoted in the queueId-illegal remark); 5.x adds the attributes."""
    attributes = ", attributes={}" if five else ""
    return (
        f"TopicConfig [topicName={config.topic_name}, readQueueNums={config.read_queue_nums}, "
        f"writeQueueNums={config.write_queue_nums}, perm={perm_to_string(config.perm)}, "
        f"topicFilterType={config.topic_filter_type}, topicSysFlag={config.topic_sys_flag}, "
        f"order={str(config.order).lower()}{attributes}]"
    )


def perm_to_string(perm: int) -> str:
    return ("R" if perm & 4 else "-") + ("W" if perm & 2 else "-") + ("X" if perm & 1 else "-")
