"""A slave copies its master's tables over remoting (Java ``SlaveSynchronize.syncAll``).

Topics, consumer offsets, delay offsets and subscription groups, each asked of the master the
name server named in the last REGISTER_BROKER answer, replaced wholesale and persisted, so a slave
that takes over reads on with the master's offsets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.logger import Logger

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.store_mirror.config import ConfigManager

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.controller import BrokerController

log = Logger()


class SlaveSynchronize:
    ROUND_INTERVAL_5 = 60.0
    """5.x starts a round only once more than this many seconds passed since the last."""

    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker
        self.master_addr: str | None = None
        self.synced = 0
        """How many full rounds completed (tests wait on it)."""
        self.last_round = 0.0
        """When the last round started (5.x: ``lastSyncTimeMs``, first set when the broker starts)."""

    def sync_when_due(self) -> Deferred[Any] | None:
        """5.x's check, every 3 s: a round when more than a minute passed since the last."""
        now = self.broker.clock.seconds()
        if now - self.last_round <= self.ROUND_INTERVAL_5:
            return None
        self.last_round = now
        return self.sync_all()

    def sync_all(self) -> Deferred[Any] | None:
        log.info("slave sync, master {master}", master=self.master_addr)
        if not self.master_addr or self.broker.namesrv is None:
            return None
        return self._sync(self.master_addr)

    @inlineCallbacks
    def _sync(self, master: str) -> Any:
        broker = self.broker
        tables: list[tuple[int, ConfigManager, bool]] = [
            (RequestCode.GET_ALL_TOPIC_CONFIG, broker.topics, True),
            (RequestCode.GET_ALL_CONSUMER_OFFSET, broker.offsets, False),
            (RequestCode.GET_ALL_DELAY_OFFSET, broker.schedule, False),
            (RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG, broker.groups, False),
        ]
        assert broker.namesrv is not None
        for code, table, clear in tables:
            resp: RemotingCommand | None = yield broker.namesrv.invoke_broker(master, code)
            if resp is None or resp.code != ResponseCode.SUCCESS or not resp.body:
                log.warn("slave sync: {code} from {master} failed", code=code, master=master)
                continue
            try:
                if clear:
                    broker.topics.topic_config_table.clear()
                table._decode_text(resp.body.decode("utf-8"))
            except Exception as exc:  # a master that answers garbage leaves the table as it was
                log.warn("slave sync: {code} answer unreadable: {error}", code=code, error=str(exc))
                continue
            table.persist()
        self.synced += 1
        log.info("slave sync {n} from {master} done", n=self.synced, master=master)
