"""HEART_BEAT, UNREGISTER_CLIENT, CHECK_CLIENT_CONFIG, GET_CONSUMER_LIST_BY_GROUP, LOCK/UNLOCK_BATCH_MQ.

``ClientManageProcessor`` and the consumer-list and lock parts of ``ConsumerManageProcessor`` /
``AdminBrokerProcessor`` in 4.9.8.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rmqtwin.codec.bodies import (
    GetConsumerListByGroupResponseBody,
    HeartbeatData,
    LockBatchRequestBody,
    LockBatchResponseBody,
    UnlockBatchRequestBody,
)
from rmqtwin.codec.codes import RequestCode, ResponseCode, language_name
from rmqtwin.codec.errors import BodyError
from rmqtwin.codec.headers import (
    EmptyHeader,
    GetConsumerListByGroupRequestHeader,
    HeartbeatResponseHeader,
    NotifyConsumerIdsChangedRequestHeader,
    UnregisterClientRequestHeader,
)
from rmqtwin.fakes.broker.clients import ClientChannelInfo
from rmqtwin.fakes.broker.topics import PERM_READ, PERM_WRITE, RETRY_GROUP_TOPIC_PREFIX
from rmqtwin.fakes.dispatch import NULL_KEY_NPE, Channel, decode_header, request_command, response

if TYPE_CHECKING:
    from twisted.internet.interfaces import IReactorTime

    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.clients import ConsumerManager, ProducerManager, RebalanceLockManager
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig


@dataclass(eq=False, kw_only=True)
class ClientManageProcessor:
    config: BrokerConfig
    clock: IReactorTime
    topics: TopicTable
    groups: SubscriptionGroupTable
    consumers: ConsumerManager
    producers: ProducerManager
    locks: RebalanceLockManager

    def _channel_info(self, channel: Channel, request: RemotingCommand, client_id: str) -> ClientChannelInfo:
        return ClientChannelInfo(
            channel=channel,
            client_id=client_id,
            language=language_name(request.language),
            version=request.version,
            last_update=self.clock.seconds(),
        )

    def heart_beat(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        if not request.body:
            # Both lines decode a null body into a null HeartbeatData and fail on it.
            return response(ResponseCode.SYSTEM_ERROR, "java.lang.NullPointerException")
        try:
            data = HeartbeatData.decode(request.body)
        except BodyError as exc:
            library = "fastjson2" if self.config.five else "fastjson"
            return response(ResponseCode.SYSTEM_ERROR, f"com.alibaba.{library}.JSONException: {exc}")
        consumers = data.consumer_data_set or []
        producers = data.producer_data_set or []
        # A null element, group name or subscribed topic is first used as a table key: an NPE on both lines.
        if any(c is None or c.group_name is None for c in consumers) or any(
            p is None or p.group_name is None for p in producers
        ):
            return response(ResponseCode.SYSTEM_ERROR, NULL_KEY_NPE)
        if any(s is None or s.topic is None for c in consumers for s in c.subscription_data_set or []):
            return response(ResponseCode.SYSTEM_ERROR, NULL_KEY_NPE)
        info = self._channel_info(channel, request, str(data.client_id or ""))
        for consumer in consumers:
            group = consumer.group_name
            group_config = self.groups.find(group)
            notify = True
            if group_config is not None:
                notify = group_config.notify_consumer_ids_changed_enable
                sys_flag = 2 if consumer.unit_mode else 0
                self.topics.create_in_send_back_method(
                    RETRY_GROUP_TOPIC_PREFIX + group,
                    group_config.retry_queue_nums,
                    PERM_WRITE | PERM_READ,
                    sys_flag,
                )
            self.consumers.register(
                group,
                info,
                consume_type=consumer.consume_type or "CONSUME_PASSIVELY",
                model=consumer.message_model or "CLUSTERING",
                from_where=consumer.consume_from_where or "CONSUME_FROM_LAST_OFFSET",
                subscriptions=list(consumer.subscription_data_set or []),
                notify_enabled=notify and self.config.notify_consumer_ids_changed_enable,
            )
        for producer in producers:
            self.producers.register(producer.group_name, info)
        if not self.config.five:
            return response()
        # 5.x offers heartbeat v2 to every client of the v1 path, and reports the subscription changed
        return response(ext_fields=HeartbeatResponseHeader(is_support_heart_beat_v2=True, is_sub_change=True))

    def unregister_client(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, UnregisterClientRequestHeader)
        if header.producer_group:
            self.producers.unregister(header.producer_group, channel)
        consumer_group = header.consumer_group
        if consumer_group:
            group_config = self.groups.table.get(consumer_group)
            notify = group_config is None or group_config.notify_consumer_ids_changed_enable
            self.consumers.unregister(
                consumer_group,
                channel,
                notify_enabled=notify and self.config.notify_consumer_ids_changed_enable,
            )
        return response(ext_fields=EmptyHeader())

    def get_consumer_list_by_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        group = decode_header(request, GetConsumerListByGroupRequestHeader).consumer_group
        group_info = self.consumers.groups.get(group)
        if group_info is not None:
            ids = group_info.client_ids()
            if ids:
                body = GetConsumerListByGroupResponseBody(consumer_id_list=ids).encode(
                    fastjson2=self.config.five
                )
                return response(ext_fields=EmptyHeader(), body=body)
        # GetConsumerListByGroupResponseHeader has no fields: Java's answers carry extFields {} either way.
        return response(ResponseCode.SYSTEM_ERROR, f"no consumer for this group, {group}", EmptyHeader())

    def lock_batch_mq(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = LockBatchRequestBody.decode(request.body or b"{}")
        locked = self.locks.try_lock_batch(
            str(body.consumer_group), body.mq_set, str(body.client_id), self.clock.seconds()
        )
        answer = LockBatchResponseBody(lock_okmq_set=locked)
        return response(body=answer.encode(fastjson2=self.config.five))

    def unlock_batch_mq(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        body = UnlockBatchRequestBody.decode(request.body or b"{}")
        self.locks.unlock_batch(str(body.consumer_group), body.mq_set, str(body.client_id))
        return response()


def notify_consumer_ids_changed(group: str, channels: list[Any]) -> None:
    """Broker → client NOTIFY_CONSUMER_IDS_CHANGED (oneway) to every member of the group."""
    for channel in channels:
        if getattr(channel, "is_active", False):
            channel.send_oneway(
                request_command(
                    RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
                    NotifyConsumerIdsChangedRequestHeader(consumer_group=group),
                    oneway=True,
                )
            )
