"""The broker's topic table (Java ``TopicConfigManager``) and topic-name validation.

The table is the store's ``TopicConfigManager`` (``rmqtwin.store_mirror.config``), so ``topics.json`` has
the layout and ``.bak`` discipline a real broker writes and reads. ``on_change`` is called after every
change (persist + re-register with the name server).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from rmqtwin.codec.bodies import TopicConfigSerializeWrapper
from rmqtwin.codec.codes import ResponseCode
from rmqtwin.fakes.config import BrokerConfig
from rmqtwin.store_mirror.config import TopicConfig, TopicConfigManager
from rmqtwin.store_mirror.record import SCHEDULE_TOPIC

AUTO_CREATE_TOPIC_KEY_TOPIC = "TBW102"
BENCHMARK_TOPIC = "BenchmarkTest"
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRACE_TOPIC = "RMQ_SYS_TRACE_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
SELF_TEST_TOPIC = "SELF_TEST_TOPIC"
OFFSET_MOVED_EVENT = "OFFSET_MOVED_EVENT"
SYSTEM_TOPIC_PREFIX = "rmq_sys_"
SYNC_BROKER_MEMBER_PREFIX = "rmq_sys_SYNC_BROKER_MEMBER_"
TIMER_TOPIC = "rmq_sys_wheel_timer"
ROCKSDB_TRANS_TOPICS = ("RMQ_SYS_ROCKSDB_TRANS_HALF_TOPIC", "RMQ_SYS_ROCKSDB_TRANS_OP_HALF_TOPIC")
RETRY_GROUP_TOPIC_PREFIX = "%RETRY%"
DLQ_GROUP_TOPIC_PREFIX = "%DLQ%"
TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 120
RETRY_OR_DLQ_TOPIC_MAX_LENGTH = 255

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
_VALID_NAME = re.compile(r"[%|a-zA-Z0-9_-]+")
_ALLOWED = "^[%|a-zA-Z0-9_-]+$"


def is_topic_or_group_illegal(name: str) -> bool:
    """``TopicValidator.isTopicOrGroupIllegal``: any character outside ``[%|a-zA-Z0-9_-]``. The whole
    string must match (a trailing newline is refused, as Java's character table refuses it)."""
    return _VALID_NAME.fullmatch(name) is None


def validate_topic(topic: str | None, *, five: bool = False) -> str | None:
    """``TopicValidator.validateTopic``: the remark of the failure, or None when the name is valid.

    ``five`` gives 5.x's remarks (which name the topic) and its 255-character limit for retry and DLQ
    topics; 4.9's are the default. Every topic that becomes a consume-queue directory passes here first.
    """
    if not topic or not topic.strip():
        return "The specified topic is blank."
    if is_topic_or_group_illegal(topic):
        if five:
            return f"The specified topic: {topic}, contains illegal characters, allowing only {_ALLOWED}"
        return f"The specified topic contains illegal characters, allowing only {_ALLOWED}"
    if five and topic.startswith((RETRY_GROUP_TOPIC_PREFIX, DLQ_GROUP_TOPIC_PREFIX)):
        if len(topic) > RETRY_OR_DLQ_TOPIC_MAX_LENGTH:
            return (
                f"The specified topic is DLQ or Retry topic: {topic}, and it's longer than topic max "
                f"length: {RETRY_OR_DLQ_TOPIC_MAX_LENGTH}"
            )
    elif len(topic) > TOPIC_MAX_LENGTH:
        if five:
            return f"The specified topic: {topic}, is longer than topic max length: {TOPIC_MAX_LENGTH}"
        return "The specified topic is longer than topic max length."
    return None


def validate_group(group: str | None) -> str | None:
    """5.x ``TopicValidator.validateGroup`` (a group name becomes the retry and DLQ topics' names)."""
    if not group or not group.strip():
        return "The specified group is blank."
    if is_topic_or_group_illegal(group):
        return f"The specified group: {group}, contains illegal characters, allowing only {_ALLOWED}"
    if len(group) > GROUP_MAX_LENGTH:
        return f"The specified group: {group}, is longer than group max length: {GROUP_MAX_LENGTH}"
    return None


def parameter_error(five: bool) -> int:
    """The code of a refused parameter: 5.x answers INVALID_PARAMETER (29) where 4.9 answers
    SYSTEM_ERROR (1), as real 5.5.0 and 4.9.7 do (``conformance/bad_inputs``)."""
    return int(ResponseCode.INVALID_PARAMETER if five else ResponseCode.SYSTEM_ERROR)


class IllegalNameError(ValueError):
    """A topic or group name that must never reach the file system."""


def is_system_topic(topic: str) -> bool:
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_TOPIC_PREFIX)


def is_readable(perm: int) -> bool:
    return bool(perm & PERM_READ)


def is_writeable(perm: int) -> bool:
    return bool(perm & PERM_WRITE)


class TopicTable(TopicConfigManager):
    """``TopicConfigManager``: topic name → :class:`TopicConfig`, persisted as ``config/topics.json``.

    The system topics are created first and a persisted table is merged over them (persisted configs
    win, as in Java). Every change bumps ``data_version`` and calls ``on_change(register)``; the broker
    persists there once started.
    """

    def __init__(
        self, store_dir: str, config: BrokerConfig, on_change: Callable[[bool], None] | None = None
    ) -> None:
        super().__init__(store_dir)
        self.config = config
        self.on_change = on_change or (lambda register: None)
        self._add_system_topics()

    @property
    def table(self) -> dict[str, TopicConfig]:
        return self.topic_config_table

    def _add_system_topics(self) -> None:
        c = self.config
        rw = PERM_READ | PERM_WRITE
        system = [TopicConfig(SELF_TEST_TOPIC, 1, 1)]
        if c.auto_create_topic_enable:
            n = c.default_topic_queue_nums
            system.append(TopicConfig(AUTO_CREATE_TOPIC_KEY_TOPIC, n, n, PERM_INHERIT | rw))
        system.append(TopicConfig(BENCHMARK_TOPIC, 1024, 1024))
        cluster_perm = PERM_INHERIT | (rw if c.cluster_topic_enable else 0)
        system.append(TopicConfig(c.broker_cluster_name, 16, 16, cluster_perm))
        broker_perm = PERM_INHERIT | (rw if c.broker_topic_enable else 0)
        system.append(TopicConfig(c.broker_name, 1, 1, broker_perm))
        system.append(TopicConfig(OFFSET_MOVED_EVENT, 1, 1))
        system.append(TopicConfig(SCHEDULE_TOPIC, 18, 18))
        if c.trace_topic_enable:
            system.append(TopicConfig(TRACE_TOPIC, 1, 1))
        system.append(TopicConfig(f"{c.broker_cluster_name}_REPLY_TOPIC", 1, 1))
        if c.five:  # 5.5.0's TopicConfigManager.init creates these at start too
            system.append(TopicConfig(f"{SYSTEM_TOPIC_PREFIX}REVIVE_LOG_{c.broker_cluster_name}", 8, 8))
            system.append(TopicConfig(f"{SYNC_BROKER_MEMBER_PREFIX}{c.broker_name}", 1, 1, PERM_INHERIT))
            for topic in (TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC, *ROCKSDB_TRANS_TOPICS, TIMER_TOPIC):
                system.append(TopicConfig(topic, 1, 1))
        for tc in system:
            self.topic_config_table[tc.topic_name] = tc

    def get(self, topic: str) -> TopicConfig | None:
        return self.topic_config_table.get(topic)

    def put(self, config: TopicConfig, *, register: bool = True) -> None:
        """Add or replace a topic; a name ``validate_topic`` refuses raises :class:`IllegalNameError` (the
        handlers answer before this; it is the last gate before a directory is named after it)."""
        problem = validate_topic(config.topic_name, five=True)
        if problem is not None:
            raise IllegalNameError(problem)
        self.update_topic_config(config, persist=False)
        self.on_change(register)

    def delete(self, topic: str) -> bool:
        if not self.delete_topic_config(topic, persist=False):
            return False
        self.on_change(False)
        return True

    def create_in_send_message_method(
        self, topic: str, default_topic: str, client_default_queue_nums: int, topic_sys_flag: int
    ) -> TopicConfig | None:
        """Auto-create ``topic`` from the template ``default_topic`` (TBW102) if it may be inherited."""
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        template = self.topic_config_table.get(default_topic)
        if template is None:
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY_TOPIC and not self.config.auto_create_topic_enable:
            template.perm = PERM_READ | PERM_WRITE
        if not template.perm & PERM_INHERIT:
            return None
        queue_nums = max(0, min(client_default_queue_nums, template.write_queue_nums))
        config = TopicConfig(
            topic,
            queue_nums,
            queue_nums,
            template.perm & ~PERM_INHERIT,
            template.topic_filter_type,
            topic_sys_flag,
        )
        self.put(config)
        return config

    def create_in_send_back_method(
        self, topic: str, queue_nums: int, perm: int, topic_sys_flag: int = 0
    ) -> TopicConfig:
        existing = self.topic_config_table.get(topic)
        if existing is not None:
            return existing
        config = TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=topic_sys_flag)
        self.put(config)
        return config

    def is_order_topic(self, topic: str) -> bool:
        config = self.topic_config_table.get(topic)
        return bool(config and config.order)

    def serialize_wrapper(self) -> TopicConfigSerializeWrapper:
        """What REGISTER_BROKER and GET_ALL_TOPIC_CONFIG carry (the live table, not a copy)."""
        return TopicConfigSerializeWrapper(
            topic_config_table=self.topic_config_table, data_version=self.data_version
        )
