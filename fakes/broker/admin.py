"""The admin codes mqadmin uses (``AdminBrokerProcessor`` of 4.9.8).

updateTopic/deleteTopic/topicStatus/brokerStatus/clusterList/updateSubGroup/consumerProgress/
consumerConnection/producerConnection/getBrokerConfig, plus the small reads they need.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred

from rmqtwin.codec.bodies import (
    Connection,
    ConsumerConnection,
    ConsumeStats,
    CreateTopicListRequestBody,
    GroupList,
    KVTable,
    MessageQueue,
    OffsetWrapper,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    SubscriptionGroupConfig,
    TopicList,
    TopicOffset,
    TopicStatsTable,
)
from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.headers import (
    CloneGroupOffsetRequestHeader,
    CreateTopicRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
    from_ext_fields,
)
from rmqtwin.fakes.broker.attributes import (
    MESSAGE_TYPE,
    TopicAttributeError,
    alter_current_attributes,
    parse_to_map,
)
from rmqtwin.fakes.broker.groups import with_5x_defaults
from rmqtwin.fakes.broker.topics import SCHEDULE_TOPIC, is_system_topic, parameter_error, validate_topic
from rmqtwin.fakes.dispatch import NOT_SET_REMARK, NULL_KEY_NPE, Channel, decode_header, response
from rmqtwin.store_mirror.config import TopicConfig

if TYPE_CHECKING:
    from rmqtwin.codec.bodies import DataVersion
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.clients import ClientChannelInfo, ConsumerManager, ProducerManager
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable
    from rmqtwin.fakes.broker.stats import BrokerStats
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.config import ScheduleOffsets
    from rmqtwin.store_mirror.message_store import MessageStore

CONFIG_BLACK_LIST = ("configBlackList", "brokerConfigPath")


@dataclass(eq=False, kw_only=True)
class AdminProcessor:
    config: BrokerConfig
    config_data_version: DataVersion
    boot_time_ms: int
    topics: TopicTable
    groups: SubscriptionGroupTable
    offsets: ConsumerOffsetTable
    consumers: ConsumerManager
    producers: ProducerManager
    stats: BrokerStats
    store: MessageStore
    store_dir: str
    """storePathRootDir: its partition's disk figures in GET_BROKER_RUNTIME_INFO."""
    schedule: ScheduleOffsets
    """Each delay level's delivery offset (GET_BROKER_RUNTIME_INFO's scheduleMessageOffset_N)."""
    put_topics: Callable[[list[TopicConfig]], Deferred[Any] | None]
    """Stores topic configs; the name-server registration they started (None: none)."""
    delete_topic: Callable[[str], None]
    config_changed: Callable[[], None]
    """broker.conf was updated: the config data version moves on."""

    def _mq(self, topic: str, queue_id: int) -> MessageQueue:
        return MessageQueue(topic=topic, broker_name=self.config.broker_name, queue_id=queue_id)

    # -- topics ---------------------------------------------------------------------------------
    def update_and_create_topic(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Deferred[RemotingCommand]:
        # Java's @CFNotNull ``order`` is initialised to false: a request without it is no failure.
        header = from_ext_fields(CreateTopicRequestHeader, {"order": "false", **(request.ext_fields or {})})
        topic = header.topic
        # 4.9.7 answers a bad name SYSTEM_ERROR; 5.5.0 INVALID_PARAMETER (the emulated line decides).
        five = self.config.five
        problem = validate_topic(topic, five=five)
        if problem is not None:
            return response(parameter_error(five), problem)
        refused = parameter_error(five)
        if is_system_topic(topic):
            return response(refused, f"The topic[{topic}] is conflict with system topic.")
        config = TopicConfig(
            topic,
            header.read_queue_nums,
            header.write_queue_nums,
            header.perm,
            header.topic_filter_type or "SINGLE_TAG",
            header.topic_sys_flag or 0,
            header.order if five else False,
        )
        existing = self.topics.get(topic)
        if five:
            try:
                requested = parse_to_map(header.attributes)
                if requested.get("+" + MESSAGE_TYPE) == "MIXED":
                    return response(ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
                current = (existing.attributes if existing is not None else None) or {}
                config.attributes = alter_current_attributes(existing is None, current, requested)
            except TopicAttributeError as exc:
                return response(ResponseCode.SYSTEM_ERROR, str(exc))
        elif existing is not None and existing.attributes is not None:
            config.attributes = existing.attributes  # a 4.9 request leaves 5.x attributes alone
        registration = self.put_topics([config])
        answer = response(remark=NOT_SET_REMARK)
        if registration is None:
            return answer
        # As Java's registerIncrementBrokerData: the answer follows the name servers' acknowledgements
        # (or their timeout), so a route query right after it finds the new topic.
        return registration.addBoth(lambda _: answer)

    def update_and_create_topic_list(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Deferred[RemotingCommand]:
        """5.x UPDATE_AND_CREATE_TOPIC_LIST (``mqadmin updateTopicList``): every name checked first; as
        5.5.0, a config identical to the one held answers SUCCESS at once, the rest of the list unread."""
        if not self.config.five:
            return _not_supported(request)
        if not request.body:
            return response(ResponseCode.SYSTEM_ERROR, _NO_TOPIC_LIST_NPE)
        configs = CreateTopicListRequestBody.decode(request.body).topic_config_list
        answer = response(remark=NOT_SET_REMARK)
        for wanted in configs:
            problem = validate_topic(wanted.topic_name, five=True)
            if problem is not None:
                return response(ResponseCode.INVALID_PARAMETER, problem)
            if is_system_topic(wanted.topic_name):
                conflict = f"The topic[{wanted.topic_name}] is conflict with system topic."
                return response(ResponseCode.INVALID_PARAMETER, conflict)
            if (wanted.attributes or {}).get("+" + MESSAGE_TYPE) == "MIXED":
                return response(ResponseCode.INVALID_PARAMETER, "MIXED message type is not supported.")
            held = self.topics.get(wanted.topic_name)
            if held == _store_topic_config(wanted):
                return answer
        registration = self.put_topics([_store_topic_config(wanted) for wanted in configs])
        return answer if registration is None else registration.addBoth(lambda _: answer)

    def delete_topic_in_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        topic = decode_header(request, DeleteTopicRequestHeader).topic
        problem = validate_topic(topic)
        if problem is not None:
            return response(ResponseCode.SYSTEM_ERROR, problem)
        if is_system_topic(topic):
            return response(ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic.")
        self.delete_topic(topic)
        return response()

    def get_all_topic_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return response(body=self.topics.serialize_wrapper().encode(fastjson2=self.config.five))

    def get_topic_stats_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        topic = decode_header(request, GetTopicStatsInfoRequestHeader).topic
        config = self.topics.get(topic)
        if config is None:
            return response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self.store
        table: dict[MessageQueue, TopicOffset] = {}
        # 4.9.x lists the write queues; 5.x every queue, read or write (a topic being shrunk has
        # readable queues no producer writes to any more).
        queues = config.write_queue_nums
        if self.config.five:
            queues = max(queues, config.read_queue_nums)
        for queue_id in range(queues):
            low = max(0, store.get_min_offset_in_queue(topic, queue_id))
            high = max(0, store.get_max_offset_in_queue(topic, queue_id))
            timestamp = store.get_message_store_timestamp(topic, queue_id, high - 1) if high > 0 else 0
            table[self._mq(topic, queue_id)] = TopicOffset(
                min_offset=low, max_offset=high, last_update_timestamp=timestamp
            )
        return response(body=TopicStatsTable(offset_table=table).encode(fastjson2=self.config.five))

    def query_topic_consume_by_who(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        topic = decode_header(request, QueryTopicConsumeByWhoRequestHeader).topic
        groups = set(self.consumers.groups_by_topic(topic))
        groups |= self.offsets.which_group_by_topic(topic)
        return response(body=GroupList(group_list=sorted(groups)).encode(fastjson2=self.config.five))

    def get_system_topic_list_from_broker(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        topics = [t for t in self.topics.table if is_system_topic(t)]
        return response(body=TopicList(topic_list=topics).encode(fastjson2=self.config.five))

    # -- groups and clients -------------------------------------------------------------------
    def update_and_create_subscription_group(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        if request.body:
            config = SubscriptionGroupConfig.decode(request.body)
            if config.group_name:
                self.groups.put(config)
        return response()

    def get_all_subscription_group_config(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        return response(body=self.groups.serialize_wrapper().encode(fastjson2=self.config.five))

    def delete_subscription_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, DeleteSubscriptionGroupRequestHeader)
        group = header.group_name
        self.groups.delete(group)
        if header.remove_offset or header.clean_offset:
            self.offsets.remove_offset(group)
        return response()

    def get_consume_stats(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, GetConsumeStatsRequestHeader)
        group, topic = header.consumer_group, header.topic
        topics = {topic} if topic and topic.strip() else self.offsets.which_topic_by_consumer(group)
        table: dict[MessageQueue, OffsetWrapper] = {}
        group_info = self.consumers.groups.get(group)
        for name in sorted(topics):
            config = self.topics.get(name)
            if config is None:
                continue
            if group_info is not None and group_info.subscriptions and name not in group_info.subscriptions:
                continue
            for queue_id in range(config.read_queue_nums):
                broker_offset = max(0, self.store.get_max_offset_in_queue(name, queue_id))
                consumer_offset = max(0, self.offsets.query_offset(group, name, queue_id))
                last = 0
                if consumer_offset - 1 >= 0:
                    last = self.store.get_message_store_timestamp(name, queue_id, consumer_offset - 1)
                wrapper = OffsetWrapper(
                    broker_offset=broker_offset, consumer_offset=consumer_offset, last_timestamp=max(0, last)
                )
                if self.config.five:  # how far the group pulled: mqadmin consumerProgress's #Inflight
                    pulled = self.offsets.query_pull_offset(group, name, queue_id)
                    wrapper.pull_offset = max(consumer_offset, pulled)
                table[self._mq(name, queue_id)] = wrapper
        return response(body=ConsumeStats(offset_table=table).encode(fastjson2=self.config.five))

    def _connection(self, info: ClientChannelInfo) -> Connection:
        return Connection(
            client_addr=info.channel.remote_addr,
            client_id=info.client_id,
            language=info.language,
            version=info.version,
        )

    def get_consumer_connection_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        group = decode_header(request, GetConsumerConnectionListRequestHeader).consumer_group
        info = self.consumers.groups.get(group)
        if info is None:
            return response(ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online")
        body = ConsumerConnection(
            connection_set=[self._connection(c) for c in info.channels.values()],
            subscription_table=info.subscriptions,
            consume_type=info.consume_type,
            message_model=info.message_model,
            consume_from_where=info.consume_from_where,
        )
        return response(body=body.encode(fastjson2=self.config.five))

    def get_producer_connection_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        group = decode_header(request, GetProducerConnectionListRequestHeader).producer_group
        channels = self.producers.groups.get(group)
        if channels is None:
            return response(ResponseCode.SYSTEM_ERROR, f"the producer group[{group}] not exist")
        connections = [self._connection(c) for c in channels.values()]
        return response(
            body=ProducerConnection(connection_set=connections).encode(fastjson2=self.config.five)
        )

    def get_all_producer_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """``mqadmin producer -b``: every producer channel by group (``ProducerTableInfo``)."""
        data = {
            group: [
                ProducerInfo(
                    client_id=info.client_id,
                    remote_ip=f"/{info.channel.remote_addr}",
                    language=info.language,
                    version=info.version,
                    last_update_timestamp=int(info.last_update * 1000),
                )
                for info in channels.values()
            ]
            for group, channels in self.producers.groups.items()
        }
        return response(body=ProducerTableInfo(data=data).encode(fastjson2=self.config.five))

    # -- broker ---------------------------------------------------------------------------------
    def get_broker_runtime_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """The keys of the emulated line's ``prepareRuntimeInfo`` and its store's ``getRuntimeInfo``
        (per-path commitlog disk ratio, each delay level's delivery offset); what the twin does not
        measure (thread pool queues, latencies, the timer wheel) is answered as an idle broker's."""
        stats = self.stats
        five = self.config.five
        now_ms = int(time.time() * 1000)
        store = self.store
        commit_log_dir = os.path.join(self.store_dir, "commitlog")
        disk_ratio = str(_disk_used_ratio(commit_log_dir))
        table = {"brokerVersionDesc": self.config.server_release}
        if not five:  # 5.5.0 dropped it
            table["brokerVersion"] = str(self.config.server_version)
        table |= {
            "msgPutTotalYesterdayMorning": "0",
            "msgPutTotalTodayMorning": "0",
            "msgPutTotalTodayNow": str(stats.put_total),
            "msgGetTotalYesterdayMorning": "0",
            "msgGetTotalTodayMorning": "0",
            "msgGetTotalTodayNow": str(stats.get_total),
            "sendThreadPoolQueueSize": "0",
            "sendThreadPoolQueueCapacity": "10000",
            "pullThreadPoolQueueSize": "0",
            "pullThreadPoolQueueCapacity": "100000",
            "queryThreadPoolQueueSize": "0",
            "queryThreadPoolQueueCapacity": "20000",
            "EndTransactionQueueSize": "0",
            "EndTransactionThreadPoolQueueCapacity": "100000",
            "sendThreadPoolQueueHeadWaitTimeMills": "0",
            "pullThreadPoolQueueHeadWaitTimeMills": "0",
            "queryThreadPoolQueueHeadWaitTimeMills": "0",
            "dispatchBehindBytes": "0",
            "pageCacheLockTimeMills": "0",
            "earliestMessageTimeStamp": str(_safe(store.get_earliest_message_time_all, now_ms)),
            "startAcceptSendRequestTimeStamp": "0",
            "commitLogMinOffset": str(_safe(store.get_min_phy_offset, 0)),
            "commitLogMaxOffset": str(_safe(store.get_max_phy_offset, 0)),
            "commitLogDiskRatio": disk_ratio,
            f"commitLogDiskRatio_{commit_log_dir}": disk_ratio,
            "consumeQueueDiskRatio": str(_disk_used_ratio(os.path.join(self.store_dir, "consumequeue"))),
            "commitLogDirCapacity": _dir_capacity(commit_log_dir, free_only=five),
            "bootTimestamp": str(int(self.boot_time_ms)),
            "runtime": _runtime(now_ms - self.boot_time_ms),
            "putTps": stats.put_tps(),
            "getFoundTps": stats.get_tps(),
            "getMissTps": "0.00 0.00 0.00",
            "getTotalTps": stats.get_tps(),
            # 5.x's StoreStatsService corrected the spelling.
            ("getTransferredTps" if five else "getTransferedTps"): stats.get_tps(),
            "remainHowManyDataToFlush": "0 B",
            "remainTransientStoreBufferNumbs": "2147483647",
            "putMessageEntireTimeMax": "0",
            "putMessageTimesTotal": str(stats.put_total + stats.replicated_total),
            "putMessageFailedTimes": "0",
            "putMessageSizeTotal": "0",
            "putMessageAverageSize": "0.0",
            "putMessageDistributeTime": "[<=0ms]:0 [0~10ms]:0 [10~50ms]:0 [50~100ms]:0 [100~200ms]:0 "
            "[200~500ms]:0 [500ms~1s]:0 [1~2s]:0 [2~3s]:0 [3~4s]:0 [4~5s]:0 [5~10s]:0 [10s~]:0 ",
            "dispatchMaxBuffer": "0",
            "getMessageEntireTimeMax": "0",
            "putLatency99": "0.00",
            "putLatency999": "0.00",
        }
        if five:
            table |= {
                # isSpecialServiceRunning: the delay and transaction check services run on masters only
                "brokerActive": str(not self.config.slave).lower(),
                "litePullThreadPoolQueueSize": "0",
                "litePullThreadPoolQueueCapacity": "100000",
                "litePullThreadPoolQueueHeadWaitTimeMills": "0",
                "ackThreadPoolQueueSize": "0",
                "ackThreadPoolQueueCapacity": "100000",
                "ackThreadPoolQueueHeadWaitTimeMills": "0",
                "timerReadBehind": "0",
                "timerOffsetBehind": "0",
                "timerCongestNum": "0",
                "timerEnqueueTps": "0.0",
                "timerDequeueTps": "0.0",
            }
        # ScheduleMessageService.buildRunningStats: each level delivered from so far, "offset,maxOffset".
        for level, offset in sorted(self.schedule.offset_table.items()):
            max_offset = _safe(functools.partial(store.get_max_offset_in_queue, SCHEDULE_TOPIC, level - 1), 0)
            table[f"scheduleMessageOffset_{level}"] = f"{offset},{max_offset}"
        return response(body=KVTable(table=table).encode(fastjson2=self.config.five))

    def get_broker_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        text = "".join(f"{k}={v}\n" for k, v in self.config.to_properties().items())
        version = self.config_data_version.encode(fastjson2=self.config.five).decode()
        return response(ext_fields=GetBrokerConfigResponseHeader(version=version), body=text.encode("utf-8"))

    def update_broker_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        import javaproperties

        body = request.body
        if not body:
            return response()
        # new String(body, UTF-8) reads malformed bytes as U+FFFD; MixAll.string2Properties gives null
        # for what Properties.load refuses (a malformed \uXXXX), answered as below.
        try:
            props = javaproperties.load(io.StringIO(body.decode("utf-8", "replace")))
        except ValueError:
            return response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        if any(key in CONFIG_BLACK_LIST for key in props):
            return response(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        changed = self.config.update(props)
        if "accessMessageInMemoryMaxRatio" in changed:  # a MessageStoreConfig key, read on every pull
            ratio = self.config.access_message_in_memory_max_ratio
            self.store.config.access_message_in_memory_max_ratio = ratio
        self.config_changed()
        return response()

    def get_topic_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """5.x GET_TOPIC_CONFIG: the ``TopicConfig`` itself (``TopicConfigAndQueueMapping`` without a
        mapping), attributes included; 4.9.7 has no such request."""
        if not self.config.five:
            return _not_supported(request)
        topic = decode_header(request, GetTopicConfigRequestHeader).topic
        config = self.topics.get(topic)
        if config is None:
            return response(ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {topic}")
        body = dataclasses.replace(config, attributes=config.attributes or {})
        return response(body=body.encode(fastjson2=True))

    def get_subscription_group(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """5.x GET_SUBSCRIPTIONGROUP_CONFIG: the group's config, auto-created when that is on; 4.9.7
        has no such request."""
        if not self.config.five:
            return _not_supported(request)
        group = decode_header(request, GetSubscriptionGroupConfigRequestHeader, strict=False).group
        if group is None:
            # 5.5.0 does not check the field: its group table lookup fails on the null.
            return response(ResponseCode.SYSTEM_ERROR, NULL_KEY_NPE)
        config = self.groups.find(group)
        if config is None:
            return response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")
        return response(body=with_5x_defaults(config).encode(fastjson2=True))

    def clone_group_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, CloneGroupOffsetRequestHeader)
        src, dest, topic = header.src_group, header.dest_group, header.topic
        offsets = self.offsets
        topics = {topic} if topic else offsets.which_topic_by_consumer(src)
        for name in topics:
            for queue_id, offset in offsets.query_offsets(src, name).items():
                offsets.commit_offset(dest, name, queue_id, offset)
        return response()


_NO_TOPIC_LIST_NPE = (
    'java.lang.NullPointerException: Cannot invoke "org.apache.rocketmq.remoting.protocol.body.'
    'CreateTopicListRequestBody.getTopicConfigList()" because "requestBody" is null, '
    "org.apache.rocketmq.broker.processor.AdminBrokerProcessor.updateAndCreateTopicList(AdminBrokerProcessor.java:637)"
)
"""UPDATE_AND_CREATE_TOPIC_LIST without a body, as real 5.5.0 answers it."""


def _store_topic_config(body: TopicConfig) -> TopicConfig:
    """A listed topic as the table keeps it: 5.x attributes always present (``{}`` when none came)."""
    return dataclasses.replace(body, attributes=dict(body.attributes or {}))


def _not_supported(request: RemotingCommand) -> RemotingCommand:
    return response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported")


def _safe(fn: Callable[[], int], default: int) -> int:
    try:
        return int(fn())
    except Exception:
        return default


def _disk_used_ratio(path: str) -> float:
    """``UtilAll.getDiskPartitionSpaceUsedPercent``: (total - free) / total of the path's partition."""
    try:
        fs = os.statvfs(path if os.path.exists(path) else os.path.dirname(path) or ".")
    except OSError:
        return -1.0
    total = fs.f_blocks * fs.f_frsize
    return (total - fs.f_bfree * fs.f_frsize) / total if total > 0 else -1.0


def _human_readable_bytes(count: int) -> str:
    """``MixAll.humanReadableByteCount(bytes, false)``: ``512 B``, ``12.3 GiB``."""
    if count < 1024:
        return f"{count} B"
    exp = min(int(math.log(count) / math.log(1024)), 6)
    return f"{count / 1024**exp:.1f} {'KMGTPE'[exp - 1]}iB"


def _dir_capacity(path: str, *, free_only: bool) -> str:
    """``commitLogDirCapacity``: the partition's total and free space (4.9.7 the usable space,
    5.x ``getFreeSpace``, which counts the blocks reserved for root)."""
    try:
        fs = os.statvfs(path if os.path.exists(path) else os.path.dirname(path) or ".")
    except OSError:
        return "Total : 0 B, Free : 0 B."
    free = (fs.f_bfree if free_only else fs.f_bavail) * fs.f_frsize
    total = fs.f_blocks * fs.f_frsize
    return f"Total : {_human_readable_bytes(total)}, Free : {_human_readable_bytes(free)}."


def _runtime(elapsed_ms: int) -> str:
    """``BrokerController.getRunningTime`` style: days, hours, minutes, seconds."""
    seconds = max(0, elapsed_ms) // 1000
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    return f"[ {days} days, {hours} hours, {minutes} minutes, {secs} seconds ]"
