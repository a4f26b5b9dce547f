"""The admin reads of offsets and consume progress, and the store maintenance requests, of 4.9.8's and
5.5.0's ``AdminBrokerProcessor``: GET_ALL_CONSUMER_OFFSET, GET_ALL_DELAY_OFFSET, QUERY_CONSUME_TIME_SPAN,
QUERY_CORRECTION_OFFSET, GET_BROKER_CONSUME_STATS (``mqadmin brokerConsumeStats``), VIEW_BROKER_STATS_DATA
(``mqadmin statsAll``), QUERY_CONSUME_QUEUE (``mqadmin queryCq``), CLEAN_UNUSED_TOPIC,
CLEAN_EXPIRED_CONSUMEQUEUE, DELETE_EXPIRED_COMMITLOG.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rmqtwin.codec.bodies import (
    ConsumeQueueData,
    ConsumerOffsetSerializeWrapper,
    ConsumeStats,
    ConsumeStatsList,
    DataVersion,
    DelayOffsetSerializeWrapper,
    MessageQueue,
    OffsetWrapper,
    QueryConsumeQueueResponseBody,
    QueryConsumeTimeSpanBody,
    QueryCorrectionOffsetBody,
    QueueTimeSpan,
)
from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.headers import (
    GetConsumeStatsInBrokerHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumeTimeSpanRequestHeader,
    QueryCorrectionOffsetHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rmqtwin.fakes.broker.topics import SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC
from rmqtwin.fakes.dispatch import Channel, decode_header, require_key, response
from rmqtwin.store_mirror.config import TOPIC_GROUP_SEPARATOR
from rmqtwin.store_mirror.consume_queue import CQ_STORE_UNIT_SIZE

if TYPE_CHECKING:
    from rmqtwin.codec.bodies import DataVersion
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.clients import ConsumerManager
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable
    from rmqtwin.fakes.broker.schedule import ScheduleMessageService
    from rmqtwin.fakes.broker.stats import BrokerStats
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore

LONG_MAX = 2**63 - 1


@dataclass(eq=False, kw_only=True)
class ConsumeAdminProcessor:
    config: BrokerConfig
    config_data_version: DataVersion
    now_ms: Callable[[], int]
    topics: TopicTable
    groups: SubscriptionGroupTable
    offsets: ConsumerOffsetTable
    consumers: ConsumerManager
    schedule: ScheduleMessageService
    stats: BrokerStats
    store: MessageStore

    def _mq(self, topic: str, queue_id: int) -> MessageQueue:
        return MessageQueue(topic=topic, broker_name=self.config.broker_name, queue_id=queue_id)

    def _data_version(self) -> DataVersion | None:
        """5.x offset managers carry a DataVersion; 4.9's have none."""
        if not self.config.five:
            return None
        version = self.config_data_version
        return DataVersion(counter=version.counter, timestamp=version.timestamp)

    # -- whole tables -------------------------------------------------------------------------------
    def get_all_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """The ``consumerOffset.json`` content (a slave copies it from its master)."""
        wrapper = ConsumerOffsetSerializeWrapper(
            offset_table=self.offsets.offset_table, data_version=self._data_version()
        )
        return response(body=wrapper.encode(fastjson2=self.config.five))

    def get_all_delay_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """The ``delayOffset.json`` content."""
        wrapper = DelayOffsetSerializeWrapper(
            offset_table=self.schedule.offset_table, data_version=self._data_version()
        )
        return response(body=wrapper.encode(fastjson2=self.config.five))

    # -- progress ---------------------------------------------------------------------------------
    def query_consume_time_span(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, QueryConsumeTimeSpanRequestHeader, strict=False)
        store = self.store
        topic = require_key(header.topic, "topic")
        config = self.topics.get(topic)
        if config is None:
            return response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        spans = []
        group = require_key(header.group, "group")
        for queue_id in range(config.write_queue_nums):
            min_time = store.get_earliest_message_time(topic, queue_id)
            high = store.get_max_offset_in_queue(topic, queue_id)
            consumer_offset = self.offsets.query_offset(group, topic, queue_id)
            if consumer_offset > 0:
                consume_time = store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1)
            else:
                consume_time = min_time
            delay = 0
            if consumer_offset < high:
                delay = self.now_ms() - store.get_message_store_timestamp(topic, queue_id, consumer_offset)
            spans.append(
                QueueTimeSpan(
                    message_queue=self._mq(topic, queue_id),
                    min_time_stamp=min_time,
                    max_time_stamp=store.get_message_store_timestamp(topic, queue_id, high - 1),
                    consume_time_stamp=consume_time,
                    delay_time=delay,
                )
            )
        return response(
            body=QueryConsumeTimeSpanBody(consume_time_span_set=spans).encode(fastjson2=self.config.five)
        )

    def query_correction_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``queryMinOffsetInAllGroup`` (the groups in ``filterGroups`` left out), then any queue the compare
        group has not reached yet is answered Long.MAX_VALUE. Java removes the filtered groups' offsets
        from its live table while it looks (a bug); the twin only leaves them out."""
        header = decode_header(request, QueryCorrectionOffsetHeader, strict=False)
        offsets = self.offsets
        topic = header.topic
        filters = header.filter_groups or ""
        skipped = set(filters.split(",")) if filters.strip() else set()
        lowest: dict[int, int] = {}
        for key, queues in offsets.offset_table.items():
            key_topic, _, key_group = key.partition(TOPIC_GROUP_SEPARATOR)
            if key_group in skipped or key_topic != require_key(topic, "topic"):
                continue
            for queue_id, offset in queues.items():
                if offset >= self.store.get_min_offset_in_queue(key_topic, queue_id):
                    lowest[queue_id] = min(offset, lowest.get(queue_id, LONG_MAX))
        compare = offsets.query_offsets(header.compare_group or "", topic or "")
        for queue_id, offset in compare.items():
            if queue_id in lowest:
                lowest[queue_id] = LONG_MAX if lowest[queue_id] > offset else lowest[queue_id]
        return response(
            body=QueryCorrectionOffsetBody(correction_offsets=dict(sorted(lowest.items()))).encode(
                fastjson2=self.config.five
            )
        )

    def get_broker_consume_stats(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``fetchAllConsumeStatsInBroker``: per subscription group, the ConsumeStats of each topic it
        committed offsets for (orderly topics only with ``isOrder``)."""
        header = decode_header(request, GetConsumeStatsInBrokerHeader, strict=False)
        store = self.store
        five = self.config.five
        stats_list: list[dict[str, list[ConsumeStats]]] = []
        total_diff = 0
        for group in list(self.groups.table):
            per_topic: list[ConsumeStats] = []
            for topic in sorted(self.offsets.which_topic_by_consumer(group)):
                config = self.topics.get(topic)
                if config is None or (header.is_order and not config.order):
                    continue
                online = self.consumers.groups.get(group)
                if online is not None and online.subscriptions and topic not in online.subscriptions:
                    continue
                table: dict[MessageQueue, OffsetWrapper] = {}
                for queue_id in range(config.write_queue_nums):
                    broker_offset = max(0, store.get_max_offset_in_queue(topic, queue_id))
                    consumer_offset = max(0, self.offsets.query_offset(group, topic, queue_id))
                    last = 0
                    if consumer_offset - 1 >= 0:
                        last = max(0, store.get_message_store_timestamp(topic, queue_id, consumer_offset - 1))
                    table[self._mq(topic, queue_id)] = OffsetWrapper(
                        broker_offset=broker_offset,
                        consumer_offset=consumer_offset,
                        last_timestamp=last,
                        pull_offset=0 if five else None,
                    )
                    total_diff += broker_offset - consumer_offset
                per_topic.append(ConsumeStats(offset_table=table))
            stats_list.append({group: per_topic})
        body = ConsumeStatsList(
            consume_stats_list=stats_list,
            broker_addr=f"{self.config.broker_ip1}:{self.config.listen_port}",
            total_diff=total_diff,
            total_inflight_diff=0 if five else None,
        )
        return response(body=body.encode(fastjson2=five))

    def view_broker_stats_data(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``mqadmin statsAll``: TOPIC_PUT_NUMS of a topic, GROUP_GET_NUMS of ``topic@group``."""
        header = decode_header(request, ViewBrokerStatsDataRequestHeader, strict=False)
        data = self.stats.stats_data(str(header.stats_name), str(header.stats_key))
        if data is None:
            return response(
                ResponseCode.SYSTEM_ERROR,
                f"The stats <{_java_str(header.stats_name)}> <{_java_str(header.stats_key)}> not exist",
            )
        return response(body=data.encode(fastjson2=self.config.five))

    def query_consume_queue(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``mqadmin queryCq``: ``count`` consume-queue entries from ``index`` (within the file holding it),
        with the group's subscription when one is named."""
        header = decode_header(request, QueryConsumeQueueRequestHeader, strict=False)
        topic = require_key(header.topic, "topic")
        queue = self.store.get_consume_queue(topic, header.queue_id)
        if queue is None:
            return response(ResponseCode.SYSTEM_ERROR, f"{header.queue_id}@{topic} is not exist!")
        body = QueryConsumeQueueResponseBody(
            max_queue_index=queue.get_max_offset_in_queue(),
            min_queue_index=queue.get_min_offset_in_queue(),
        )
        if header.consumer_group is not None:
            subscription = self.consumers.find_subscription(header.consumer_group, topic)
            if subscription is None:
                body.filter_data = f"{header.consumer_group}@{topic} is not online!"
            else:
                body.subscription_data = subscription
                body.filter_data = "null"  # no ConsumerFilterData for tag subscriptions
        if queue.get_index_buffer(header.index) is None:
            return response(remark=f"Index {header.index} of {header.queue_id}@{topic} is not exist!")
        per_file = queue.mapped_file_size // CQ_STORE_UNIT_SIZE
        last = min(header.index + max(0, header.count), (header.index // per_file + 1) * per_file)
        entries = []
        for index in range(header.index, last):
            entry = queue.get_entry(index)
            if entry is None:
                break
            offset, size, tags_code = entry
            entries.append(ConsumeQueueData(physic_offset=offset, physic_size=size, tags_code=tags_code))
        body.queue_data = entries
        return response(body=body.encode(fastjson2=self.config.five))

    # -- maintenance ------------------------------------------------------------------------------
    def clean_unused_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``cleanUnusedTopic``: the consume queues of topics no longer in the topic table go."""
        keep = set(self.topics.table) | {SCHEDULE_TOPIC, TRANS_OP_HALF_TOPIC}
        unused = [t for t in self.store.get_topics() if t not in keep]
        if unused:
            self.store.delete_topics(unused)
        return response()

    def clean_expired_consume_queue(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``cleanExpiredConsumerQueue``: consume queues wholly below the commitlog's first offset go."""
        self.store.clean_expired_consume_queues()
        return response()

    def delete_expired_commitlog(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``executeDeleteFilesManually``: commitlog files past ``fileReservedTime`` go now."""
        self.store.delete_expired_files()
        return response()


def _java_str(value: str | None) -> str:
    """``String.format("%s", null)``."""
    return "null" if value is None else value
