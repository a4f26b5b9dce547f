"""Consumer offsets (``ConsumerOffsetManager``) and the offset requests of ``ConsumerManageProcessor``
and ``AdminBrokerProcessor``: QUERY/UPDATE_CONSUMER_OFFSET, GET_MAX/MIN_OFFSET,
SEARCH_OFFSET_BY_TIMESTAMP, GET_EARLIEST_MSG_STORETIME.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.fakes.dispatch import Channel, field, int_field, response

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.controller import BrokerController

TOPIC_GROUP_SEPARATOR = "@"


class ConsumerOffsetTable:
    """``topic@group`` → queueId → next offset to consume (what consumerOffset.json holds)."""

    def __init__(self, on_change: Callable[[], None] | None = None) -> None:
        self.offset_table: dict[str, dict[int, int]] = {}
        self.on_change = on_change or (lambda: None)
        self.dirty = False

    def commit_offset(self, client_host: str, group: str, topic: str, queue_id: int, offset: int) -> None:
        self.offset_table.setdefault(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {})[queue_id] = offset
        self.dirty = True
        self.on_change()

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        return self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id, -1)

    def query_group(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def topics_by_group(self, group: str) -> set[str]:
        return {k.split(TOPIC_GROUP_SEPARATOR, 1)[0] for k in self.offset_table if k.endswith(f"@{group}")}

    def groups_by_topic(self, topic: str) -> set[str]:
        return {k.split(TOPIC_GROUP_SEPARATOR, 1)[1] for k in self.offset_table if k.startswith(f"{topic}@")}

    def remove_group(self, group: str) -> None:
        for key in [k for k in self.offset_table if k.endswith(f"@{group}")]:
            del self.offset_table[key]
        self.dirty = True

    def remove_topic(self, topic: str) -> None:
        for key in [k for k in self.offset_table if k.startswith(f"{topic}@")]:
            del self.offset_table[key]
        self.dirty = True

    def to_json_obj(self) -> dict[str, Any]:
        return {"offsetTable": {k: dict(v) for k, v in self.offset_table.items()}}

    def load(self, obj: dict[str, Any]) -> None:
        for key, queues in (obj.get("offsetTable") or {}).items():
            self.offset_table[key] = {int(q): int(o) for q, o in queues.items()}


class OffsetProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def query_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        store = self.broker.store
        group, topic = field(request, "consumerGroup"), field(request, "topic")
        queue_id = int_field(request, "queueId")
        offset = self.broker.offsets.query_offset(group, topic, queue_id)
        if offset >= 0:
            return response(ext_fields={"offset": offset})
        min_offset = store.get_min_offset_in_queue(topic, queue_id)
        if min_offset <= 0:
            # The first message is still in memory (always, for this broker): start from 0.
            return response(ext_fields={"offset": 0})
        return response(
            ResponseCode.QUERY_NOT_FOUND, "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first"
        )

    def update_consumer_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        self.broker.offsets.commit_offset(
            channel.remote_addr,
            field(request, "consumerGroup"),
            field(request, "topic"),
            int_field(request, "queueId"),
            int_field(request, "commitOffset"),
        )
        return response(ext_fields={})

    def get_max_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        offset = self.broker.store.get_max_offset_in_queue(
            field(request, "topic"), int_field(request, "queueId")
        )
        return response(ext_fields={"offset": offset})

    def get_min_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        offset = self.broker.store.get_min_offset_in_queue(
            field(request, "topic"), int_field(request, "queueId")
        )
        return response(ext_fields={"offset": offset})

    def search_offset_by_timestamp(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        offset = self.broker.store.get_offset_in_queue_by_time(
            field(request, "topic"), int_field(request, "queueId"), int_field(request, "timestamp")
        )
        return response(ext_fields={"offset": offset})

    def get_earliest_msg_storetime(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        timestamp = self.broker.store.get_earliest_message_time(
            field(request, "topic"), int_field(request, "queueId")
        )
        return response(ext_fields={"timestamp": timestamp})
