"""Broker and name-server settings, read from a RocketMQ-style ``broker.conf``.

The fake takes the same properties file a real broker takes (``-c broker.conf``), so one file can
configure both when a test runs the same scenario against rmqtwin and Apache RocketMQ. Keys keep
RocketMQ's camelCase names; attributes are their snake_case spelling. Keys the fake does not model
are kept verbatim in ``extra`` so ``getBrokerConfig`` still shows them.
"""

from __future__ import annotations

import dataclasses
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmqtwin.codec.codes import version_ordinal
from rmqtwin.store_mirror.record import parse_delay_levels

ROCKETMQ_VERSIONS = ("4.9", "5.5")
"""The real broker lines the twin can answer as; the last is the default."""
SERVER_RELEASES = {"4.9": "V4_9_7", "5.5": "V5_5_0"}
"""The real release each line answers as (4.9.7 is the newest 4.9 server on Maven Central): its
``MQVersion.CURRENT_VERSION`` is the ``version`` of every command the server sends, whatever the
request's, and its name is GET_BROKER_RUNTIME_INFO's ``brokerVersionDesc``."""
REPORTED_ONLY = {"filterServerNums": "0", "msgTraceTopicName": "RMQ_SYS_TRACE_TOPIC", "useTLS": "false"}
"""BrokerConfig keys the twin does not model but reports at the real default, since tools read them
(mqadmin exportConfigs of 4.9.7 fails on a broker config without them); broker.conf overrides them."""
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


@dataclass
class BrokerConfig:
    """The broker settings the fake honours (``BrokerConfig`` + ``MessageStoreConfig`` subset)."""

    broker_name: str = field(default_factory=lambda: socket.gethostname().split(".")[0] or "broker-a")
    broker_cluster_name: str = "DefaultCluster"
    broker_id: int = 0
    broker_ip1: str = ""
    listen_port: int = 10911
    namesrv_addr: str = ""
    broker_permission: int = 6
    default_topic_queue_nums: int = 8
    auto_create_topic_enable: bool = True
    auto_create_subscription_group: bool = True
    cluster_topic_enable: bool = True
    broker_topic_enable: bool = True
    trace_topic_enable: bool = False
    long_polling_enable: bool = True
    short_polling_time_mills: int = 1000
    notify_consumer_ids_changed_enable: bool = True
    region_id: str = "DefaultRegion"
    trace_on: bool = True
    store_reply_message_enable: bool = True
    enable_property_filter: bool = False
    reject_transaction_message: bool = False
    register_name_server_period: int = 30_000
    register_broker_timeout_mills: int = 6000
    flush_consumer_offset_interval: int = 5000
    transaction_timeout: int = 6000
    transaction_check_max: int = 15
    transaction_check_interval: int | None = None
    """None: the emulated line's default (``check_interval_ms``)."""
    store_path_root_dir: str = ""
    flush_disk_type: str = "ASYNC_FLUSH"
    broker_role: str = "ASYNC_MASTER"
    broker_ip2: str = ""
    """The address the HA port is registered under (Java defaults it to this host's; here brokerIP1)."""
    ha_listen_port: int = 0
    """5.x honours it (0: listenPort + 1); 4.9.7's BrokerStartup always sets listenPort + 1."""
    ha_master_address: str = ""
    ha_send_heartbeat_interval: int = 5000
    ha_housekeeping_interval: int = 20_000
    ha_max_gap_not_in_sync: int = 256 * 1024 * 1024
    slave_timeout: int = 3000
    """How long a SYNC_MASTER send waits for its slave (``GroupCommitRequest``), then FLUSH_SLAVE_TIMEOUT."""
    in_sync_replicas: int = 1
    """5.x: replicas (the master included) a SYNC_MASTER send waits for; 1 waits for none."""
    slave_read_enable: bool = False
    access_message_in_memory_max_ratio: int = 40
    """A pull reading further behind the commitlog's end than this % of the machine's memory is told to
    read from the slave (``suggestWhichBrokerId``, with ``slaveReadEnable``)."""
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300_000 * 20
    max_message_size: int = 4 * 1024 * 1024
    message_delay_level: str = DEFAULT_DELAY_LEVELS
    default_query_max_num: int = 32
    file_reserved_time: int = 72
    acl_enable: bool = False
    server_channel_max_idle_time_seconds: int = 120
    recall_message_enable: bool = False  # 5.x: RECALL_MESSAGE refused unless on
    reject_unparsable_sql92: bool = False  # twin-only: SUBSCRIPTION_PARSE_FAILED instead of the reals' FOUND
    extra: dict[str, str] = field(default_factory=dict)
    rocketmq_version: str = "5.5"
    """Not a broker.conf key: the real broker line the twin answers as (``rmqtwin serve
    --rocketmq-version``, one of ``ROCKETMQ_VERSIONS``), whatever the client's version."""
    acl_file: str | None = None
    """Not a broker.conf key: the plain_acl.yml ``rmqtwin serve --acl-file`` names (else the real
    broker's rule, ``$ROCKETMQ_HOME/conf/plain_acl.yml`` and ``conf/acl/``)."""

    # ``brokerIP1`` does not survive the generic camel/snake round trip.
    _ALIASES = {
        "brokerIP1": "broker_ip1",
        "brokerIP2": "broker_ip2",
        "transactionTimeOut": "transaction_timeout",
    }
    _NOT_PROPERTIES = ("extra", "acl_file", "rocketmq_version")

    @classmethod
    def from_properties(cls, props: Mapping[str, str]) -> BrokerConfig:
        """Build from broker.conf properties; unknown keys go to ``extra``."""
        config = cls()
        config.update(props)
        return config

    @classmethod
    def load(cls, path: str | Path) -> BrokerConfig:
        import javaproperties

        with open(path, encoding="utf-8") as fh:
            return cls.from_properties(javaproperties.load(fh))

    def update(self, props: Mapping[str, str]) -> list[str]:
        """Apply properties (UPDATE_BROKER_CONFIG / broker.conf); returns the keys it changed."""
        known = {f.name: f for f in dataclasses.fields(self) if f.name not in self._NOT_PROPERTIES}
        changed = []
        for key, raw in props.items():
            attr = self._ALIASES.get(key, _snake(key))
            spec = known.get(attr)
            if spec is None:
                self.extra[key] = raw
                changed.append(key)
                continue
            current = getattr(self, attr)
            # A setting whose default is the line's (None) is an int one.
            setattr(self, attr, _coerce(raw.strip(), int if current is None else type(current)))
            changed.append(key)
        return changed

    def to_properties(self) -> dict[str, str]:
        """All settings under their RocketMQ names, as GET_BROKER_CONFIG reports them."""
        inverse = {v: k for k, v in self._ALIASES.items()}
        out: dict[str, str] = {}
        for f in dataclasses.fields(self):
            if f.name in self._NOT_PROPERTIES:
                continue
            value = getattr(self, f.name)
            if f.name == "transaction_check_interval":
                value = self.check_interval_ms
            key = inverse.get(f.name, _camel(f.name))
            out[key] = str(value).lower() if isinstance(value, bool) else str(value)
        out.update(REPORTED_ONLY)
        out.update(self.extra)
        return out

    @property
    def five(self) -> bool:
        """Whether the twin answers as a 5.x broker (else as 4.9.x)."""
        return not self.rocketmq_version.startswith("4.")

    @property
    def check_interval_ms(self) -> int:
        """``transactionCheckInterval``: 60 s on the 4.9 line, 30 s on the 5.x line unless set."""
        if self.transaction_check_interval is not None:
            return self.transaction_check_interval
        return 30_000 if self.five else 60_000

    @property
    def server_release(self) -> str:
        """The emulated release's ``MQVersion`` name (``SERVER_RELEASES``)."""
        return SERVER_RELEASES["5.5" if self.five else "4.9"]

    @property
    def server_version(self) -> int:
        """The ``version`` of every command the twin's servers send, as the emulated release sends it."""
        return version_ordinal(self.server_release)

    @property
    def broker_addr(self) -> str:
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def ha_port(self) -> int:
        """The HA port: ``haListenPort`` on 5.x when set, else listenPort + 1 (always, on 4.9.7)."""
        if self.five and self.ha_listen_port > 0:
            return self.ha_listen_port
        return self.listen_port + 1

    @property
    def ha_server_addr(self) -> str:
        return f"{self.broker_ip2 or self.broker_ip1}:{self.ha_port}"

    @property
    def slave(self) -> bool:
        return self.broker_role == "SLAVE"

    def check_role(self) -> str | None:
        """What ``BrokerStartup`` does with brokerRole/brokerId: a master is broker 0, a slave must
        have an id above 0 (Java exits with this message)."""
        if self.broker_role not in ("ASYNC_MASTER", "SYNC_MASTER", "SLAVE"):
            return f"No enum constant org.apache.rocketmq.store.config.BrokerRole.{self.broker_role}"
        if not self.slave:
            self.broker_id = 0
        elif self.broker_id <= 0:
            return "Slave's brokerId must be > 0"
        return None

    @property
    def namesrv_addrs(self) -> list[str]:
        return [a.strip() for a in self.namesrv_addr.split(";") if a.strip()]

    def delay_levels_ms(self) -> list[int]:
        """``messageDelayLevel`` parsed: index 0 is level 1."""
        return parse_delay_levels(self.message_delay_level)


def _coerce(raw: str, kind: type[Any]) -> Any:
    if kind is bool:
        return raw.lower() == "true"
    if kind is int:
        return int(raw)
    return raw
