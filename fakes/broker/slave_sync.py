"""A slave copies its master's tables over remoting (Java ``SlaveSynchronize.syncAll``).

Topics, consumer offsets, delay offsets and subscription groups, each asked of the master the
name server named in the last REGISTER_BROKER answer, replaced wholesale and persisted, so a slave
that takes over reads on with the master's offsets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from twisted.internet.defer import Deferred, inlineCallbacks
from twisted.internet.interfaces import IReactorTime
from twisted.logger import Logger

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.store_mirror.config import ConfigManager

log = Logger()

AskMaster = Callable[[str, int], "Deferred[RemotingCommand | None]"]
"""A request without header to the master (address, code); None when it failed."""


class SyncedTable(NamedTuple):
    """A table the slave copies: the request code that reads it off the master, the slave's own, and
    what empties it before the master's is read in (Java clears the topic table before ``putAll``)."""

    code: int
    table: ConfigManager
    clear: Callable[[], None] | None = None


class SlaveSynchronize:
    ROUND_INTERVAL_5 = 60.0
    """5.x starts a round only once more than this many seconds passed since the last."""

    def __init__(self, clock: IReactorTime, ask_master: AskMaster, tables: Sequence[SyncedTable]) -> None:
        self.clock = clock
        self.ask_master = ask_master
        self.tables = tables
        self.master_addr: str | None = None
        self.synced = 0
        """How many full rounds completed (tests wait on it)."""
        self.last_round = 0.0
        """When the last round started (5.x: ``lastSyncTimeMs``, first set when the broker starts)."""

    def sync_when_due(self) -> Deferred[Any] | None:
        """5.x's check, every 3 s: a round when more than a minute passed since the last."""
        now = self.clock.seconds()
        if now - self.last_round <= self.ROUND_INTERVAL_5:
            return None
        self.last_round = now
        return self.sync_all()

    def sync_all(self) -> Deferred[Any] | None:
        log.info("slave sync, master {master}", master=self.master_addr)
        if not self.master_addr:
            return None
        return self._sync(self.master_addr)

    @inlineCallbacks
    def _sync(self, master: str) -> Any:
        for code, table, clear in self.tables:
            resp: RemotingCommand | None = yield self.ask_master(master, code)
            if resp is None or resp.code != ResponseCode.SUCCESS or not resp.body:
                log.warn("slave sync: {code} from {master} failed", code=code, master=master)
                continue
            try:
                if clear is not None:
                    clear()
                table.decode_text(resp.body.decode("utf-8"))
            except Exception as exc:  # a master that answers garbage leaves the table as it was
                log.warn("slave sync: {code} answer unreadable: {error}", code=code, error=str(exc))
                continue
            table.persist()
        self.synced += 1
        log.info("slave sync {n} from {master} done", n=self.synced, master=master)
