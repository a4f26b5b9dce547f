"""``BrokerController``: the broker's tables, store, services and dispatch table in one place.

Each processor and service is handed only the tables, managers and callables it uses (by keyword),
so its constructor shows its reach and a test can build one from a few parts. Time comes from an
injected ``IReactorTime`` (a ``Clock`` in unit tests); the network side (name-server registration)
from an injected reactor, and is skipped when no name server address is configured.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.task import LoopingCall
from twisted.logger import Logger

from rmqtwin.codec.bodies import DataVersion
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.fakes.broker.acl import PlainAclService, broker_cluster_acl_config
from rmqtwin.fakes.broker.admin import AdminProcessor
from rmqtwin.fakes.broker.client_manage import ClientManageProcessor, notify_consumer_ids_changed
from rmqtwin.fakes.broker.clients import ConsumerManager, ProducerManager, RebalanceLockManager
from rmqtwin.fakes.broker.consume_admin import ConsumeAdminProcessor
from rmqtwin.fakes.broker.filter import ConsumerFilterProcessor
from rmqtwin.fakes.broker.group_admin import GroupAdminProcessor
from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
from rmqtwin.fakes.broker.ha import HAClient, HAService
from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable, OffsetProcessor
from rmqtwin.fakes.broker.pop import PopProcessor
from rmqtwin.fakes.broker.pop_probe import PopProbeProcessor
from rmqtwin.fakes.broker.pull import PullProcessor
from rmqtwin.fakes.broker.query import QueryProcessor
from rmqtwin.fakes.broker.recall import RecallProcessor
from rmqtwin.fakes.broker.relay import ClientRelayProcessor
from rmqtwin.fakes.broker.reply import ReplyProcessor
from rmqtwin.fakes.broker.schedule import TICK_SECONDS, Reput, ScheduleMessageService
from rmqtwin.fakes.broker.send import SendProcessor
from rmqtwin.fakes.broker.slave_sync import SlaveSynchronize, SyncedTable
from rmqtwin.fakes.broker.stats import BrokerStats
from rmqtwin.fakes.broker.timer import TimerMessageService
from rmqtwin.fakes.broker.topics import TopicTable
from rmqtwin.fakes.broker.transaction import TransactionService
from rmqtwin.fakes.broker.transaction_check import TransactionalMessageCheckService
from rmqtwin.fakes.config import BrokerConfig
from rmqtwin.fakes.dispatch import Channel, Dispatcher, Handler, response
from rmqtwin.fakes.namesrv_client import NamesrvClient
from rmqtwin.store_mirror.commitlog import PutMessageResult, PutMessageStatus

if TYPE_CHECKING:
    from rmqtwin.store_mirror.config import TopicConfig
    from rmqtwin.store_mirror.message_store import MessageStore

log = Logger()

HOUSEKEEPING_INTERVAL = 10.0
SLAVE_CHANGE_REMARK = (
    "Can't modify topic or subscription group from slave broker, please execute it from master broker."
)
SLAVE_SYNC_DELAY, SLAVE_SYNC_PERIOD = 3.0, 10.0
"""4.9.7's ``handleSlaveSynchronize``: a slave copies its master's tables 3 s after start, then every 10 s."""
SLAVE_SYNC_DELAY_5, SLAVE_SYNC_CHECK_5 = 10.0, 3.0
"""5.x's ``initializeBrokerScheduledTasks``: from 10 s after start, every 3 s, a round once more than
``SlaveSynchronize.ROUND_INTERVAL_5`` (60 s) passed since the last (the first about a minute after start)."""


def store_host_ip(broker_ip1: str) -> str:
    """The storeHost's IP: brokerIP1 itself, or the address a host name (a compose service name, say)
    resolves to, as Java's ``new InetSocketAddress(brokerIP1, listenPort)`` does; messages store an IP."""
    try:
        ipaddress.ip_address(broker_ip1)
    except ValueError:
        return socket.gethostbyname(broker_ip1)
    return broker_ip1


class BrokerController:
    def __init__(
        self,
        config: BrokerConfig,
        store_dir: str,
        clock: IReactorTime,
        *,
        reactor: Any = None,
        store: MessageStore | None = None,
    ) -> None:
        self.config = config
        self.store_dir = store_dir
        self.clock = clock
        self.reactor = reactor
        self.boot_time_ms = self.now_ms()
        self.store_host = (store_host_ip(config.broker_ip1 or "127.0.0.1"), config.listen_port)
        self.sync_flush = config.flush_disk_type == "SYNC_FLUSH"
        self.config_data_version = DataVersion(timestamp=self.now_ms())

        self.topics = TopicTable(store_dir, config, on_change=self._topics_changed)
        self.groups = SubscriptionGroupTable(
            store_dir, config.auto_create_subscription_group, on_change=self._groups_changed
        )
        self.offsets = ConsumerOffsetTable(store_dir)
        self.consumers = ConsumerManager(notify_consumer_ids_changed)
        self.producers = ProducerManager()
        self.locks = RebalanceLockManager()
        self.stats = BrokerStats(clock.seconds)
        self.store: MessageStore = store if store is not None else self._create_store()
        if config.slave:  # brokerStatus of a slave counts what it replicated, as each line does
            self.store.on_replicated = self.stats.on_replicated if config.five else self.stats.on_put
        reput = Reput(self.store, self.stats, self.notify_message_arriving)
        self.schedule = ScheduleMessageService(
            store_dir, config.delay_levels_ms(), self.store, reput, self.now_ms
        )
        self.timer = TimerMessageService(store_dir, self.store, reput, self.now_ms)
        self.transactions = TransactionService(
            config=config,
            topics=self.topics,
            store=self.store,
            store_host=self.store_host,
            now_ms=self.now_ms,
            notify_message_arriving=self.notify_message_arriving,
            clock=clock,
        )
        self.transaction_check = TransactionalMessageCheckService(
            config=config,
            clock=clock,
            now_ms=self.now_ms,
            topics=self.topics,
            offsets=self.offsets,
            store=self.store,
            producers=self.producers,
        )
        self.consumer_filter = ConsumerFilterProcessor(config=config)

        self.send = SendProcessor(
            config=config,
            topics=self.topics,
            groups=self.groups,
            store=self.store,
            stats=self.stats,
            store_host=self.store_host,
            now_ms=self.now_ms,
            transactions=self.transactions,
            notify_message_arriving=self.notify_message_arriving,
            sync_flush=self.sync_flush,
            submit_replica_request=self.submit_replica_request,
        )
        self.pull = PullProcessor(
            config=config,
            clock=clock,
            topics=self.topics,
            groups=self.groups,
            consumers=self.consumers,
            offsets=self.offsets,
            store=self.store,
            stats=self.stats,
        )
        self.pop = PopProcessor(
            config=config,
            clock=clock,
            now_ms=self.now_ms,
            store_dir=store_dir,
            topics=self.topics,
            groups=self.groups,
            offsets=self.offsets,
            store=self.store,
            stats=self.stats,
            store_host=self.store_host,
            message_arrived=self.notify_message_arriving,
        )
        self.pop_probe = PopProbeProcessor(
            pop=self.pop,
            config=config,
            offsets=self.offsets,
            store=self.store,
            stats=self.stats,
            now_ms=self.now_ms,
        )
        self.recall = RecallProcessor(
            config=config,
            topics=self.topics,
            store=self.store,
            store_host=self.store_host,
            stats=self.stats,
            now_ms=self.now_ms,
        )
        self.offset_processor = OffsetProcessor(
            config=config, offsets=self.offsets, store=self.store, groups=self.groups, topics=self.topics
        )
        self.client_manage = ClientManageProcessor(
            config=config,
            clock=clock,
            topics=self.topics,
            groups=self.groups,
            consumers=self.consumers,
            producers=self.producers,
            locks=self.locks,
        )
        self.admin = AdminProcessor(
            config=config,
            config_data_version=self.config_data_version,
            boot_time_ms=self.boot_time_ms,
            topics=self.topics,
            groups=self.groups,
            offsets=self.offsets,
            consumers=self.consumers,
            producers=self.producers,
            stats=self.stats,
            store=self.store,
            store_dir=store_dir,
            schedule=self.schedule,
            put_topics=self.put_topics,
            delete_topic=self.delete_topic,
            config_changed=self.bump_config_version,
        )
        self.query = QueryProcessor(config=config, store=self.store)
        self.relay = ClientRelayProcessor(
            config=config,
            topics=self.topics,
            groups=self.groups,
            offsets=self.offsets,
            consumers=self.consumers,
            store=self.store,
        )
        self.consume_admin = ConsumeAdminProcessor(
            config=config,
            config_data_version=self.config_data_version,
            now_ms=self.now_ms,
            topics=self.topics,
            groups=self.groups,
            offsets=self.offsets,
            consumers=self.consumers,
            schedule=self.schedule,
            stats=self.stats,
            store=self.store,
        )
        self.group_admin = GroupAdminProcessor(
            config=config, groups=self.groups, offsets=self.offsets, consumers=self.consumers
        )
        self.reply = ReplyProcessor(send=self.send, producers=self.producers)
        self.dispatcher = self._build_dispatcher()
        self.acl = self._enable_acl() if config.acl_enable else None
        self.namesrv = (
            NamesrvClient(config, reactor, self.topics.serialize_wrapper, self.on_register_result)
            if reactor is not None
            else None
        )
        self.ha_service = HAService(self.store, config, clock)
        """The HA port's side (every role listens, as Java's AcceptSocketService); bound by whoever
        runs the broker."""
        self.ha_client = (
            HAClient(self.store, config, reactor) if config.slave and reactor is not None else None
        )
        self.slave_sync = (
            SlaveSynchronize(
                clock,
                self.namesrv.invoke_broker,
                [
                    SyncedTable(
                        RequestCode.GET_ALL_TOPIC_CONFIG, self.topics, self.topics.topic_config_table.clear
                    ),
                    SyncedTable(RequestCode.GET_ALL_CONSUMER_OFFSET, self.offsets),
                    SyncedTable(RequestCode.GET_ALL_DELAY_OFFSET, self.schedule),
                    SyncedTable(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, self.groups),
                ],
            )
            if config.slave and self.namesrv is not None
            else None
        )
        self._loops: list[LoopingCall] = []
        self._slave_sync_start: IDelayedCall | None = None
        self._started = False
        self.registration: Deferred[Any] | None = None
        """The REGISTER_BROKER calls the last topic change started (see AdminProcessor)."""

    # -- time --------------------------------------------------------------------------------------
    def now_ms(self) -> int:
        return int(self.clock.seconds() * 1000)

    # -- wiring ----------------------------------------------------------------------------------
    def _create_store(self) -> MessageStore:
        from rmqtwin.store_mirror.flush import TwistedFlushDriver
        from rmqtwin.store_mirror.message_store import DefaultMessageStore, FlushDiskType, MessageStoreConfig

        c = self.config
        store_config = MessageStoreConfig(
            store_path_root_dir=self.store_dir,
            mapped_file_size_commit_log=c.mapped_file_size_commit_log,
            mapped_file_size_consume_queue=c.mapped_file_size_consume_queue,
            broker_role=c.broker_role,
            max_message_size=c.max_message_size,
            message_delay_level=c.message_delay_level,
            default_query_max_num=c.default_query_max_num,
            file_reserved_time=c.file_reserved_time,
            flush_disk_type=FlushDiskType[c.flush_disk_type],
            access_message_in_memory_max_ratio=c.access_message_in_memory_max_ratio,
        )
        return DefaultMessageStore(
            self.store_dir,
            store_config,
            flush=TwistedFlushDriver(self.reactor or self.clock),
            now_ms=self.now_ms,
        )

    def _build_dispatcher(self) -> Dispatcher:
        d = Dispatcher("broker")
        table: dict[int, Handler] = {
            RequestCode.SEND_MESSAGE: self.send.process_send,
            RequestCode.SEND_MESSAGE_V2: self.send.process_send,
            RequestCode.SEND_BATCH_MESSAGE: self.send.process_send,
            RequestCode.CONSUMER_SEND_MSG_BACK: self.send.consumer_send_msg_back,
            RequestCode.PULL_MESSAGE: self.pull.process,
            RequestCode.LITE_PULL_MESSAGE: self.pull.process,
            RequestCode.POP_MESSAGE: self.pop.pop_message,
            RequestCode.ACK_MESSAGE: self.pop.ack_message,
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME: self.pop.change_invisible_time,
            RequestCode.BATCH_ACK_MESSAGE: self.pop.batch_ack_message,
            RequestCode.PEEK_MESSAGE: self.pop_probe.peek_message,
            RequestCode.NOTIFICATION: self.pop_probe.notification,
            RequestCode.POLLING_INFO: self.pop_probe.polling_info,
            RequestCode.RECALL_MESSAGE: self.recall.recall_message,
            RequestCode.QUERY_CONSUMER_OFFSET: self.offset_processor.query_consumer_offset,
            RequestCode.UPDATE_CONSUMER_OFFSET: self.offset_processor.update_consumer_offset,
            RequestCode.GET_MAX_OFFSET: self.offset_processor.get_max_offset,
            RequestCode.GET_MIN_OFFSET: self.offset_processor.get_min_offset,
            RequestCode.SEARCH_OFFSET_BY_TIMESTAMP: self.offset_processor.search_offset_by_timestamp,
            RequestCode.GET_EARLIEST_MSG_STORETIME: self.offset_processor.get_earliest_msg_storetime,
            RequestCode.HEART_BEAT: self.client_manage.heart_beat,
            RequestCode.UNREGISTER_CLIENT: self.client_manage.unregister_client,
            RequestCode.CHECK_CLIENT_CONFIG: self.consumer_filter.check_client_config,
            RequestCode.GET_CONSUMER_LIST_BY_GROUP: self.client_manage.get_consumer_list_by_group,
            RequestCode.LOCK_BATCH_MQ: self.client_manage.lock_batch_mq,
            RequestCode.UNLOCK_BATCH_MQ: self.client_manage.unlock_batch_mq,
            RequestCode.QUERY_MESSAGE: self.query.query_message,
            RequestCode.VIEW_MESSAGE_BY_ID: self.query.view_message_by_id,
            RequestCode.END_TRANSACTION: self.transactions.end_transaction,
            RequestCode.UPDATE_AND_CREATE_TOPIC: self.admin.update_and_create_topic,
            RequestCode.UPDATE_AND_CREATE_TOPIC_LIST: self.admin.update_and_create_topic_list,
            RequestCode.DELETE_TOPIC_IN_BROKER: self.admin.delete_topic_in_broker,
            RequestCode.GET_ALL_TOPIC_CONFIG: self.admin.get_all_topic_config,
            RequestCode.GET_TOPIC_STATS_INFO: self.admin.get_topic_stats_info,
            RequestCode.QUERY_TOPIC_CONSUME_BY_WHO: self.admin.query_topic_consume_by_who,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_BROKER: self.admin.get_system_topic_list_from_broker,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: self.admin.update_and_create_subscription_group,
            RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG: self.admin.get_all_subscription_group_config,
            RequestCode.DELETE_SUBSCRIPTIONGROUP: self.admin.delete_subscription_group,
            RequestCode.GET_CONSUME_STATS: self.admin.get_consume_stats,
            RequestCode.GET_CONSUMER_CONNECTION_LIST: self.admin.get_consumer_connection_list,
            RequestCode.GET_PRODUCER_CONNECTION_LIST: self.admin.get_producer_connection_list,
            RequestCode.GET_ALL_PRODUCER_INFO: self.admin.get_all_producer_info,
            RequestCode.GET_BROKER_RUNTIME_INFO: self.admin.get_broker_runtime_info,
            RequestCode.GET_BROKER_CONFIG: self.admin.get_broker_config,
            RequestCode.UPDATE_BROKER_CONFIG: self.admin.update_broker_config,
            RequestCode.GET_TOPIC_CONFIG: self.admin.get_topic_config,
            RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG: self.admin.get_subscription_group,
            RequestCode.CLONE_GROUP_OFFSET: self.admin.clone_group_offset,
            RequestCode.GET_CONSUMER_RUNNING_INFO: self.relay.get_consumer_running_info,
            RequestCode.CONSUME_MESSAGE_DIRECTLY: self.relay.consume_message_directly,
            RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS: self.relay.get_consumer_status,
            RequestCode.INVOKE_BROKER_TO_RESET_OFFSET: self.relay.reset_offset,
            RequestCode.GET_ALL_CONSUMER_OFFSET: self.consume_admin.get_all_consumer_offset,
            RequestCode.GET_ALL_DELAY_OFFSET: self.consume_admin.get_all_delay_offset,
            RequestCode.QUERY_CONSUME_TIME_SPAN: self.consume_admin.query_consume_time_span,
            RequestCode.QUERY_CORRECTION_OFFSET: self.consume_admin.query_correction_offset,
            RequestCode.GET_BROKER_CONSUME_STATS: self.consume_admin.get_broker_consume_stats,
            RequestCode.VIEW_BROKER_STATS_DATA: self.consume_admin.view_broker_stats_data,
            RequestCode.QUERY_CONSUME_QUEUE: self.consume_admin.query_consume_queue,
            RequestCode.CLEAN_UNUSED_TOPIC: self.consume_admin.clean_unused_topic,
            RequestCode.DELETE_EXPIRED_COMMITLOG: self.consume_admin.delete_expired_commitlog,
            RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE: self.consume_admin.clean_expired_consume_queue,
            RequestCode.RESUME_CHECK_HALF_MESSAGE: self.transactions.resume_check_half_message,
            RequestCode.SEND_REPLY_MESSAGE: self.reply.send_reply_message,
            RequestCode.SEND_REPLY_MESSAGE_V2: self.reply.send_reply_message,
            RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST: (
                self.group_admin.update_and_create_subscription_group_list
            ),
            RequestCode.QUERY_TOPICS_BY_CONSUMER: self.group_admin.query_topics_by_consumer,
            RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER: self.group_admin.query_subscription_by_consumer,
            RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN: self.group_admin.update_and_get_group_forbidden,
            RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG: lambda _, __: broker_cluster_acl_config(
                self.acl, fastjson2=self.config.five
            ),
        }
        if self.config.slave and not self.config.five:
            # 4.9.7 AdminBrokerProcessor.validateSlave: topics and groups change on the master only (the
            # slave copies them); 5.5.0 no longer checks.
            for refused in (
                RequestCode.UPDATE_AND_CREATE_TOPIC,
                RequestCode.DELETE_TOPIC_IN_BROKER,
                RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
                RequestCode.DELETE_SUBSCRIPTIONGROUP,
            ):
                table[refused] = lambda _, __: response(ResponseCode.SYSTEM_ERROR, SLAVE_CHANGE_REMARK)
        for code, handler in table.items():
            d.register(code, handler)
        return d

    def _enable_acl(self) -> PlainAclService:
        """``aclEnable=true``: plain ACL checks every request on both ports before its handler."""
        acl = PlainAclService(self.config.acl_file)
        self.dispatcher.add_before_dispatch(acl.before_dispatch)
        return acl

    # -- lifecycle -------------------------------------------------------------------------------
    def load(self) -> bool:
        """``BrokerController.initialize``: the config files (each falling back to its ``.bak``), then
        the store; False when one cannot be read at all."""
        loaded = self.topics.load() and self.offsets.load() and self.groups.load() and self.schedule.load()
        loaded = loaded and self.timer.load() and self.pop.checkpoint_file.load()
        return loaded and bool(self.store.load())

    def start(self) -> Deferred[Any]:
        """Start the store and services; fires once registered with every name server."""
        self.store.start()
        if not self.config.slave:  # changeSpecialServiceStatus: these run on a master only
            self._every(TICK_SECONDS, self.schedule.deliver_due)
            if self.config.five:
                self._every(TICK_SECONDS, self.timer.deliver_due)
            self.transaction_check.start()
            if self.config.five:
                self.transactions.start_op_batch()
            self.pop.start()
        if self.ha_client is not None:
            self.ha_client.start()
        if self.slave_sync is not None and self.config.five:
            self.slave_sync.last_round = self.clock.seconds()
            self._slave_sync_start = self.clock.callLater(
                SLAVE_SYNC_DELAY_5, self._every, SLAVE_SYNC_CHECK_5, self.slave_sync.sync_when_due, now=True
            )
        elif self.slave_sync is not None:
            self._slave_sync_start = self.clock.callLater(
                SLAVE_SYNC_DELAY, self._every, SLAVE_SYNC_PERIOD, self.slave_sync.sync_all, now=True
            )
        self._every(self.config.flush_consumer_offset_interval / 1000.0, self.persist_offsets)
        self._every(HOUSEKEEPING_INTERVAL, self.scan_not_active_channels)
        if self.acl is not None:
            self._every(self.acl.WATCH_INTERVAL, self.acl.reload_if_changed)
        self._started = True
        self.persist_topics()
        if self.namesrv is None:
            return succeed(None)
        self._every(self.config.register_name_server_period / 1000.0, self.register_broker_all, now=False)
        return self.register_broker_all()

    def _every(self, seconds: float, fn: Callable[[], Any], *, now: bool = False) -> None:
        loop = LoopingCall(fn)
        loop.clock = self.clock
        loop.start(seconds, now=now).addErrback(lambda f: log.failure("periodic task failed", f))
        self._loops.append(loop)

    def shutdown(self) -> Deferred[Any]:
        """Unregister from name servers, persist the tables, flush the store (removes ``abort``)."""
        if self._slave_sync_start is not None and self._slave_sync_start.active():
            self._slave_sync_start.cancel()
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self._loops = []
        self.transaction_check.stop()
        self.transactions.stop_op_batch()
        self.pull.hold.stop()
        self.pop.stop()
        self.ha_service.shutdown()
        if self.ha_client is not None:
            self.ha_client.stop()
        unregistered: Deferred[Any] = (
            self.namesrv.unregister_all() if self.namesrv is not None else succeed(None)
        )

        def finish(_: Any) -> None:
            self.persist_all()
            self.store.shutdown()
            self._started = False

        unregistered.addBoth(finish)
        return unregistered

    # -- persistence -----------------------------------------------------------------------------
    def persist_topics(self) -> None:
        self.topics.persist()

    def persist_groups(self) -> None:
        self.groups.persist()

    def persist_offsets(self) -> None:
        if self.offsets.dirty:
            self.offsets.dirty = False
            self.offsets.persist()
        self.schedule.persist()
        self.pop.checkpoint_file.persist()

    def persist_all(self) -> None:
        self.persist_topics()
        self.persist_groups()
        self.offsets.dirty = True
        self.persist_offsets()

    def _topics_changed(self, register: bool) -> None:
        if not self._started:
            return
        self.persist_topics()
        if register and self.namesrv is not None:
            self.registration = self.register_broker_all()

    def _groups_changed(self) -> None:
        if self._started:
            self.persist_groups()

    def put_topics(self, configs: list[TopicConfig]) -> Deferred[Any] | None:
        """Store topic configs; the name-server registration they started (None: none, or not started)."""
        self.registration = None
        for config in configs:
            self.topics.put(config)
        return self.registration

    def bump_config_version(self) -> None:
        self.config_data_version.next_version(self.now_ms())

    # -- events ------------------------------------------------------------------------------------
    def register_broker_all(self) -> Deferred[Any]:
        if self.namesrv is None:
            return succeed(None)
        return self.namesrv.register_all()

    def on_register_result(self, ha_server_addr: str | None, master_addr: str | None) -> None:
        """A slave learns its master's HA and remoting addresses from REGISTER_BROKER's answer."""
        if self.ha_client is not None and ha_server_addr and not self.config.ha_master_address:
            self.ha_client.update_ha_master_address(ha_server_addr)
        if self.slave_sync is not None:
            self.slave_sync.master_addr = master_addr

    def submit_replica_request(self, result: PutMessageResult) -> Deferred[PutMessageStatus] | None:
        """What a SYNC_MASTER send waits for besides the flush (None: nothing). 4.9.7: its slave to
        hold the message, SLAVE_NOT_AVAILABLE when none is connected and in sync; 5.x: only when
        ``inSyncReplicas`` > 1, that many replicas (the master included), never SLAVE_NOT_AVAILABLE."""
        ha = self.ha_service
        if self.config.broker_role != "SYNC_MASTER":
            return None
        end = result.end_offset
        if self.config.five:
            acks = self.config.in_sync_replicas
            return ha.wait_for_slaves(end, acks) if acks > 1 else None
        if not ha.is_slave_ok(end):
            return succeed(PutMessageStatus.SLAVE_NOT_AVAILABLE)
        return ha.wait_for_slaves(end, 1)

    def notify_message_arriving(self, topic: str, queue_id: int) -> None:
        if self.ha_service.connections:
            self.ha_service.notify_data()
        if self.pop.parked:
            self.pop.notify_message_arriving(topic)
        if self.pull.hold.table:
            self.pull.hold.notify_message_arriving(
                topic, queue_id, self.store.get_max_offset_in_queue(topic, queue_id)
            )

    def channel_closed(self, channel: Channel) -> None:
        self.consumers.channel_closed(channel)
        self.producers.channel_closed(channel)
        self.pull.hold.channel_closed(channel)
        self.pop.channel_closed(channel)

    def scan_not_active_channels(self) -> None:
        now = self.clock.seconds()
        for channel in self.consumers.scan_not_active(now) + self.producers.scan_not_active(now):
            close = getattr(channel, "close", None)
            if close is not None:
                close()

    def delete_topic(self, topic: str) -> None:
        self.topics.delete(topic)
        self.offsets.clean_offset_by_topic(topic)
        self.store.delete_topics([topic])
