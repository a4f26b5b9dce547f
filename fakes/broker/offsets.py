"""Consumer offsets (``ConsumerOffsetManager``) and the offset requests of ``ConsumerManageProcessor``
and ``AdminBrokerProcessor``: QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.headers import (
    EmptyHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rmqtwin.fakes.dispatch import Channel, decode_header, response
from rmqtwin.store_mirror.config import TOPIC_GROUP_SEPARATOR, ConsumerOffsetManager

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore


class ConsumerOffsetTable(ConsumerOffsetManager):
    """``topic@group`` → queueId → next offset to consume, persisted as ``config/consumerOffset.json``.

    ``dirty`` says whether anything changed since the last persist (the periodic flush skips clean
    tables).
    """

    def __init__(self, store_dir: str) -> None:
        super().__init__(store_dir)
        self.dirty = False
        self.reset_offsets: dict[str, dict[int, int]] = {}
        """5.x server-side resets not yet seen by a pull: ``topic@group`` → queueId → offset."""
        self.pull_offsets: dict[str, dict[int, int]] = {}
        """5.x ``pullOffsetTable`` (memory only): ``topic@group`` → queueId → the last pull's next offset."""

    def commit_pull_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.pull_offsets.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset

    def query_pull_offset(self, group: str, topic: str, queue_id: int) -> int:
        """5.x ``queryPullOffset``: how far the group has pulled, else its committed offset (-1 for none)."""
        pulled = self.pull_offsets.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id)
        return pulled if pulled is not None else self.query_offset(group, topic, queue_id)

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        super().commit_offset(group, topic, queue_id, offset)
        self.dirty = True

    def remove_offset(self, group: str) -> None:
        """``removeOffset``: forget every offset of ``group`` (DELETE_SUBSCRIPTIONGROUP with removeOffset)."""
        for key in [k for k in self.offset_table if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
            del self.offset_table[key]
        for key in [k for k in self.pull_offsets if k.rpartition(TOPIC_GROUP_SEPARATOR)[2] == group]:
            del self.pull_offsets[key]
        self.dirty = True

    def clean_offset_by_topic(self, topic: str) -> None:
        super().clean_offset_by_topic(topic)
        self.dirty = True

    def assign_reset_offset(self, topic: str, group: str, queue_id: int, offset: int) -> None:
        """5.x ``assignResetOffset``: the offset is committed and remembered until the queue's next pull."""
        if not topic or not group or queue_id < 0 or offset < 0:
            return
        self.reset_offsets.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset
        self.commit_offset(group, topic, queue_id, offset)

    def query_then_erase_reset_offset(self, topic: str, group: str, queue_id: int) -> int | None:
        if not self.reset_offsets:
            return None
        return self.reset_offsets.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).pop(queue_id, None)

    def has_offset_reset(self, topic: str, group: str, queue_id: int) -> bool:
        return queue_id in self.reset_offsets.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})


@dataclass(eq=False, kw_only=True)
class OffsetProcessor:
    config: BrokerConfig
    offsets: ConsumerOffsetTable
    store: MessageStore
    groups: SubscriptionGroupTable
    """5.x refuses an offset for a group it does not have (UPDATE_CONSUMER_OFFSET)."""
    topics: TopicTable

    def query_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, QueryConsumerOffsetRequestHeader)
        group, topic, queue_id = header.consumer_group, header.topic, header.queue_id
        offset = self.offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return response(ext_fields=QueryConsumerOffsetResponseHeader(offset=offset))
        store = self.store
        min_offset = store.get_min_offset_in_queue(topic, queue_id)
        # The first message is still in memory (always, for this broker): start from 0. 5.5.0 asks
        # whether offset 0 is in memory (checkInMemByConsumeOffset), false for an empty or unknown
        # queue; 4.9.7 asks whether it is on disk only, false there too.
        if min_offset <= 0 and (not self.config.five or store.get_max_offset_in_queue(topic, queue_id) > 0):
            return response(ext_fields=QueryConsumerOffsetResponseHeader(offset=0))
        return response(
            ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )

    def update_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, UpdateConsumerOffsetRequestHeader)
        offsets = self.offsets
        topic, group = header.topic, header.consumer_group
        if self.config.five:  # 5.5.0's ConsumerManageProcessor; 4.9.7 stores whatever it is given
            if group not in self.groups.table:
                return response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {group} not exist!")
            if self.topics.get(topic) is None:
                return response(ResponseCode.TOPIC_NOT_EXIST, f"Topic {topic} not exist!")
        if offsets.reset_offsets and offsets.has_offset_reset(topic, group, header.queue_id):
            # 5.x: a server-side reset not yet pulled wins over the client's older offset.
            return response(remark="Offset has been previously reset", ext_fields=EmptyHeader())
        self.offsets.commit_offset(header.consumer_group, header.topic, header.queue_id, header.commit_offset)
        return response(ext_fields=EmptyHeader())

    def get_max_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, GetMaxOffsetRequestHeader)
        offset = self.store.get_max_offset_in_queue(header.topic, header.queue_id)
        return response(ext_fields=GetMaxOffsetResponseHeader(offset=offset))

    def get_min_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, GetMinOffsetRequestHeader)
        offset = self.store.get_min_offset_in_queue(header.topic, header.queue_id)
        return response(ext_fields=GetMinOffsetResponseHeader(offset=offset))

    def search_offset_by_timestamp(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, SearchOffsetRequestHeader)
        offset = self.store.get_offset_in_queue_by_time(header.topic, header.queue_id, header.timestamp)
        return response(ext_fields=SearchOffsetResponseHeader(offset=offset))

    def get_earliest_msg_storetime(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, GetEarliestMsgStoretimeRequestHeader)
        timestamp = self.store.get_earliest_message_time(header.topic, header.queue_id)
        return response(ext_fields=GetEarliestMsgStoretimeResponseHeader(timestamp=timestamp))
