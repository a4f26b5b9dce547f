"""Subscription group configs (Java ``SubscriptionGroupManager``), auto-created on first use."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

SYSTEM_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "__MONITOR_CONSUMER",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
)
CID_RMQ_SYS_PREFIX = "CID_RMQ_SYS_"


def subscription_group_config(name: str, **overrides: Any) -> dict[str, Any]:
    """A ``SubscriptionGroupConfig`` bean with the 4.9 defaults."""
    config = {
        "brokerId": 0,
        "consumeBroadcastEnable": True,
        "consumeEnable": True,
        "consumeFromMinEnable": True,
        "groupName": name,
        "notifyConsumerIdsChangedEnable": True,
        "retryMaxTimes": 16,
        "retryQueueNums": 1,
        "whichBrokerWhenConsumeSlowly": 1,
    }
    config.update(overrides)
    return config


class SubscriptionGroupTable:
    def __init__(self, auto_create: bool, on_change: Callable[[], None] | None = None) -> None:
        self.auto_create = auto_create
        self.table: dict[str, dict[str, Any]] = {}
        self.data_version: dict[str, Any] = {"counter": 0, "timestamp": int(time.time() * 1000)}
        self.on_change = on_change or (lambda: None)
        for name in SYSTEM_GROUPS:
            self.table[name] = subscription_group_config(name)
        self.table["TOOLS_CONSUMER"]["consumeBroadcastEnable"] = True

    def find(self, group: str) -> dict[str, Any] | None:
        """``findSubscriptionGroupConfig``: auto-creates when allowed."""
        config = self.table.get(group)
        if config is None and (self.auto_create or group.startswith(CID_RMQ_SYS_PREFIX)):
            config = subscription_group_config(group)
            self.put(config)
        return config

    def put(self, config: dict[str, Any]) -> None:
        base = subscription_group_config(config["groupName"])
        base.update(config)
        self.table[config["groupName"]] = base
        self._bump()

    def delete(self, group: str) -> None:
        if self.table.pop(group, None) is not None:
            self._bump()

    def _bump(self) -> None:
        self.data_version = {
            "counter": int(self.data_version.get("counter", 0)) + 1,
            "timestamp": int(time.time() * 1000),
        }
        self.on_change()
