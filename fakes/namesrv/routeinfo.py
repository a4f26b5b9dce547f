"""The name server's route tables (Java ``RouteInfoManager``), with time passed in.

Tables hold the typed bodies that go on the wire (``QueueData``, ``BrokerData``, ``DataVersion`` from
``codec.bodies``, whose bytes the golden vectors prove), so a ``TopicRouteData`` or ``ClusterInfo`` body
is a copy of table entries.
Liveness is kept per broker address; a broker is dropped after ``BROKER_CHANNEL_EXPIRED`` seconds
without a registration, or when its connection closes, as the real name server does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass

from rmqtwin.codec.bodies import (
    BrokerData,
    ClusterInfo,
    DataVersion,
    QueueData,
    TopicConfig,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
)

BROKER_CHANNEL_EXPIRED = 120.0
MASTER_ID = 0


@dataclass
class BrokerLiveInfo:
    last_update: float
    data_version: DataVersion
    channel: object
    ha_server_addr: str


@dataclass
class RegisterResult:
    ha_server_addr: str | None = None
    master_addr: str | None = None


class RouteInfoManager:
    """Topic → queue data, broker name → addresses, cluster → broker names, live brokers."""

    def __init__(self, *, five: bool = True) -> None:
        self.five = five
        """5.x keeps ``enableActingMaster`` (false for a broker that does not send it) and ``zoneName``
        in every BrokerData; 4.9.x has neither."""
        self.topic_queue_table: dict[str, dict[str, QueueData]] = {}
        self.broker_addr_table: dict[str, BrokerData] = {}
        self.cluster_addr_table: dict[str, set[str]] = {}
        self.broker_live_table: dict[str, BrokerLiveInfo] = {}
        self.filter_server_table: dict[str, list[str]] = {}

    # -- registration -------------------------------------------------------------------------
    def register_broker(
        self,
        *,
        cluster_name: str,
        broker_addr: str,
        broker_name: str,
        broker_id: int,
        ha_server_addr: str,
        topic_config_wrapper: TopicConfigSerializeWrapper | None,
        filter_server_list: list[str],
        channel: object,
        now: float,
        enable_acting_master: bool | None = None,
        zone_name: str | None = None,
    ) -> RegisterResult:
        self.cluster_addr_table.setdefault(cluster_name, set()).add(broker_name)
        register_first = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is None:
            register_first = True
            broker_data = BrokerData(cluster=cluster_name, broker_name=broker_name)
            self.broker_addr_table[broker_name] = broker_data
        if self.five:  # RouteInfoManager.registerBroker (5.x): every registration sets both
            broker_data.enable_acting_master = bool(enable_acting_master)
            broker_data.zone_name = zone_name
        addrs = broker_data.broker_addrs
        # One address serves one broker id: a slave promoted to master moves, it is not duplicated.
        for other_id in [i for i, a in addrs.items() if a == broker_addr and i != broker_id]:
            del addrs[other_id]
        old_addr = addrs.get(broker_id)
        addrs[broker_id] = broker_addr
        register_first = register_first or old_addr is None

        data_version = DataVersion() if topic_config_wrapper is None else topic_config_wrapper.data_version
        if topic_config_wrapper is not None and broker_id == MASTER_ID:
            previous = self.broker_live_table.get(broker_addr)
            changed = previous is None or previous.data_version != data_version
            if changed or register_first:
                for topic_config in topic_config_wrapper.topic_config_table.values():
                    self._create_and_update_queue_data(broker_name, topic_config)

        self.broker_live_table[broker_addr] = BrokerLiveInfo(now, data_version, channel, ha_server_addr)
        if filter_server_list:
            self.filter_server_table[broker_addr] = list(filter_server_list)
        else:
            self.filter_server_table.pop(broker_addr, None)

        result = RegisterResult()
        if broker_id != MASTER_ID:
            master_addr = addrs.get(MASTER_ID)
            if master_addr is not None and master_addr in self.broker_live_table:
                result.ha_server_addr = self.broker_live_table[master_addr].ha_server_addr
                result.master_addr = master_addr
        return result

    def _create_and_update_queue_data(self, broker_name: str, topic_config: TopicConfig) -> None:
        queue_data = QueueData(
            broker_name=broker_name,
            perm=topic_config.perm,
            read_queue_nums=topic_config.read_queue_nums,
            topic_sys_flag=topic_config.topic_sys_flag,
            write_queue_nums=topic_config.write_queue_nums,
        )
        self.topic_queue_table.setdefault(topic_config.topic_name, {})[broker_name] = queue_data

    def register_topic(self, topic: str, queue_datas: Iterable[QueueData]) -> None:
        """REGISTER_TOPIC_IN_NAMESRV (5.x ``registerTopic``): the queue data of brokers the name server
        knows. As in Java, the first unknown broker stops it: a new topic is then not registered at
        all, an existing one keeps the entries put before it."""
        queue_map = self.topic_queue_table.get(topic)
        target = queue_map if queue_map is not None else {}
        for queue_data in queue_datas:
            if queue_data.broker_name not in self.broker_addr_table:
                return
            target[queue_data.broker_name] = dataclasses.replace(queue_data)
        if queue_map is None and target:
            self.topic_queue_table[topic] = target

    def unregister_broker(
        self, cluster_name: str, broker_addr: str, broker_name: str, broker_id: int
    ) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        remove_broker_name = False
        broker_data = self.broker_addr_table.get(broker_name)
        if broker_data is not None:
            addrs = broker_data.broker_addrs
            if addrs.get(broker_id) == broker_addr:
                del addrs[broker_id]
            if not addrs:
                del self.broker_addr_table[broker_name]
                remove_broker_name = True
        if remove_broker_name:
            names = self.cluster_addr_table.get(cluster_name)
            if names is not None:
                names.discard(broker_name)
                if not names:
                    del self.cluster_addr_table[cluster_name]
            self._remove_topic_by_broker_name(broker_name)

    def _remove_topic_by_broker_name(self, broker_name: str) -> None:
        for topic in list(self.topic_queue_table):
            queues = self.topic_queue_table[topic]
            queues.pop(broker_name, None)
            if not queues:
                del self.topic_queue_table[topic]

    # -- liveness ---------------------------------------------------------------------------------
    def scan_not_active_broker(self, now: float) -> list[str]:
        """Drop brokers silent for 120 s; returns their addresses."""
        expired = [
            addr
            for addr, info in self.broker_live_table.items()
            if info.last_update + BROKER_CHANNEL_EXPIRED < now
        ]
        for addr in expired:
            self._destroy_addr(addr)
        return expired

    def on_channel_destroy(self, channel: object) -> None:
        """A broker's connection closed: forget it at once."""
        for addr, info in list(self.broker_live_table.items()):
            if info.channel is channel:
                self._destroy_addr(addr)

    def _destroy_addr(self, broker_addr: str) -> None:
        self.broker_live_table.pop(broker_addr, None)
        self.filter_server_table.pop(broker_addr, None)
        for broker_name, broker_data in list(self.broker_addr_table.items()):
            addrs = broker_data.broker_addrs
            for broker_id in [i for i, a in addrs.items() if a == broker_addr]:
                del addrs[broker_id]
            if not addrs:
                del self.broker_addr_table[broker_name]
                for cluster, names in list(self.cluster_addr_table.items()):
                    names.discard(broker_name)
                    if not names:
                        del self.cluster_addr_table[cluster]
                self._remove_topic_by_broker_name(broker_name)

    # -- queries ----------------------------------------------------------------------------------
    def pickup_topic_route_data(self, topic: str) -> TopicRouteData | None:
        """TopicRouteData for ``topic`` (copies of table entries), or None when no live broker serves it."""
        queue_map = self.topic_queue_table.get(topic)
        if not queue_map:
            return None
        broker_datas = []
        filter_server_table: dict[str, list[str]] = {}
        for broker_name in queue_map:
            broker_data = self.broker_addr_table.get(broker_name)
            if broker_data is None:
                continue
            broker_datas.append(_copy_broker_data(broker_data))
            for addr in broker_data.broker_addrs.values():
                if addr in self.filter_server_table:
                    filter_server_table[addr] = list(self.filter_server_table[addr])
        if not broker_datas:
            return None
        return TopicRouteData(
            broker_datas=broker_datas,
            filter_server_table=filter_server_table,
            queue_datas=[dataclasses.replace(q) for q in queue_map.values()],
        )

    def cluster_info(self) -> ClusterInfo:
        return ClusterInfo(
            broker_addr_table={name: _copy_broker_data(b) for name, b in self.broker_addr_table.items()},
            cluster_addr_table={c: sorted(names) for c, names in self.cluster_addr_table.items()},
        )

    def all_topics(self) -> list[str]:
        return list(self.topic_queue_table)

    def topics_by_sys_flag(self, unit: bool | None, unit_sub: bool) -> list[str]:
        """``getUnitTopics`` / ``getHasUnitSubTopicList`` / ``getHasUnitSubUnUnitTopicList``: the first
        queue data's ``topicSysFlag`` decides (bit 0 unit, bit 1 unit-sub); ``unit=None`` ignores bit 0."""
        found = []
        for topic, queues in self.topic_queue_table.items():
            if not queues:
                continue
            flag = next(iter(queues.values())).topic_sys_flag
            if (unit is None or bool(flag & 1) == unit) and (not unit_sub or flag & 2):
                found.append(topic)
        return found

    def topics_by_cluster(self, cluster: str) -> list[str]:
        names = self.cluster_addr_table.get(cluster, set())
        return [t for t, queues in self.topic_queue_table.items() if any(n in queues for n in names)]

    def system_topics(self) -> TopicList:
        topics = list(self.cluster_addr_table)
        broker_addr = None
        for names in self.cluster_addr_table.values():
            topics.extend(names)
        for broker_data in self.broker_addr_table.values():
            for addr in broker_data.broker_addrs.values():
                broker_addr = addr
                break
        return TopicList(topic_list=topics, broker_addr=broker_addr)

    def delete_topic(self, topic: str, cluster_name: str | None = None) -> None:
        if not cluster_name:
            self.topic_queue_table.pop(topic, None)
            return
        queues = self.topic_queue_table.get(topic)
        if queues is None:
            return
        for broker_name in self.cluster_addr_table.get(cluster_name, set()):
            queues.pop(broker_name, None)
        if not queues:
            del self.topic_queue_table[topic]

    def change_write_perm(self, broker_name: str, *, wipe: bool) -> int:
        """WIPE/ADD_WRITE_PERM_OF_BROKER: number of topics changed. Adding sets read and write
        (PERM_READ | PERM_WRITE), whatever the queue's perm was, as RouteInfoManager does: a
        write-only topic comes back readable, an inheritable one loses PERM_INHERIT."""
        count = 0
        for queues in self.topic_queue_table.values():
            queue_data = queues.get(broker_name)
            if queue_data is None:
                continue
            queue_data.perm = queue_data.perm & ~2 if wipe else 6
            count += 1
        return count


def _copy_broker_data(broker_data: BrokerData) -> BrokerData:
    """A copy whose address map the table may change without touching the copy."""
    return dataclasses.replace(broker_data, broker_addrs=dict(broker_data.broker_addrs))
