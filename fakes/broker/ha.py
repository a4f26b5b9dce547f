"""Master/slave commitlog replication over the HA port (Java ``DefaultHAService``, ``HAConnection``,
``DefaultHAClient``, ``GroupTransferService``): thin Twisted adapters over :mod:`rmqtwin.codec.ha`.

The master listens on ``haListenPort`` and streams its commitlog to each slave from the offset the
slave reports; a slave connects to the HA address its name server returned (or ``haMasterAddress``),
appends what arrives to its store and reports how far it got, which is what a SYNC_MASTER waits for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.protocol import Protocol, ServerFactory
from twisted.internet.task import LoopingCall
from twisted.logger import Logger
from twisted.python.failure import Failure

from rmqtwin.codec.ha import (
    HA_TRANSFER_BATCH_SIZE,
    HAProtocolError,
    ReportDecoder,
    TransferDecoder,
    encode_report,
    encode_transfer,
)
from rmqtwin.store_mirror.commitlog import PutMessageStatus

if TYPE_CHECKING:
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore

log = Logger()

TICK = 0.1
"""How often idle connections look for new data, heartbeats and silence (Java waits 100 ms)."""
CONNECT_RETRY = 5.0
"""``DefaultHAClient``: after a failed or lost connection the slave waits 5 s."""


class HAService:
    """The master's side: its slaves' connections, ``push2SlaveMaxOffset`` and the sends waiting on it."""

    def __init__(self, store: MessageStore, config: BrokerConfig, clock: IReactorTime) -> None:
        self.store = store
        self.config = config
        self.clock = clock
        self.connections: list[HAConnection] = []
        self.push2slave_max_offset = 0
        self._waiting: list[tuple[int, int, Deferred[PutMessageStatus], IDelayedCall]] = []

    def factory(self) -> ServerFactory:
        service = self

        class Factory(ServerFactory):
            def buildProtocol(self, addr: Any) -> HAConnection:
                return HAConnection(service)

        return Factory()

    # -- what the send path asks ---------------------------------------------------------------
    def is_slave_ok(self, master_put_where: int) -> bool:
        """``isSlaveOK``: a slave is connected and not too far behind (``haMaxGapNotInSync``)."""
        return (
            bool(self.connections)
            and master_put_where - self.push2slave_max_offset < self.config.ha_max_gap_not_in_sync
        )

    def wait_for_slaves(self, next_offset: int, acks: int) -> Deferred[PutMessageStatus]:
        """PUT_OK once ``acks`` replicas (the master counts as one; 1: ``push2SlaveMaxOffset``) hold
        everything before ``next_offset``, else FLUSH_SLAVE_TIMEOUT after ``slaveTimeout`` ms."""
        d: Deferred[PutMessageStatus] = Deferred()
        if self._acked(next_offset, acks):
            d.callback(PutMessageStatus.PUT_OK)
            return d
        entry: tuple[int, int, Deferred[PutMessageStatus], IDelayedCall]
        timer = self.clock.callLater(self.config.slave_timeout / 1000.0, lambda: self._expire(entry))
        entry = (next_offset, acks, d, timer)
        self._waiting.append(entry)
        return d

    def _acked(self, next_offset: int, acks: int) -> bool:
        if acks <= 1:
            return self.push2slave_max_offset >= next_offset
        return 1 + sum(1 for c in self.connections if c.slave_ack_offset >= next_offset) >= acks

    def _expire(self, entry: tuple[int, int, Deferred[PutMessageStatus], IDelayedCall]) -> None:
        if entry in self._waiting:
            self._waiting.remove(entry)
            entry[2].callback(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)

    # -- what the connections tell ---------------------------------------------------------------
    def notify_transfer_some(self, offset: int) -> None:
        self.push2slave_max_offset = max(self.push2slave_max_offset, offset)
        done = [e for e in self._waiting if self._acked(e[0], e[1])]
        for entry in done:
            self._waiting.remove(entry)
            entry[3].cancel()
            entry[2].callback(PutMessageStatus.PUT_OK)

    def notify_data(self) -> None:
        """New commitlog bytes: every slave's connection sends what it can now."""
        for connection in list(self.connections):
            connection.transfer()

    def shutdown(self) -> None:
        for connection in list(self.connections):
            connection.close()
        for _, _, d, timer in self._waiting:
            timer.cancel()
            d.callback(PutMessageStatus.FLUSH_SLAVE_TIMEOUT)
        self._waiting = []


class HAConnection(Protocol):
    """One slave on the master's HA port (``HAConnection``'s read and write services)."""

    def __init__(self, service: HAService) -> None:
        self.service = service
        self.decoder = ReportDecoder()
        self.slave_request_offset = -1
        self.slave_ack_offset = -1
        self.next_transfer_from = -1
        self._paused = False
        self._last_write = 0.0
        self._last_read = 0.0
        self._loop: LoopingCall | None = None

    def connectionMade(self) -> None:
        clock = self.service.clock
        self._last_write = self._last_read = clock.seconds()
        self.service.connections.append(self)
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        self.transport.registerProducer(self, True)  # type: ignore[union-attr]
        self._loop = LoopingCall(self._tick)
        self._loop.clock = clock
        self._loop.start(TICK, now=False)

    def dataReceived(self, data: bytes) -> None:
        self._last_read = self.service.clock.seconds()
        for report in self.decoder.feed(data):
            self.slave_ack_offset = report.offset
            if self.slave_request_offset < 0:
                self.slave_request_offset = report.offset
            self.service.notify_transfer_some(report.offset)
        self.transfer()

    def _tick(self) -> None:
        config = self.service.config
        now = self.service.clock.seconds()
        if now - self._last_read > config.ha_housekeeping_interval / 1000.0:
            log.warn("HA connection of a slave silent too long, closed")
            self.close()
            return
        self.transfer()
        idle = now - self._last_write > config.ha_send_heartbeat_interval / 1000.0
        if self.next_transfer_from >= 0 and idle:
            self._write(encode_transfer(self.next_transfer_from))

    def transfer(self) -> None:
        """Send the commitlog from ``nextTransferFromWhere`` while the transport takes it."""
        if self.slave_request_offset < 0 or self.transport is None:
            return
        store = self.service.store
        if self.next_transfer_from < 0:
            if self.slave_request_offset == 0:
                # A slave with nothing starts at the master's last commitlog file, as in Java.
                end = store.get_max_phy_offset()
                self.next_transfer_from = max(0, end - end % self.service.config.mapped_file_size_commit_log)
            else:
                self.next_transfer_from = self.slave_request_offset
        while not self._paused:
            data = store.get_commit_log_data(self.next_transfer_from)
            if not data:
                return
            size = min(len(data), HA_TRANSFER_BATCH_SIZE)
            self._write(encode_transfer(self.next_transfer_from, data[:size]))
            self.next_transfer_from += size

    def _write(self, data: bytes) -> None:
        if self.transport is not None:
            self.transport.write(data)
            self._last_write = self.service.clock.seconds()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()

    def pauseProducing(self) -> None:
        self._paused = True

    def resumeProducing(self) -> None:
        self._paused = False
        self.transfer()

    def stopProducing(self) -> None:
        self._paused = True

    def connectionLost(self, reason: Failure | None = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self in self.service.connections:
            self.service.connections.remove(self)


class HAClient:
    """The slave's side (``DefaultHAClient``): connect to the master's HA address, report the max
    commitlog offset, append each transfer and report again; reconnect 5 s after a loss."""

    def __init__(
        self,
        store: MessageStore,
        config: BrokerConfig,
        reactor: Any,
        *,
        on_append: Callable[[], None] = lambda: None,
    ) -> None:
        self.store = store
        self.config = config
        self.reactor = reactor
        self.on_append = on_append
        self.master_ha_address: str | None = config.ha_master_address or None
        self.protocol: HAClientProtocol | None = None
        self._connecting = False
        self._retry_at = 0.0
        self._loop: LoopingCall | None = None

    def update_ha_master_address(self, address: str | None) -> None:
        if address and address != self.master_ha_address:
            log.info("HA master address {old} -> {new}", old=self.master_ha_address, new=address)
            self.master_ha_address = address
            if self.protocol is not None:
                self.protocol.close()
        self.tick()

    def start(self) -> None:
        self._loop = LoopingCall(self.tick)
        self._loop.clock = self.reactor
        self._loop.start(TICK, now=True)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.master_ha_address = None
        if self.protocol is not None:
            self.protocol.close()

    def tick(self) -> None:
        now = self.reactor.seconds()
        if self.protocol is not None:
            self.protocol.tick(now)
            return
        if self._connecting or not self.master_ha_address or now < self._retry_at:
            return
        host, _, port = self.master_ha_address.rpartition(":")
        self._connecting = True
        endpoint = TCP4ClientEndpoint(self.reactor, host, int(port), timeout=3)
        d = connectProtocol(endpoint, HAClientProtocol(self))
        d.addErrback(self._connect_failed)

    def _connect_failed(self, failure: Failure) -> None:
        self._connecting = False
        self._retry_at = self.reactor.seconds() + CONNECT_RETRY
        log.warn(
            "HAClient connect to master {addr} failed: {error}",
            addr=self.master_ha_address,
            error=failure.getErrorMessage(),
        )

    def connected(self, protocol: HAClientProtocol) -> None:
        self._connecting = False
        self.protocol = protocol

    def disconnected(self, protocol: HAClientProtocol) -> None:
        if self.protocol is protocol:
            self.protocol = None
            self._retry_at = self.reactor.seconds() + CONNECT_RETRY


class HAClientProtocol(Protocol):
    def __init__(self, client: HAClient) -> None:
        self.client = client
        self.decoder = TransferDecoder()
        self.current_reported_offset = 0
        self._last_write = 0.0
        self._last_read = 0.0

    def connectionMade(self) -> None:
        now = self.client.reactor.seconds()
        self._last_read = now
        self.client.connected(self)
        # Java's first report waits for the heartbeat interval; the master only waits for it, so the
        # twin reports at once.
        self.current_reported_offset = self.client.store.get_max_phy_offset()
        self._report(self.current_reported_offset)

    def _report(self, offset: int) -> None:
        if self.transport is not None:
            self.transport.write(encode_report(offset))
            self._last_write = self.client.reactor.seconds()

    def tick(self, now: float) -> None:
        config = self.client.config
        if now - self._last_read > config.ha_housekeeping_interval / 1000.0:
            log.warn("HAClient: the master sent nothing for too long, connection closed")
            self.close()
            return
        if now - self._last_write > config.ha_send_heartbeat_interval / 1000.0:
            self._report(self.current_reported_offset)

    def dataReceived(self, data: bytes) -> None:
        self._last_read = self.client.reactor.seconds()
        store = self.client.store
        try:
            transfers = self.decoder.feed(data)
        except HAProtocolError as exc:
            log.error("HAClient: {error}", error=str(exc))
            self.close()
            return
        appended = False
        for transfer in transfers:
            slave_offset = store.get_max_phy_offset()
            if slave_offset not in (0, transfer.master_offset):
                log.error(
                    "master pushed offset not equal the max phy offset in slave, SLAVE: {slave} MASTER: "
                    "{master}",
                    slave=slave_offset,
                    master=transfer.master_offset,
                )
                self.close()
                return
            if transfer.body:
                if not store.append_to_commit_log(transfer.master_offset, transfer.body):
                    log.error("HAClient: the store refused {n} bytes", n=len(transfer.body))
                    self.close()
                    return
                appended = True
        if appended:
            self.client.on_append()
        current = store.get_max_phy_offset()
        if current > self.current_reported_offset:
            self.current_reported_offset = current
            self._report(current)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.client.disconnected(self)
