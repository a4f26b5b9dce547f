"""Subscription group configs (Java ``SubscriptionGroupManager``), auto-created on first use.

The table is the store's ``SubscriptionGroupManager`` (``rmqtwin.store_mirror.config``), so
``subscriptionGroup.json`` has the layout and ``.bak`` discipline a real broker writes and reads, and a
group is the one ``SubscriptionGroupConfig`` bean of ``rmqtwin.codec.bodies``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING

from rmqtwin.codec.bodies import SubscriptionGroupConfig, SubscriptionGroupWrapper
from rmqtwin.codec.codes import ResponseCode
from rmqtwin.fakes.broker.topics import IllegalNameError, is_readable, validate_group
from rmqtwin.fakes.dispatch import response, suggest_todo
from rmqtwin.store_mirror.config import SubscriptionGroupManager

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.store_mirror.config import TopicConfig

CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"


def refuse_consuming(
    group: str, config: SubscriptionGroupConfig | None, five: bool
) -> RemotingCommand | None:
    """What PULL and POP answer a group that is missing or may not consume (both lines word it alike);
    None when ``config`` lets ``group`` consume."""
    if config is None:
        return response(
            ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
            f"subscription group [{group}] does not exist, {suggest_todo(five)}",
        )
    if not config.consume_enable:
        return response(ResponseCode.NO_PERMISSION, f"subscription group no permission, {group}")
    return None


def topic_not_exist(topic: str, five: bool) -> RemotingCommand:
    """What PULL, POP, PEEK, ACK and CHANGE_MESSAGE_INVISIBLETIME answer for a topic the broker lacks."""
    return response(
        ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist, apply first please! {suggest_todo(five)}"
    )


def refuse_reading(
    topic: str, config: TopicConfig | None, five: bool, reading: str
) -> RemotingCommand | None:
    """What PULL (``reading`` "pulling") and the POP family ("peeking") answer a topic that is missing or
    may not be read; None when ``config`` may be read."""
    if config is None:
        return topic_not_exist(topic, five)
    if not is_readable(config.perm):
        return response(ResponseCode.NO_PERMISSION, f"the topic[{topic}] {reading} message is forbidden")
    return None


class SubscriptionGroupTable(SubscriptionGroupManager):
    """Built-in groups first, a persisted table merged over them; ``on_change`` after every change."""

    def __init__(
        self, store_dir: str, auto_create: bool, on_change: Callable[[], None] | None = None
    ) -> None:
        super().__init__(store_dir)
        self.auto_create = auto_create
        self.on_change = on_change or (lambda: None)

    @property
    def table(self) -> dict[str, SubscriptionGroupConfig]:
        return self.subscription_group_table

    def find(self, group: str) -> SubscriptionGroupConfig | None:
        """``findSubscriptionGroupConfig``: auto-creates when allowed and the name is valid (5.x's
        ``validateGroup``; 4.9.7 creates any name, and a group ``/../../x`` then names a DLQ directory
        outside the store: the twin refuses it whichever line it emulates)."""
        config = self.subscription_group_table.get(group)
        if config is None and validate_group(group) is not None:
            return None
        if config is None and (self.auto_create or group.startswith(CID_RMQ_SYS_PREFIX)):
            config = SubscriptionGroupConfig(group_name=group)
            self.put(config)
        return config

    def put(self, config: SubscriptionGroupConfig) -> None:
        """Add or replace a group; an invalid name raises :class:`IllegalNameError`."""
        problem = validate_group(config.group_name)
        if problem is not None:
            raise IllegalNameError(problem)
        self.update_subscription_group_config(config, persist=False)
        self.on_change()

    def serialize_wrapper(self) -> SubscriptionGroupWrapper:
        """What GET_ALL_SUBSCRIPTIONGROUP_CONFIG carries (the live table, not a copy)."""
        return SubscriptionGroupWrapper(
            subscription_group_table=self.subscription_group_table,
            data_version=self.data_version,
            forbidden_table=self.forbidden_table or None,
        )

    def delete(self, group: str) -> None:
        if self.delete_subscription_group_config(group, persist=False):
            self.on_change()


def with_5x_defaults(config: SubscriptionGroupConfig) -> SubscriptionGroupConfig:
    """The group as 5.5.0 serialises its ``SubscriptionGroupConfig``: 5.x properties a 4.9-shaped
    config lacks take their 5.5.0 defaults (GET_SUBSCRIPTIONGROUP_CONFIG)."""
    return dataclasses.replace(
        config,
        attributes={} if config.attributes is None else config.attributes,
        consume_message_orderly=bool(config.consume_message_orderly),
        consume_timeout_minute=15 if config.consume_timeout_minute is None else config.consume_timeout_minute,
        group_retry_policy=config.group_retry_policy or {"type": "CUSTOMIZED"},
        group_sys_flag=config.group_sys_flag or 0,
    )
