"""The broker's topic table (Java ``TopicConfigManager``) and topic-name validation.

Topic configs are the ``TopicConfig`` bean as it appears in ``topics.json`` and in
REGISTER_BROKER bodies (dicts with RocketMQ's field names), so persisting or registering one is
a copy. ``on_change`` is called after every change (persist + re-register with the name server).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

from rmqtwin.fakes.config import BrokerConfig

AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
BENCHMARK_TOPIC = "BenchmarkTest"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
TOPIC_MAX_LENGTH = 127

SYSTEM_TOPICS = frozenset(
    {
        AUTO_CREATE_TOPIC_KEY_TOPIC,
        SCHEDULE_TOPIC,
        BENCHMARK_TOPIC,
        TRANS_HALF_TOPIC,
        TRACE_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)
NOT_ALLOWED_SEND_TOPICS = frozenset(
    {
        SCHEDULE_TOPIC,
        TRANS_HALF_TOPIC,
        TRANS_OP_HALF_TOPIC,
        TRANS_CHECK_MAX_TIME_TOPIC,
        SELF_TEST_TOPIC,
        OFFSET_MOVED_EVENT,
    }
)

PERM_PRIORITY, PERM_READ, PERM_WRITE, PERM_INHERIT = 8, 4, 2, 1
_VALID_TOPIC = re.compile(r"^[%|a-zA-Z0-9_-]+$")


def topic_config(  # noqa: PLR0917 (TopicConfig constructor order)
    name: str,
    read_queue_nums: int = 16,
    write_queue_nums: int = 16,
    perm: int = PERM_READ | PERM_WRITE,
    topic_filter_type: str = "SINGLE_TAG",
    topic_sys_flag: int = 0,
    order: bool = False,
) -> dict[str, Any]:
    """A ``TopicConfig`` bean (bean fields in fastjson's sorted order)."""
    return {
        "order": order,
        "perm": perm,
        "readQueueNums": read_queue_nums,
        "topicFilterType": topic_filter_type,
        "topicName": name,
        "topicSysFlag": topic_sys_flag,
        "writeQueueNums": write_queue_nums,
    }


def validate_topic(topic: str | None) -> str | None:
    """``TopicValidator.validateTopic``: the remark of the failure, or None when the name is valid."""
    if not topic or not topic.strip():
        return "The specified topic is blank."
    if not _VALID_TOPIC.match(topic):
        return "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    if len(topic) > TOPIC_MAX_LENGTH:
        return "The specified topic is longer than topic max length."
    return None


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


class TopicTable:
    """Topic name → TopicConfig bean, with a ``dataVersion`` bumped on every change."""

    def __init__(self, config: BrokerConfig, on_change: Callable[[bool], None] | None = None) -> None:
        self.config = config
        self.table: dict[str, dict[str, Any]] = {}
        self.data_version: dict[str, Any] = {"counter": 0, "timestamp": int(time.time() * 1000)}
        self.on_change = on_change or (lambda register: None)
        self._add_system_topics()

    def _add_system_topics(self) -> None:
        c = self.config
        self.table[SELF_TEST_TOPIC] = topic_config(SELF_TEST_TOPIC, 1, 1)
        if c.auto_create_topic_enable:
            n = c.default_topic_queue_nums
            self.table[AUTO_CREATE_TOPIC_KEY_TOPIC] = topic_config(
                AUTO_CREATE_TOPIC_KEY_TOPIC, n, n, PERM_INHERIT | PERM_READ | PERM_WRITE
            )
        self.table[BENCHMARK_TOPIC] = topic_config(BENCHMARK_TOPIC, 1024, 1024)
        cluster_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if c.cluster_topic_enable else 0)
        self.table[c.broker_cluster_name] = topic_config(c.broker_cluster_name, 16, 16, cluster_perm)
        broker_perm = PERM_INHERIT | (PERM_READ | PERM_WRITE if c.broker_topic_enable else 0)
        self.table[c.broker_name] = topic_config(c.broker_name, 1, 1, broker_perm)
        self.table[OFFSET_MOVED_EVENT] = topic_config(OFFSET_MOVED_EVENT, 1, 1)
        self.table[SCHEDULE_TOPIC] = topic_config(SCHEDULE_TOPIC, 18, 18)
        if c.trace_topic_enable:
            self.table[TRACE_TOPIC] = topic_config(TRACE_TOPIC, 1, 1)
        reply = f"{c.broker_cluster_name}_REPLY_TOPIC"
        self.table[reply] = topic_config(reply, 1, 1)

    def load(self, topics: dict[str, dict[str, Any]], data_version: dict[str, Any] | None) -> None:
        """Merge a persisted ``topics.json`` table (persisted configs win, as in Java)."""
        self.table.update(topics)
        if data_version:
            self.data_version = dict(data_version)

    def get(self, topic: str) -> dict[str, Any] | None:
        return self.table.get(topic)

    def next_version(self) -> None:
        now = int(time.time() * 1000)
        self.data_version = {"counter": int(self.data_version.get("counter", 0)) + 1, "timestamp": now}

    def put(self, config: dict[str, Any], *, register: bool = True) -> None:
        self.table[config["topicName"]] = config
        self.next_version()
        self.on_change(register)

    def delete(self, topic: str) -> bool:
        if self.table.pop(topic, None) is None:
            return False
        self.next_version()
        self.on_change(False)
        return True

    def create_in_send_message_method(
        self, topic: str, default_topic: str, client_default_queue_nums: int, topic_sys_flag: int
    ) -> dict[str, Any] | None:
        """Auto-create ``topic`` from the template ``default_topic`` (TBW102) if it may be inherited."""
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        template = self.table.get(default_topic)
        if template is None:
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self.config.auto_create_topic_enable:
            template["perm"] = PERM_READ | PERM_WRITE
        if not template["perm"] & PERM_INHERIT:
            return None
        queue_nums = max(0, min(client_default_queue_nums, template["writeQueueNums"]))
        config = topic_config(
            topic,
            queue_nums,
            queue_nums,
            template["perm"] & ~PERM_INHERIT,
            template.get("topicFilterType", "SINGLE_TAG"),
            topic_sys_flag,
        )
        self.put(config)
        return config

    def create_in_send_back_method(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0
    ) -> dict[str, Any]:
        existing = self.table.get(topic)
        if existing is not None:
            return existing
        config = topic_config(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag)
        self.put(config)
        return config

    def is_order_topic(self, topic: str) -> bool:
        config = self.table.get(topic)
        return bool(config and config.get("order"))

    def serialize_wrapper(self) -> dict[str, Any]:
        """TopicConfigSerializeWrapper: what REGISTER_BROKER and GET_ALL_TOPIC_CONFIG carry."""
        return {"dataVersion": dict(self.data_version), "topicConfigTable": dict(self.table)}
