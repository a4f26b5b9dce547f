"""POP consumption (5.x): POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, revive.

Follows ``PopMessageProcessor``, ``AckMessageProcessor``, ``ChangeInvisibleTimeProcessor`` and
``PopReviveService`` of 5.5.0. A pop takes messages from the queue's pop offset on, records a checkpoint
(pop time, invisible time, the offsets), moves the consumer offset past them (5.5.0 commits it as soon
as the checkpoint is stored, ``addCkJustOffset``) and answers the fields the client builds each
message's ``extraInfo`` (its ack handle) from. An ack marks an offset done; a checkpoint whose invisible
time has passed with offsets not acked is revived: each such message is stored again in the group's pop
retry topic ``%RETRY%<group>_<topic>`` with ``reconsumeTimes + 1``, which later pops read (and answer
under the original topic). A pop that finds nothing waits up to its ``pollTime`` for a message (long
polling), then answers POLLING_TIMEOUT.

Unfinished checkpoints survive a restart (5.5.0 keeps them as timer messages in
``rmq_sys_REVIVE_LOG_<cluster>``, with the acks beside them): the twin keeps them in the twin-specific
``config/popCheckpoint.json``, written with the consumer offsets (every ``flushConsumerOffsetInterval``
and at shutdown), so after a restart the messages popped and not acked come back once their invisible
time has passed, acks and invisible-time changes of the old handles still count, and the rest stays
consumed, as on 5.5.0.

Orderly POP (``order=true``, what rocketmq-proxy does for a FIFO group) follows ``ConsumerOrderInfoManager``:
no checkpoint and no retry topic; a queue whose last orderly pop still has messages neither acked nor past
their invisible time is blocked (skipped) for any other attempt; the consumer offset moves only as the
messages are acked in order (``commitAndNext``); a message whose invisible time passes unacked is popped
again from the same offset with its consumed count (``orderCountInfo``) one higher. Their revive queue id
is 999 (``KeyBuilder.POP_ORDER_REVIVE_QUEUE``), which is how ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME
tell an orderly handle.

Not modelled: the KV pop consumer service; orderly pops' state across a restart (5.5.0's
``consumerOrderInfo.json``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import LoopingCall

from rmqtwin.codec.bodies import BatchAckMessageRequestBody
from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.errors import BodyError, HeaderFieldError
from rmqtwin.codec.headers import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rmqtwin.codec.java import java_int
from rmqtwin.codec.message import decode_message_records, encode_message_record
from rmqtwin.fakes.broker.filter import FilterError, build_subscription_data, message_filter_for
from rmqtwin.fakes.broker.groups import refuse_consuming, refuse_reading, topic_not_exist
from rmqtwin.fakes.broker.topics import PERM_READ, PERM_WRITE, RETRY_GROUP_TOPIC_PREFIX, is_readable
from rmqtwin.fakes.dispatch import (
    NOT_SET_REMARK,
    Channel,
    decode_header,
    require_key,
    response,
)
from rmqtwin.store_mirror.commitlog import PutMessageStatus
from rmqtwin.store_mirror.config import ConfigManager, JsonObject, json_int, json_list, json_object
from rmqtwin.store_mirror.message_store import GetMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner, properties_to_string

if TYPE_CHECKING:
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable
    from rmqtwin.fakes.broker.stats import BrokerStats
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageFilter, MessageStore

REVIVE_QUEUE_NUM = 8  # BrokerConfig.reviveQueueNum
POP_FROM_RETRY_PROBABILITY = 20  # BrokerConfig.popFromRetryProbability
MAX_POP_NUMS = 32
POP_ORDER_REVIVE_QUEUE = 999  # KeyBuilder.POP_ORDER_REVIVE_QUEUE
QUEUE_OFFSET = "qo"  # ExtraInfoUtil.QUEUE_OFFSET
INIT_MODE_MIN = 0  # ConsumeInitMode.MIN
REVIVE_SCAN_INTERVAL = 1.0
KEY_SEPARATOR = " "
_OFFSET_WRONG = (
    GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    GetMessageStatus.OFFSET_FOUND_NULL,
)
_PASSED_OVER = (
    GetMessageStatus.NO_MATCHED_MESSAGE,
    GetMessageStatus.OFFSET_FOUND_NULL,
    GetMessageStatus.MESSAGE_WAS_REMOVING,
)


POP_GROUP_NPE = (
    "java.lang.NullPointerException, "
    "java.base/java.util.concurrent.ConcurrentHashMap.computeIfAbsent(ConcurrentHashMap.java:1693)"
)
"""5.5.0's answer to a POP without ``consumerGroup`` (its first use is a ``computeIfAbsent`` key)."""


_PRIMITIVES = {"Integer": "int", "Long": "long"}


def unboxed_null(header: str, getter: str, boxed: str, frame: str) -> str:
    """5.5.0's answer to a POP-family request whose boxed header field is missing or not a number: its
    header decoding leaves the field null, and the processor's first unboxing of it fails there."""
    unboxing = f"java.lang.{boxed}.{_PRIMITIVES[boxed]}Value()"
    return (
        f'java.lang.NullPointerException: Cannot invoke "{unboxing}" because '
        f'the return value of "org.apache.rocketmq.remoting.protocol.header.{header}.{getter}()" is null, '
        f"org.apache.rocketmq.broker.processor.{frame}"
    )


def extra_info_parts(extra_info: str | None, getter: str, least: int, line: int) -> list[str]:
    """``ExtraInfoUtil.split`` and the length check of its first getter (5.5.0's remarks)."""
    if extra_info is None:
        raise HeaderFieldError(
            "split extraInfo is null",
            "extraInfo",
            "java.lang.IllegalArgumentException: split extraInfo is null, "
            "org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil.split(ExtraInfoUtil.java:40)",
        )
    parts = extra_info.split(KEY_SEPARATOR)
    if len(parts) < least:
        raise HeaderFieldError(
            f"{getter} fail",
            "extraInfo",
            f"java.lang.IllegalArgumentException: {getter} fail, extraInfoStrs length {len(parts)}, "
            f"org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil.{getter}(ExtraInfoUtil.java:{line})",
        )
    return parts


def java_defaults(header: Any, **defaults: Any) -> None:
    """5.5.0 decodes the POP family's headers without checking them: a field missing or not a number
    keeps its Java default (0 for the primitive ones named here, null for the boxed ones)."""
    for attr, value in defaults.items():
        if getattr(header, attr) is None:
            setattr(header, attr, value)


def stamp_born_time(request: RemotingCommand, now_ms: Callable[[], int]) -> None:
    """A POP or NOTIFICATION request without a ``bornTime`` (or with 0) is given the broker's now
    before its header is decoded."""
    fields = request.ext_fields if request.ext_fields is not None else {}
    if fields.get("bornTime") in (None, "0"):
        fields["bornTime"] = str(now_ms())
        request.ext_fields = fields


def pop_retry_topic(topic: str, group: str) -> str:
    """``KeyBuilder.buildPopRetryTopicV1`` (``enableRetryTopicV2`` is off by default)."""
    return f"{RETRY_GROUP_TOPIC_PREFIX}{group}_{topic}"


def real_topic(topic: str, group: str, retry: str | None) -> str:
    """``ExtraInfoUtil.getRealTopic``: "1" names the v1 pop retry topic, "2" the v2 one."""
    if retry == "1":
        return pop_retry_topic(topic, group)
    if retry == "2":
        return f"{RETRY_GROUP_TOPIC_PREFIX}{group}+{topic}"
    if retry == "0":
        return topic
    raise ValueError("getRetry fail, format is wrong")


def _retry_flag(topic: str) -> str:
    """``ExtraInfoUtil.getRetry``: 0 normal topic, 1 (v1) retry topic."""
    return "1" if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else "0"


@dataclass
class PopCheckPoint:
    """``PopCheckPoint``: one pop of one queue."""

    topic: str
    group: str
    queue_id: int
    start_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    offsets: list[int]
    acked: set[int] = field(default_factory=set)

    @property
    def revive_time(self) -> int:
        return self.pop_time + self.invisible_time

    @property
    def done(self) -> bool:
        return len(self.acked) >= len(self.offsets)


@dataclass
class OrderInfo:
    """``ConsumerOrderInfoManager.OrderInfo``: the last orderly pop of one queue by one group."""

    attempt_id: str | None
    pop_time: int
    invisible_time: int
    offsets: list[int]
    consumed_count: dict[int, int] = field(default_factory=dict)
    next_visible: dict[int, int] = field(default_factory=dict)
    acked: set[int] = field(default_factory=set)

    def merge_consumed_count(self, previous: OrderInfo) -> None:
        """``mergeOffsetConsumedCount``: an offset popped again counts one more consumption."""
        if previous.attempt_id is not None and previous.attempt_id == self.attempt_id:
            self.consumed_count = previous.consumed_count
            return
        self.consumed_count = {
            offset: previous.consumed_count.get(offset, 0) + 1
            for offset in self.offsets
            if offset in previous.offsets
        }

    def need_block(self, attempt_id: str | None, invisible_time: int, now: int) -> bool:
        if not self.offsets or (self.attempt_id is not None and self.attempt_id == attempt_id):
            return False
        if self.invisible_time <= 0:
            self.invisible_time = invisible_time
        return any(
            now < self.next_visible.get(offset, self.pop_time + self.invisible_time)
            for offset in self.offsets
            if offset not in self.acked
        )

    def next_offset(self) -> int:
        for offset in self.offsets:
            if offset not in self.acked:
                return offset
        return self.offsets[-1] + 1


Rerun = Callable[[Channel, "RemotingCommand"], "RemotingCommand | None"]


@dataclass
class PopRequest:
    """A parked POP or NOTIFICATION (``PopLongPollingService``): ``rerun`` on arrival or at its expiry."""

    request: RemotingCommand
    channel: Channel
    topic: str
    group: str
    queue_id: int
    expired_ms: int
    rerun: Rerun
    timer: IDelayedCall | None = None


class PopCheckPointJson(TypedDict):
    """``popCheckpoint.json``: each unfinished checkpoint's fields, ``acked`` as a sorted list."""

    checkpoints: list[dict[str, object]]


class PopCheckPointFile(ConfigManager):
    """``config/popCheckpoint.json``: the unfinished checkpoints (twin-specific, see the module)."""

    def __init__(self, store_dir: str, checkpoints: dict[tuple[str, str, int], list[PopCheckPoint]]) -> None:
        super().__init__(os.path.join(store_dir, "config", "popCheckpoint.json"))
        self.checkpoints = checkpoints

    def encode(self) -> PopCheckPointJson:
        return {
            "checkpoints": [
                {**asdict(ck), "acked": sorted(ck.acked)}
                for cks in self.checkpoints.values()
                for ck in cks
                if not ck.done
            ]
        }

    def decode(self, obj: JsonObject) -> None:
        self.checkpoints.clear()
        for item in json_list(obj.get("checkpoints")):
            fields = json_object(item, "checkpoint", member=False)
            ck = PopCheckPoint(
                topic=str(fields["topic"]),
                group=str(fields["group"]),
                queue_id=json_int(fields["queue_id"]),
                start_offset=json_int(fields["start_offset"]),
                pop_time=json_int(fields["pop_time"]),
                invisible_time=json_int(fields["invisible_time"]),
                revive_qid=json_int(fields["revive_qid"]),
                offsets=[json_int(o) for o in json_list(fields["offsets"])],
                acked={json_int(o) for o in json_list(fields.get("acked"))},
            )
            self.checkpoints.setdefault((ck.topic, ck.group, ck.queue_id), []).append(ck)


@dataclass(eq=False, kw_only=True)
class PopProcessor:
    config: BrokerConfig
    clock: IReactorTime
    now_ms: Callable[[], int]
    store_dir: str
    """Where ``config/popCheckpoint.json`` lives."""
    topics: TopicTable
    groups: SubscriptionGroupTable
    offsets: ConsumerOffsetTable
    store: MessageStore
    stats: BrokerStats
    store_host: tuple[str, int]
    message_arrived: Callable[[str, int], None]
    """The broker's ``notifyMessageArriving``: a revived message wakes parked pulls and pops."""
    # (topic, group, queueId) → next offset to pop / checkpoints not yet finished.
    pop_offsets: dict[tuple[str, str, int], int] = field(default_factory=dict, init=False)
    checkpoints: dict[tuple[str, str, int], list[PopCheckPoint]] = field(default_factory=dict, init=False)
    checkpoint_file: PopCheckPointFile = field(init=False)
    parked: list[PopRequest] = field(default_factory=list, init=False)
    retry_topics: dict[str, str] = field(default_factory=dict, init=False)  # pop retry topic → original topic
    order_infos: dict[tuple[str, str, int], OrderInfo] = field(default_factory=dict, init=False)
    _ck_number: int = field(default=0, init=False)
    _revive: LoopingCall | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.checkpoint_file = PopCheckPointFile(self.store_dir, self.checkpoints)

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        loop = LoopingCall(self.revive)
        loop.clock = self.clock
        loop.start(REVIVE_SCAN_INTERVAL, now=False)
        self._revive = loop

    def stop(self) -> None:
        if self._revive is not None and self._revive.running:
            self._revive.stop()
        self._revive = None
        for parked in self.parked:
            if parked.timer is not None and parked.timer.active():
                parked.timer.cancel()
        self.parked.clear()

    def channel_closed(self, channel: Channel) -> None:
        for parked in [p for p in self.parked if p.channel is channel]:
            if parked.timer is not None and parked.timer.active():
                parked.timer.cancel()
            self.parked.remove(parked)

    # -- POP_MESSAGE ------------------------------------------------------------------------------
    def pop_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        stamp_born_time(request, self.now_ms)
        header = decode_header(request, PopMessageRequestHeader, strict=False)
        java_defaults(
            header, queue_id=0, max_msg_nums=0, invisible_time=0, poll_time=0, born_time=0, init_mode=0
        )
        ip = self.config.broker_ip1
        if self.now_ms() - header.born_time - header.poll_time > 500:
            return response(ResponseCode.POLLING_TIMEOUT, f"the broker[{ip}] pop message is timeout too much")
        if not is_readable(self.config.broker_permission):
            return response(ResponseCode.NO_PERMISSION, f"the broker[{ip}] pop message is forbidden")
        if header.max_msg_nums > MAX_POP_NUMS:
            return response(
                ResponseCode.INVALID_PARAMETER, f"the broker[{ip}] pop message's num is greater than 32"
            )
        topic, group = require_key(header.topic, "topic"), header.consumer_group
        if group is None:
            return response(ResponseCode.SYSTEM_ERROR, POP_GROUP_NPE)
        refused = self.readable_by(channel, topic, header.queue_id, group)
        if refused is not None:
            return refused
        if header.max_msg_nums < 0:  # new ArrayList<>(maxMsgNums)
            return response(
                ResponseCode.SYSTEM_ERROR,
                f"java.lang.IllegalArgumentException: Illegal Capacity: {header.max_msg_nums}, "
                "java.base/java.util.ArrayList.<init>(ArrayList.java:160)",
            )
        try:
            subscription = build_subscription_data(topic, header.exp or "*", header.exp_type or "TAG")
            message_filter = message_filter_for(subscription, self.config.five, from_request=True)
        except (FilterError, Exception):
            return response(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
            )
        order = bool(header.order)
        if order:
            revive_qid = POP_ORDER_REVIVE_QUEUE
        else:
            revive_qid = self._ck_number % REVIVE_QUEUE_NUM
            self._ck_number += 1
        random_q = random.randrange(100)
        need_retry = random_q < POP_FROM_RETRY_PROBABILITY and not order
        pop_time = self.now_ms()
        found = _PopResult()
        pop = _Pop(header, revive_qid, pop_time, message_filter, found)
        queues = self.queues_in_pop_order(
            topic,
            group,
            header.queue_id,
            random_q,
            need_retry=need_retry,
            enough=lambda: order or len(found.buffers) >= header.max_msg_nums,
        )
        for queue_topic, queue_id in queues:
            self._pop_from_queue(pop, queue_topic, queue_id, is_retry=queue_topic != topic)

        answer = PopMessageResponseHeader(
            pop_time=pop_time,
            invisible_time=header.invisible_time,
            revive_qid=revive_qid,
            rest_num=found.rest_num,
            start_offset_info=";".join(found.start_offset_info),
            msg_offset_info=";".join(found.msg_offset_info),
            order_count_info=";".join(found.order_count_info) if order else None,
        )
        if found.buffers:
            self.stats.on_get(topic, len(found.buffers), group)
            return response(ResponseCode.SUCCESS, "FOUND", answer, b"".join(found.buffers))
        if header.poll_time > 0:
            expired_ms = header.born_time + header.poll_time
            if self.now_ms() < expired_ms:
                self.park(
                    PopRequest(request, channel, topic, group, header.queue_id, expired_ms, self.pop_message)
                )
                return None
        return response(ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE", answer)

    def readable_by(self, channel: Channel, topic: str, queue_id: int, group: str) -> RemotingCommand | None:
        """The topic, queue and group checks POP, PEEK, NOTIFICATION and POLLING_INFO share (5.5.0
        words them alike): None when ``group`` may read ``queue_id`` of ``topic``, else the refusal."""
        topic_config = self.topics.get(require_key(topic, "topic"))
        refused = refuse_reading(topic, topic_config, self.config.five, "peeking")
        if refused is not None:
            return refused
        assert topic_config is not None
        if queue_id >= topic_config.read_queue_nums:
            return response(
                ResponseCode.INVALID_PARAMETER,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{topic_config.read_queue_nums}] consumer:[{channel.remote_addr}]",
            )
        group_config = self.groups.find(require_key(group, "consumerGroup"))
        return refuse_consuming(group, group_config, self.config.five)

    def queues_in_pop_order(
        self,
        topic: str,
        group: str,
        queue_id: int,
        random_q: int,
        *,
        need_retry: bool,
        enough: Callable[[], bool],
    ) -> Iterator[tuple[str, int]]:
        """The queues POP (and PEEK, NOTIFICATION) read, in 5.5.0's order: the group's pop retry topic
        first when ``need_retry``, else last unless ``enough`` by then; the topic's queues from
        ``random_q`` on (or the one asked for)."""
        retry_topic = pop_retry_topic(topic, group)

        def every_queue(name: str) -> Iterator[tuple[str, int]]:
            config = self.topics.get(name)
            queues = config.read_queue_nums if config is not None else 0
            return ((name, (random_q + i) % queues) for i in range(queues))

        if need_retry:
            yield from every_queue(retry_topic)
        if queue_id < 0:
            yield from every_queue(topic)
        else:
            yield topic, queue_id
        if not need_retry and not enough():
            yield from every_queue(retry_topic)

    def _pop_offset(self, topic: str, group: str, queue_id: int, init_mode: int) -> int:
        key = (topic, group, queue_id)
        buffered = self.pop_offsets.get(key)
        offset = self.offsets.query_offset(group, topic, queue_id)
        if offset < 0:
            store = self.store
            if init_mode == INIT_MODE_MIN or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                offset = store.get_min_offset_in_queue(topic, queue_id)
            elif (
                store.get_min_offset_in_queue(topic, queue_id)
                <= 0
                < store.get_max_offset_in_queue(topic, queue_id)
            ):
                # ``initPopOffsetByCheckMsgInMem`` (on by default): a queue still holding its first
                # message (always "in memory" for the twin) is popped from 0.
                offset = 0
            else:
                offset = max(0, store.get_max_offset_in_queue(topic, queue_id) - 1)
            self.offsets.commit_offset(group, topic, queue_id, offset)
        return offset if buffered is None else max(buffered, offset)

    def _pop_from_queue(self, pop: _Pop, topic: str, queue_id: int, *, is_retry: bool) -> None:
        header, found, message_filter = pop.header, pop.found, pop.message_filter
        if header.order:
            self._pop_orderly(pop, topic, queue_id)
            return
        group = header.consumer_group
        offset = self._pop_offset(topic, group, queue_id, header.init_mode)
        wanted = header.max_msg_nums - len(found.buffers)
        if wanted <= 0:
            found.rest_num += self.store.get_max_offset_in_queue(topic, queue_id) - offset
            return
        result = self.store.get_message(group, topic, queue_id, offset, wanted, message_filter)
        if result.status in _OFFSET_WRONG:
            self.offsets.commit_offset(group, topic, queue_id, result.next_begin_offset)
            offset = result.next_begin_offset
            result = self.store.get_message(group, topic, queue_id, offset, wanted, message_filter)
        key = (topic, group, queue_id)
        if result.message_buffers:
            checkpoint = PopCheckPoint(
                topic,
                group,
                queue_id,
                offset,
                pop.pop_time,
                header.invisible_time,
                pop.revive_qid,
                list(result.message_queue_offsets),
            )
            self.checkpoints.setdefault(key, []).append(checkpoint)
            self._handed_out(key, result.next_begin_offset)
            flag = _retry_flag(topic)
            found.start_offset_info.append(f"{flag} {queue_id} {offset}")
            found.msg_offset_info.append(
                f"{flag} {queue_id} " + ",".join(str(o) for o in result.message_queue_offsets)
            )
            for buffer in result.message_buffers:
                found.buffers.append(
                    self._as_original_topic(bytes(buffer), header, checkpoint) if is_retry else bytes(buffer)
                )
        elif result.status in _PASSED_OVER and (result.next_begin_offset > -1):
            # ``addCkMock``: the filtered-out range is passed over as if popped and acked.
            self._handed_out(key, result.next_begin_offset)
        found.rest_num += result.max_offset - result.next_begin_offset

    def _pop_orderly(self, pop: _Pop, topic: str, queue_id: int) -> None:
        """``popMsgFromQueue`` with ``order``: from the consumer offset, unless the queue is blocked."""
        header, found = pop.header, pop.found
        group = header.consumer_group
        key = (topic, group, queue_id)
        offset = self.offsets.query_offset(group, topic, queue_id)
        if offset < 0:
            offset = self._pop_offset(topic, group, queue_id, header.init_mode)
        previous = self.order_infos.get(key)
        if previous is not None and previous.need_block(
            header.attempt_id, header.invisible_time, pop.pop_time
        ):
            return
        wanted = header.max_msg_nums - len(found.buffers)
        if wanted <= 0:
            return
        result = self.store.get_message(group, topic, queue_id, offset, wanted, pop.message_filter)
        if result.status in _OFFSET_WRONG:
            self.offsets.commit_offset(group, topic, queue_id, result.next_begin_offset)
            offset = result.next_begin_offset
            result = self.store.get_message(group, topic, queue_id, offset, wanted, pop.message_filter)
        if result.message_buffers:
            info = OrderInfo(
                header.attempt_id, pop.pop_time, header.invisible_time, list(result.message_queue_offsets)
            )
            if previous is not None:
                info.merge_consumed_count(previous)
            self.order_infos[key] = info
            flag = _retry_flag(topic)
            for queue_offset, count in info.consumed_count.items():
                found.order_count_info.append(f"{flag} {QUEUE_OFFSET}{queue_id}%{queue_offset} {count}")
            least = min(info.consumed_count.values(), default=0)
            if len(info.consumed_count) != len(info.offsets):
                least = 0
            found.order_count_info.append(f"{flag} {queue_id} {least}")
            self.offsets.commit_offset(group, topic, queue_id, offset)
            found.start_offset_info.append(f"{flag} {queue_id} {offset}")
            found.msg_offset_info.append(
                f"{flag} {queue_id} " + ",".join(str(o) for o in result.message_queue_offsets)
            )
            found.buffers.extend(bytes(buffer) for buffer in result.message_buffers)
        elif result.status in _PASSED_OVER and result.next_begin_offset > -1:
            self.offsets.commit_offset(group, topic, queue_id, result.next_begin_offset)
        found.rest_num += result.max_offset - result.next_begin_offset

    def _as_original_topic(
        self, record: bytes, header: PopMessageRequestHeader, checkpoint: PopCheckPoint
    ) -> bytes:
        """A retry-topic message answered under the topic popped, with its ``POP_CK`` (5.5.0 re-encodes
        it unless ``popResponseReturnActualRetryTopic``)."""
        out = []
        for msg in decode_message_records(record):
            msg.properties.setdefault(
                "POP_CK",
                KEY_SEPARATOR.join(
                    str(part)
                    for part in (
                        checkpoint.start_offset,
                        checkpoint.pop_time,
                        checkpoint.invisible_time,
                        checkpoint.revive_qid,
                        _retry_flag(msg.topic),
                        self.config.broker_name,
                        msg.queue_id,
                        msg.queue_offset,
                    )
                ),
            )
            msg.topic = header.topic
            msg.properties_string = None
            out.append(encode_message_record(msg, compute_crc=False))
        return b"".join(out)

    # -- long polling ------------------------------------------------------------------------------
    def park(self, parked: PopRequest) -> None:
        self.parked.append(parked)
        delay = max(0.0, parked.expired_ms / 1000.0 - self.clock.seconds())
        parked.timer = self.clock.callLater(delay, self._wake, parked)

    def _wake(self, parked: PopRequest) -> None:
        if parked not in self.parked:
            return
        self.parked.remove(parked)
        if parked.timer is not None and parked.timer.active():
            parked.timer.cancel()
        parked.timer = None
        if not parked.channel.is_active:
            return
        answer = parked.rerun(parked.channel, parked.request)
        if answer is not None:
            parked.channel.send_response(parked.request, answer)

    def polling_num(self, topic: str, group: str, queue_id: int) -> int:
        """POPs of ``group`` waiting on ``topic`` with this ``queueId`` (-1: any queue), as 5.5.0's
        polling map counts them by ``topic@group@queueId``."""
        return sum(
            1
            for p in self.parked
            if p.rerun == self.pop_message and (p.topic, p.group, p.queue_id) == (topic, group, queue_id)
        )

    def notify_message_arriving(self, topic: str) -> None:
        original = self.retry_topics.get(topic, topic)
        for parked in [p for p in self.parked if p.topic == original]:
            self._wake(parked)

    # -- ACK_MESSAGE ---------------------------------------------------------------------------------
    def _queue_checks(
        self,
        channel: Channel,
        header: AckMessageRequestHeader | ChangeInvisibleTimeRequestHeader,
        *,
        ack: bool,
    ) -> list[str] | RemotingCommand:
        """The topic, queue and offset checks of ACK_MESSAGE and CHANGE_MESSAGE_INVISIBLETIME, each
        field met (a null one failing) where 5.5.0's processor first uses it, then the extraInfo's
        parts (the length check of the first getter each reads); the answer when a check fails."""
        topic = require_key(header.topic, "topic")
        config = self.topics.get(topic)
        if config is None:
            return topic_not_exist(topic, self.config.five)
        cls, frame = (
            ("AckMessageRequestHeader", "AckMessageProcessor.processRequest(AckMessageProcessor.java:{})")
            if ack
            else (
                "ChangeInvisibleTimeRequestHeader",
                "ChangeInvisibleTimeProcessor.processRequestAsync(ChangeInvisibleTimeProcessor.java:{})",
            )
        )
        queue_id, offset = header.queue_id, header.offset
        if queue_id is None:
            npe = unboxed_null(cls, "getQueueId", "Integer", frame.format(141 if ack else 120))
            return response(ResponseCode.SYSTEM_ERROR, npe)
        if queue_id >= config.read_queue_nums or queue_id < 0:
            return response(
                ResponseCode.MESSAGE_ILLEGAL,
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{config.read_queue_nums}] consumer:[{channel.remote_addr}]",
            )
        if offset is None:
            npe = unboxed_null(cls, "getOffset", "Long", frame.format(162 if ack else 141))
            return response(ResponseCode.SYSTEM_ERROR, npe)
        low = self.store.get_min_offset_in_queue(topic, queue_id)
        high = self.store.get_max_offset_in_queue(topic, queue_id)
        if ack and (offset < low or offset > high):
            return response(
                ResponseCode.NO_MESSAGE,
                f"offset is illegal, key:{topic}@{queue_id}, commit:{offset}, store:{low}~{high}",
            )
        if not ack and (offset < low or offset >= high):
            # createResponseCommand(Class) leaves its default remark.
            return response(ResponseCode.NO_MESSAGE, NOT_SET_REMARK)
        getter = ("getBrokerName", 6, 107) if ack else ("getReviveQid", 4, 68)
        parts = extra_info_parts(header.extra_info, *getter)
        header.consumer_group = header.consumer_group or ""  # only named in the ack 5.5.0 stores
        return parts

    def ack_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, AckMessageRequestHeader, strict=False)
        parts = self._queue_checks(channel, header, ack=True)
        if isinstance(parts, RemotingCommand):
            return parts
        if parts[3] == str(POP_ORDER_REVIVE_QUEUE):
            try:
                pop_time = int(parts[1])
            except ValueError:
                return response()
            key = (header.topic, header.consumer_group, header.queue_id)
            return self._ack_orderly(channel, key, header.offset, pop_time)
        self._ack(header.consumer_group, header.topic, header.queue_id, header.offset, header.extra_info)
        return response()

    def batch_ack_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """BATCH_ACK_MESSAGE (``AckMessageProcessor``): each queue's acked offsets as a bit set from its
        checkpoint's start offset; offsets outside the queue are passed over, no topic check."""
        try:
            body = BatchAckMessageRequestBody.decode(request.body) if request.body else None
        except BodyError as exc:  # 5.5.0's fastjson2 parse fails: the exception's text
            return response(ResponseCode.SYSTEM_ERROR, f"com.alibaba.fastjson2.JSONException: {exc}")
        if body is None or not body.acks:
            return response(ResponseCode.NO_MESSAGE)
        answer = response()
        store = self.store
        for ack in body.acks:
            group, queue_id = ack.consumer_group or "", ack.queue_id
            try:
                topic = real_topic(ack.topic or "", group, ack.retry)
            except ValueError as exc:
                return response(ResponseCode.SYSTEM_ERROR, f"java.lang.IllegalArgumentException: {exc}")
            low = store.get_min_offset_in_queue(topic, queue_id)
            high = store.get_max_offset_in_queue(topic, queue_id)
            for offset in ack.offsets():
                if offset < low or offset > high:
                    continue
                if ack.revive_queue_id == POP_ORDER_REVIVE_QUEUE:
                    refused = self._ack_orderly(channel, (topic, group, queue_id), offset, ack.pop_time)
                    if refused.code != ResponseCode.SUCCESS:
                        answer = refused
                else:
                    self._ack_offset((topic, group, queue_id), offset, ack.start_offset, ack.pop_time)
        return answer

    def _ack_orderly(
        self, channel: Channel, key: tuple[str, str, int], offset: int, pop_time: int
    ) -> RemotingCommand:
        """``ackOrderly``: mark the offset done; the consumer offset moves to the first one not done."""
        topic, group, queue_id = key
        old = self.offsets.query_offset(group, topic, queue_id)
        if offset < old:
            return response()
        info = self.order_infos.get(key)
        if info is None:
            next_offset = offset + 1
        elif not info.offsets:
            next_offset = -1
        elif pop_time != info.pop_time:
            next_offset = -2
        elif offset not in info.offsets:
            next_offset = -1
        else:
            info.acked.add(offset)
            next_offset = info.next_offset()
        if next_offset > -1:
            self.offsets.commit_offset(group, topic, queue_id, next_offset)
            if info is None or not info.need_block(None, info.invisible_time, self.now_ms()):
                self.notify_message_arriving(topic)
        elif next_offset == -1:
            return response(
                ResponseCode.MESSAGE_ILLEGAL,
                f"offset is illegal, key:{topic}@{group}@{queue_id}, old:{old}, commit:{offset}, "
                f"next:{next_offset}, {channel.remote_addr}",
            )
        return response()

    def _ack(
        self, group: str, topic: str, queue_id: int, offset: int, extra_info: str
    ) -> PopCheckPoint | None:
        parts = extra_info.split(KEY_SEPARATOR)
        try:
            start_offset, pop_time = int(parts[0]), int(parts[1])
        except (IndexError, ValueError):
            return None
        return self._ack_offset((topic, group, queue_id), offset, start_offset, pop_time)

    def _ack_offset(
        self, key: tuple[str, str, int], offset: int, start_offset: int, pop_time: int
    ) -> PopCheckPoint | None:
        """Mark ``offset`` done in the checkpoint of the pop at ``pop_time`` from ``start_offset``."""
        for checkpoint in self.checkpoints.get(key, []):
            if (checkpoint.start_offset, checkpoint.pop_time) == (start_offset, pop_time):
                if offset in checkpoint.offsets:
                    checkpoint.acked.add(offset)
                self._drop_finished(key)
                return checkpoint
        return None

    def _handed_out(self, key: tuple[str, str, int], next_offset: int) -> None:
        """The pop offset and the consumer offset move past what a pop took (or passed over)."""
        self.pop_offsets[key] = next_offset
        topic, group, queue_id = key
        self.offsets.commit_offset(group, topic, queue_id, next_offset)

    def _drop_finished(self, key: tuple[str, str, int]) -> None:
        self.checkpoints[key] = [ck for ck in self.checkpoints.get(key, []) if not ck.done]

    # -- CHANGE_MESSAGE_INVISIBLETIME ----------------------------------------------------------------
    def change_invisible_time(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, ChangeInvisibleTimeRequestHeader, strict=False)
        parts = self._queue_checks(channel, header, ack=False)
        if isinstance(parts, RemotingCommand):
            return parts
        try:
            revive_qid = int(parts[3])
            pop_time = int(parts[1])
        except (IndexError, ValueError):
            return response(ResponseCode.SYSTEM_ERROR)
        if revive_qid == POP_ORDER_REVIVE_QUEUE:
            return self._change_invisible_time_orderly(header, pop_time)
        if header.invisible_time is None:
            npe = unboxed_null(
                "ChangeInvisibleTimeRequestHeader",
                "getInvisibleTime",
                "Long",
                "ChangeInvisibleTimeProcessor.appendCheckPointThenAckOrigin(ChangeInvisibleTimeProcessor.java:321)",
            )
            return response(ResponseCode.SYSTEM_ERROR, npe)
        now = self.now_ms()
        # ``appendCheckPointThenAckOrigin``: a one-message checkpoint from now, then the old one acked.
        key = (header.topic, header.consumer_group, header.queue_id)
        self.checkpoints.setdefault(key, []).append(
            PopCheckPoint(
                header.topic,
                header.consumer_group,
                header.queue_id,
                header.offset,
                now,
                header.invisible_time,
                revive_qid,
                [header.offset],
            )
        )
        self._ack(header.consumer_group, header.topic, header.queue_id, header.offset, header.extra_info)
        return response(
            ResponseCode.SUCCESS,
            NOT_SET_REMARK,  # 5.5.0's createResponseCommand(Class), never given a remark
            ChangeInvisibleTimeResponseHeader(
                pop_time=now, invisible_time=header.invisible_time, revive_qid=revive_qid
            ),
        )

    def _change_invisible_time_orderly(
        self, header: ChangeInvisibleTimeRequestHeader, pop_time: int
    ) -> RemotingCommand:
        """``processChangeInvisibleTimeForOrder``: the message's next visible time, no new checkpoint."""
        group, topic, queue_id = header.consumer_group, header.topic, header.queue_id
        if header.offset < self.offsets.query_offset(group, topic, queue_id):
            return response()
        next_visible = self.now_ms() + header.invisible_time
        info = self.order_infos.get((topic, group, queue_id))
        if info is not None and info.pop_time == pop_time:
            info.next_visible[header.offset] = next_visible
        return response(
            ext_fields=ChangeInvisibleTimeResponseHeader(
                pop_time=pop_time, invisible_time=next_visible - pop_time, revive_qid=POP_ORDER_REVIVE_QUEUE
            )
        )

    # -- revive -----------------------------------------------------------------------------------
    def revive(self) -> None:
        """``PopReviveService``: every checkpoint past its revive time puts its unacked messages into
        the pop retry topic (reconsumeTimes + 1) and is finished."""
        now = self.now_ms()
        for key, cks in list(self.checkpoints.items()):
            due = [ck for ck in cks if not ck.done and ck.revive_time <= now]
            for checkpoint in due:
                for offset in checkpoint.offsets:
                    if offset not in checkpoint.acked:
                        self._revive_one(checkpoint, offset)
                        checkpoint.acked.add(offset)
            if due:
                self._drop_finished(key)

    def _revive_one(self, checkpoint: PopCheckPoint, offset: int) -> None:
        result = self.store.get_message(
            checkpoint.group, checkpoint.topic, checkpoint.queue_id, offset, 1, None
        )
        if not result.message_buffers:
            return
        [msg] = decode_message_records(bytes(result.message_buffers[0]))
        if checkpoint.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            retry_topic = checkpoint.topic
        else:
            retry_topic = pop_retry_topic(checkpoint.topic, checkpoint.group)
            self.retry_topics[retry_topic] = checkpoint.topic
        self.topics.create_in_send_back_method(retry_topic, 1, PERM_READ | PERM_WRITE)
        props = dict(msg.properties)
        if msg.reconsume_times == 0 or "1ST_POP_TIME" not in props:
            props["1ST_POP_TIME"] = str(checkpoint.pop_time)
        inner = MessageExtBrokerInner.moved(
            msg,
            retry_topic,
            0,
            props,
            properties_to_string(props),
            store_host=self.store_host,
            reconsume_times=java_int(msg.reconsume_times + 1),  # PopReviveService: an int, wrapping
        )
        put = self.store.put_message(inner)
        if put.status is PutMessageStatus.PUT_OK:
            self.message_arrived(retry_topic, 0)


@dataclass
class _Pop:
    """One POP_MESSAGE being answered."""

    header: PopMessageRequestHeader
    revive_qid: int
    pop_time: int
    message_filter: MessageFilter
    found: _PopResult


@dataclass
class _PopResult:
    buffers: list[bytes] = field(default_factory=list)
    start_offset_info: list[str] = field(default_factory=list)
    msg_offset_info: list[str] = field(default_factory=list)
    order_count_info: list[str] = field(default_factory=list)
    rest_num: int = 0
