"""``NamesrvController``: route tables, KV config, the 10-second inactive-broker scan."""

from __future__ import annotations

from typing import Any

from twisted.internet.interfaces import IReactorTime
from twisted.internet.task import LoopingCall

from rmqtwin.fakes.namesrv.processor import NamesrvProcessor
from rmqtwin.fakes.namesrv.routeinfo import RouteInfoManager

SCAN_NOT_ACTIVE_BROKER_INTERVAL = 10.0


class NamesrvController:
    def __init__(self, clock: IReactorTime, *, order_message_enable: bool = False, five: bool = True) -> None:
        """``five``: answer as a 5.x name server (else as 4.9.x, whose name server leaves unknown codes
        alone)."""
        self.clock = clock
        self.routes = RouteInfoManager(five=five)
        self.processor = NamesrvProcessor(
            self.routes, clock.seconds, order_message_enable=order_message_enable, five=five
        )
        self.dispatcher = self.processor.dispatcher
        self._scan: LoopingCall | None = None

    def start(self) -> None:
        scan = LoopingCall(self.scan_not_active_broker)
        scan.clock = self.clock
        scan.start(SCAN_NOT_ACTIVE_BROKER_INTERVAL, now=False)
        self._scan = scan

    def scan_not_active_broker(self) -> list[str]:
        expired = []
        for addr, info in list(self.routes.broker_live_table.items()):
            if info.last_update + 120.0 < self.clock.seconds():
                expired.append(addr)
                close = getattr(info.channel, "close", None)
                if close is not None:
                    close()
        self.routes.scan_not_active_broker(self.clock.seconds())
        return expired

    def channel_closed(self, channel: Any) -> None:
        self.routes.on_channel_destroy(channel)

    def shutdown(self) -> None:
        if self._scan is not None and self._scan.running:
            self._scan.stop()
        self._scan = None
