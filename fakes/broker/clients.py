"""Producer and consumer registries, channel expiry, group notifications, queue locks.

Mirrors ``ProducerManager``, ``ConsumerManager``/``ConsumerGroupInfo``,
``ClientHousekeepingService`` and ``RebalanceLockManager``: clients are keyed by the channel they
heartbeat on; a channel silent for 120 s, or closed, leaves every group it was in, and consumer
groups whose member set or topic set changed are told with NOTIFY_CONSUMER_IDS_CHANGED.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rmqtwin.codec.bodies import MessageQueue, SubscriptionData

CHANNEL_EXPIRED_TIMEOUT = 120.0
LOCK_MAX_LIVE_TIME = 60.0


@dataclass
class ClientChannelInfo:
    channel: Any
    client_id: str
    language: str
    version: int
    last_update: float


@dataclass
class ConsumerGroupInfo:
    group_name: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[Any, ClientChannelInfo] = field(default_factory=dict)
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)
    last_update: float = 0.0

    def update_channel(self, info: ClientChannelInfo, consume_type: str, model: str, from_where: str) -> bool:
        self.consume_type, self.message_model, self.consume_from_where = consume_type, model, from_where
        old = self.channels.get(info.channel)
        updated = old is None
        if old is None or old.client_id != info.client_id:
            self.channels[info.channel] = info
        else:
            old.last_update = info.last_update
        self.last_update = info.last_update
        return updated

    def update_subscription(self, subs: list[SubscriptionData], now: float) -> bool:
        updated = False
        topics = {s.topic for s in subs}
        for sub in subs:
            old = self.subscriptions.get(sub.topic)
            if old is None:
                self.subscriptions[sub.topic] = sub
                updated = True
            elif (sub.sub_version or 0) > (old.sub_version or 0):
                self.subscriptions[sub.topic] = sub
        for topic in [t for t in self.subscriptions if t not in topics]:
            del self.subscriptions[topic]
            updated = True
        self.last_update = now
        return updated

    def client_ids(self) -> list[str]:
        return [info.client_id for info in self.channels.values()]


class ConsumerManager:
    """Consumer groups by name; ``notify`` is called with (group, channels) when membership changes."""

    def __init__(self, notify: Callable[[str, list[Any]], None]) -> None:
        self.groups: dict[str, ConsumerGroupInfo] = {}
        self.notify = notify

    def register(
        self,
        group: str,
        info: ClientChannelInfo,
        *,
        consume_type: str,
        model: str,
        from_where: str,
        subscriptions: list[SubscriptionData],
        notify_enabled: bool = True,
    ) -> bool:
        group_info = self.groups.get(group)
        if group_info is None:
            group_info = self.groups[group] = ConsumerGroupInfo(group)
        r1 = group_info.update_channel(info, consume_type, model, from_where)
        r2 = group_info.update_subscription(subscriptions, info.last_update)
        if (r1 or r2) and notify_enabled:
            self.notify(group, list(group_info.channels))
        return r1 or r2

    def unregister(self, group: str, channel: Any, *, notify_enabled: bool = True) -> None:
        group_info = self.groups.get(group)
        if group_info is None:
            return
        if group_info.channels.pop(channel, None) is not None:
            if not group_info.channels:
                del self.groups[group]
            elif notify_enabled:
                self.notify(group, list(group_info.channels))

    def channel_closed(self, channel: Any) -> None:
        for group, group_info in list(self.groups.items()):
            if group_info.channels.pop(channel, None) is None:
                continue
            if not group_info.channels:
                del self.groups[group]
            else:
                self.notify(group, list(group_info.channels))

    def scan_not_active(self, now: float) -> list[Any]:
        """Expired channels leave silently (the real scan removes them before the close event)."""
        expired: list[Any] = []
        for group, group_info in list(self.groups.items()):
            for channel, info in list(group_info.channels.items()):
                if info.last_update + CHANNEL_EXPIRED_TIMEOUT < now:
                    del group_info.channels[channel]
                    expired.append(channel)
            if not group_info.channels:
                del self.groups[group]
        return expired

    def find_subscription(self, group: str, topic: str) -> SubscriptionData | None:
        group_info = self.groups.get(group)
        return None if group_info is None else group_info.subscriptions.get(topic)

    def groups_by_topic(self, topic: str) -> list[str]:
        return [g for g, info in self.groups.items() if topic in info.subscriptions]


class ProducerManager:
    """Producer group → channel → client info."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[Any, ClientChannelInfo]] = {}

    def register(self, group: str, info: ClientChannelInfo) -> None:
        channels = self.groups.setdefault(group, {})
        old = channels.get(info.channel)
        if old is None:
            channels[info.channel] = info
        else:
            old.last_update = info.last_update

    def unregister(self, group: str, channel: Any) -> None:
        channels = self.groups.get(group)
        if channels is not None:
            channels.pop(channel, None)
            if not channels:
                del self.groups[group]

    def channel_closed(self, channel: Any) -> None:
        for group in list(self.groups):
            self.unregister(group, channel)

    def scan_not_active(self, now: float) -> list[Any]:
        expired = []
        for group, channels in list(self.groups.items()):
            for channel, info in list(channels.items()):
                if info.last_update + CHANNEL_EXPIRED_TIMEOUT < now:
                    del channels[channel]
                    expired.append(channel)
            if not channels:
                del self.groups[group]
        return expired

    def find_channel(self, client_id: str) -> Any | None:
        """``findChannel``: the channel a producer client registered with (request-reply's requester)."""
        for channels in self.groups.values():
            for channel, info in channels.items():
                if info.client_id == client_id:
                    return channel
        return None

    def available_channel(self, group: str) -> Any | None:
        for channel in self.groups.get(group, {}):
            if getattr(channel, "is_active", True):
                return channel
        return None


@dataclass
class _LockEntry:
    client_id: str
    last_update: float


class RebalanceLockManager:
    """Orderly consumers' queue locks: one owner per (group, queue), 60 s without renewal frees it."""

    def __init__(self) -> None:
        self.table: dict[str, dict[MessageQueue, _LockEntry]] = {}

    def try_lock_batch(
        self, group: str, mqs: list[MessageQueue], client_id: str, now: float
    ) -> list[MessageQueue]:
        locks = self.table.setdefault(group, {})
        locked = []
        for mq in mqs:
            entry = locks.get(mq)
            if entry is None or entry.client_id == client_id or entry.last_update + LOCK_MAX_LIVE_TIME < now:
                locks[mq] = _LockEntry(client_id, now)
                locked.append(mq)
        return locked

    def unlock_batch(self, group: str, mqs: list[MessageQueue], client_id: str) -> None:
        locks = self.table.get(group, {})
        for mq in mqs:
            entry = locks.get(mq)
            if entry is not None and entry.client_id == client_id:
                del locks[mq]
