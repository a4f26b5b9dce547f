"""The recording proxy: a namesrv listener plus one listener per upstream broker, all on Twisted.

Every accepted connection is paired 1:1 with its own upstream connection, as in
``twisted.protocols.portforward``: reading from the client is paused until the upstream connection
exists, each transport is the streaming producer of the other (a full write buffer on one side stops
reading on the other), and closing either side closes the other. Because the pairing is 1:1,
broker-initiated requests (CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED,
GET_CONSUMER_RUNNING_INFO, ...) come back on the very connection of the client they are meant for.

Client-to-upstream bytes are forwarded as they arrive. Upstream-to-client traffic is held back until
its frame is complete, because it may name a broker: namesrv answers carry broker addresses, broker
frames carry offset msgIds and records with the broker's store host (:mod:`rmqtwin.proxy.rewrite`).
A frame that needs no change is still forwarded byte for byte.

Each broker gets two listeners, ``P`` and ``P - 2``, because clients with ``vipChannelEnabled`` dial
the broker's port minus two (its "VIP" fast channel); the second forwards to the broker's own VIP port.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, task
from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IAddress, IListeningPort, IPushProducer
from twisted.internet.protocol import ClientFactory, Factory, Protocol
from twisted.logger import Logger
from twisted.python.failure import Failure
from zope.interface import implementer

from rmqtwin.codec.frame import DEFAULT_MAX_FRAME_SIZE
from rmqtwin.listen import listen_vip_pair
from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER, Endpoint
from rmqtwin.proxy.faults import FaultEngine, FaultHook
from rmqtwin.proxy.metrics import MetricsHook, ProxyMetrics
from rmqtwin.proxy.recorder import Recorder
from rmqtwin.proxy.rewrite import AddressRewriter
from rmqtwin.proxy.session import (
    BrokerRewriteHook,
    Close,
    Command,
    Delay,
    Hook,
    ProxySession,
    Record,
    RecordHook,
    RewriteHook,
    Send,
)

__all__ = ["KIND_BROKER", "KIND_HA", "KIND_NAMESRV", "ProxiedConnection", "RecordingProxy", "Upstream"]

log = Logger(namespace="rmqtwin.proxy")

KIND_NAMESRV = "namesrv"
KIND_BROKER = "broker"
KIND_HA = "ha"
"""A broker's HA port: not the remoting protocol, so forwarded and recorded as raw chunks."""


@dataclass(frozen=True, slots=True)
class Upstream:
    host: str
    port: int

    @classmethod
    def parse(cls, text: str) -> Upstream:
        host, sep, port = text.strip().rpartition(":")
        if not sep or not port.isdigit() or not host:
            raise ValueError(f"not a host:port address: {text!r}")
        return cls(host.strip("[]"), int(port))

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def _endpoint(address: IAddress) -> Endpoint:
    host = getattr(address, "host", None)
    port = getattr(address, "port", None)
    if host is None or port is None:
        return Endpoint("::", 0)
    return Endpoint(str(host), int(port))


def _no_delay(transport: Any) -> None:
    """Disable Nagle, as Netty does for RocketMQ: small requests and answers must not wait for ACKs."""
    set_no_delay = getattr(transport, "setTcpNoDelay", None)
    if set_no_delay is not None:
        set_no_delay(True)


def _send(transport: Any, data: bytes) -> None:
    """``transport.write(data)``, but sent at once when nothing is queued on a plain TCP transport.

    Twisted's ``write`` only queues: the bytes leave on the next reactor turn, after two
    ``epoll_ctl`` calls. Forwarding one frame per read, the proxy saves that turn (latency on every
    hop) whenever the socket takes the bytes right away; whatever it does not take is queued as
    usual, behind nothing, so order and flow control are unchanged.
    """
    sock = getattr(transport, "socket", None)
    if (
        sock is not None
        and transport.connected
        and not transport.disconnecting
        and not getattr(transport, "_tempDataBuffer", True)
        and not getattr(transport, "dataBuffer", True)
    ):
        try:
            sent = sock.send(data)
        except OSError:  # would block, or an error write() will report through connectionLost
            sent = 0
        if sent == len(data):
            return
        data = data[sent:]
    transport.write(data)


@implementer(IPushProducer)
class _Gate:
    """Pauses a transport's reading while any reason to pause holds.

    Several parties pause the same transport: the peer's full write buffer, the upstream connection
    not being there yet. Twisted's pause/resume do not count, so each party names its reason and
    reading resumes only when none is left.
    """

    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self.reasons: set[str] = set()

    def pause(self, reason: str) -> None:
        if not self.reasons:
            self.transport.pauseProducing()
        self.reasons.add(reason)

    def resume(self, reason: str) -> None:
        if reason in self.reasons:
            self.reasons.discard(reason)
            if not self.reasons:
                self.transport.resumeProducing()

    # IPushProducer, registered with the peer's transport.
    def pauseProducing(self) -> None:
        self.pause("peer")

    def resumeProducing(self) -> None:
        self.resume("peer")

    def stopProducing(self) -> None:
        self.transport.loseConnection()


class _UpstreamProtocol(Protocol):
    def __init__(self, owner: ProxiedConnection) -> None:
        self.owner = owner
        self.gate: _Gate | None = None

    @property
    def _t(self) -> Any:
        """The TCP transport, with its producer/consumer and address methods."""
        return self.transport

    def connectionMade(self) -> None:
        _no_delay(self.transport)
        self.owner.upstream_connected(self)

    def dataReceived(self, data: bytes) -> None:
        self.owner.from_upstream(data)

    def connectionLost(self, reason: Failure = Failure(ConnectionError())) -> None:  # noqa: B008
        self.owner.upstream_lost(reason)


class _UpstreamFactory(ClientFactory):
    noisy = False

    def __init__(self, owner: ProxiedConnection) -> None:
        self.owner = owner

    def buildProtocol(self, addr: IAddress | None) -> _UpstreamProtocol:
        return _UpstreamProtocol(self.owner)

    def clientConnectionFailed(self, connector: Any, reason: Failure) -> None:
        self.owner.upstream_failed(reason)


class ProxiedConnection(Protocol):
    """One accepted client connection and its upstream twin; the Twisted adapter of a ProxySession."""

    def __init__(self, proxy: RecordingProxy, kind: str, targets: Sequence[Upstream], listener: str) -> None:
        self.proxy = proxy
        self.kind = kind
        self.targets = list(targets)
        self.listener = listener
        self.conn_id = 0
        self.gate: _Gate | None = None
        self.upstream: _UpstreamProtocol | None = None
        self.session = ProxySession([])
        self._connector: Any = None
        self._attempt = 0
        self._closed = False
        self.client = Endpoint("::", 0)
        self.server = Endpoint("::", 0)
        self._later: dict[int, _Later] = {}

    @property
    def _t(self) -> Any:
        """The TCP transport, with its producer/consumer and address methods."""
        return self.transport

    # -- client side ----------------------------------------------------------------------------

    def connectionMade(self) -> None:
        _no_delay(self.transport)
        self.conn_id = self.proxy.next_conn_id()
        self.client = _endpoint(self._t.getPeer())
        self.session = self.proxy.new_session(self)
        self.gate = _Gate(self.transport)
        self.gate.pause("connecting")
        self.proxy.connections.add(self)
        self._connect_next()

    @property
    def _target(self) -> Upstream:
        """The upstream of the latest connect attempt (namesrv connections fail over in order)."""
        return self.targets[(self._attempt - 1) % len(self.targets)]

    def _connect_next(self) -> None:
        target = self.targets[self._attempt % len(self.targets)]
        self._attempt += 1
        self._connector = self.proxy.reactor.connectTCP(
            target.host, target.port, _UpstreamFactory(self), timeout=self.proxy.connect_timeout
        )

    def dataReceived(self, data: bytes) -> None:
        up = self.upstream
        if up is None or up.transport is None:
            return
        self.carry_through(DIR_TO_SERVER, data)

    def connectionLost(self, reason: Failure = Failure(ConnectionError())) -> None:  # noqa: B008
        self.proxy.connections.discard(self)
        for later in self._later.values():
            later.cancel()
        up = self.upstream
        if up is not None and up.transport is not None:
            up._t.loseConnection()
        elif self._connector is not None and getattr(self._connector, "state", "") == "connecting":
            self._connector.stopConnecting()
        self._record_close(f"client closed: {reason.getErrorMessage()}")

    # -- upstream side --------------------------------------------------------------------------

    def upstream_connected(self, up: _UpstreamProtocol) -> None:
        if self._closed or not self._t.connected:
            up._t.loseConnection()
            return
        assert self.gate is not None and up.transport is not None
        self.upstream = up
        up.gate = _Gate(up.transport)
        self.server = _endpoint(up._t.getPeer())
        # portforward's wiring: each transport is the streaming producer of the other.
        self._t.registerProducer(up.gate, True)
        up._t.registerProducer(self.gate, True)
        if self.proxy.recorder is not None:
            self.proxy.recorder.connection_opened(
                self.conn_id,
                self.client,
                self.server,
                {"kind": self.kind, "listener": self.listener, "upstream": str(self._target)},
            )
        self.gate.resume("connecting")

    def upstream_failed(self, reason: Failure) -> None:
        if self._closed:
            return
        if self.kind == KIND_NAMESRV and self._attempt < len(self.targets):
            self._connect_next()
            return
        self._record_close(f"upstream connect failed: {reason.getErrorMessage()}")
        self._t.loseConnection()

    def from_upstream(self, data: bytes) -> None:
        self.carry_through(DIR_TO_CLIENT, data)

    def upstream_lost(self, reason: Failure) -> None:
        self._record_close(f"upstream closed: {reason.getErrorMessage()}")
        self._t.loseConnection()

    # -- both -----------------------------------------------------------------------------------

    def carry_through(self, direction: int, data: bytes) -> None:
        """Forward what arrived, then let the watching hooks see it (the bytes do not wait for them)."""
        session = self.session
        self.carry_out(session.forward(direction, data))
        if session.unwatched:
            commands = session.watch()
            if commands:  # only the recording asks for any
                self.carry_out(commands)

    def carry_out(self, commands: list[Command]) -> None:
        """Do what the session asked, in order."""
        for command in commands:
            if type(command) is Send:
                later = self._later.get(command.to)
                if later is not None and later.holding():
                    later.push(command.data)
                else:
                    self._write(command.to, command.data)
            elif type(command) is Record:
                recorder = self.proxy.recorder
                if recorder is not None:
                    recorder.frames(
                        self.conn_id,
                        self.client,
                        self.server,
                        command.direction,
                        command.frames,
                        command.flags,
                    )
            elif type(command) is Delay:
                later = self._later.get(command.to)
                if later is None:
                    later = self._later[command.to] = _Later(self.proxy.reactor, self._write, command.to)
                later.delay(command.seconds)
            elif type(command) is Close:
                self._close(command)

    def _write(self, to: int, data: bytes) -> None:
        if to == DIR_TO_CLIENT:
            _send(self._t, data)
        elif self.upstream is not None and self.upstream.transport is not None:
            _send(self.upstream._t, data)

    def _close(self, command: Close) -> None:
        self._record_close(command.reason)
        if command.abort:
            self._t.abortConnection()
        else:
            self._t.loseConnection()
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream._t.loseConnection()

    def _record_close(self, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        if self.proxy.recorder is not None and self.upstream is not None:
            self.proxy.recorder.connection_closed(self.conn_id, self.client, self.server, reason)


class _Later:
    """Bytes for one side held back by :class:`Delay` commands, sent in order when due."""

    def __init__(self, reactor: Any, write: Callable[[int, bytes], None], to: int) -> None:
        self.reactor = reactor
        self.write = write
        self.to = to
        self.not_before = 0.0
        self.queue: deque[tuple[float, bytes]] = deque()
        self.call: Any = None

    def holding(self) -> bool:
        return bool(self.queue) or self.reactor.seconds() < self.not_before

    def delay(self, seconds: float) -> None:
        self.not_before = max(self.not_before, self.reactor.seconds() + seconds)

    def push(self, data: bytes) -> None:
        self.queue.append((self.not_before, data))
        if self.call is None:
            self.call = self.reactor.callLater(max(0.0, self.not_before - self.reactor.seconds()), self._due)

    def _due(self) -> None:
        self.call = None
        now = self.reactor.seconds()
        queue = self.queue
        while queue and queue[0][0] <= now:
            self.write(self.to, queue.popleft()[1])
        if queue:
            self.call = self.reactor.callLater(queue[0][0] - now, self._due)

    def cancel(self) -> None:
        if self.call is not None and self.call.active():
            self.call.cancel()
        self.call = None
        self.queue.clear()


class _ListenerFactory(Factory):
    noisy = False

    def __init__(self, proxy: RecordingProxy, kind: str, targets: Sequence[Upstream]) -> None:
        self.proxy = proxy
        self.kind = kind
        self.targets = list(targets)
        self.listener = ""

    def buildProtocol(self, addr: IAddress | None) -> ProxiedConnection:
        return ProxiedConnection(self.proxy, self.kind, self.targets, self.listener)


class RecordingProxy:
    """Listens as a namesrv in front of ``namesrv_upstreams`` and opens a listener per broker it sees.

    ``advertise_host`` is the host written into rewritten answers (defaults to ``listen_host``, or
    127.0.0.1 when that is a wildcard). ``recorder`` is optional: without one the proxy only forwards.
    ``broker_port`` fixes the broker listeners' ports (brokers in order of first sight get P, P+4, ...,
    each with its VIP channel two below) for clients that reach the proxy through published ports; 0
    lets the OS pick.
    """

    def __init__(
        self,
        reactor: Any,
        namesrv_upstreams: Sequence[Upstream],
        *,
        listen_host: str = "127.0.0.1",
        advertise_host: str | None = None,
        recorder: Recorder | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        connect_timeout: float = 10.0,
        faults: FaultEngine | None = None,
        metrics: bool = False,
        broker_port: int = 0,
    ) -> None:
        if not namesrv_upstreams:
            raise ValueError("at least one upstream namesrv is needed")
        self.reactor = reactor
        self.namesrv_upstreams = list(namesrv_upstreams)
        self.listen_host = listen_host
        if advertise_host is None:
            advertise_host = "127.0.0.1" if listen_host in ("", "0.0.0.0", "::") else listen_host
        self.advertise_host = advertise_host
        self.recorder = recorder
        self.max_frame_size = max_frame_size
        self.connect_timeout = connect_timeout
        self._next_broker_port = broker_port
        self.rewriter = AddressRewriter(self.resolve, self.lookup)
        self.connections: set[ProxiedConnection] = set()
        self.ports: list[IListeningPort] = []
        self.broker_listeners: dict[tuple[str, str], str] = {}
        """(upstream address, kind) -> advertised address of the listener standing in for it."""
        self._ids = itertools.count(1)
        self.hook_factories: list[Callable[[ProxiedConnection], Hook | None]] = []
        """Per-connection hooks beyond rewriting and recording (faults), placed between the two."""
        self.faults = faults
        self.opened = 0
        self.metrics: ProxyMetrics | None = None
        if metrics:
            self.metrics = ProxyMetrics(self.open_connections, lambda: self.opened, self.capture_figures)
            if faults is not None:
                self.metrics.common.watch_faults(faults)
            proxy_metrics = self.metrics
            self.hook_factories.append(lambda conn: MetricsHook(proxy_metrics))
        if faults is not None:
            self.hook_factories.append(
                lambda conn: (
                    FaultHook(faults, str(conn.client), str(conn.targets[0]))
                    if conn.kind != KIND_HA
                    else None
                )
            )

    def next_conn_id(self) -> int:
        self.opened += 1
        return next(self._ids)

    def open_connections(self) -> list[tuple[str, int]]:
        """(listener kind, open client connections) for the metrics."""
        counts = {KIND_NAMESRV: 0, KIND_BROKER: 0, KIND_HA: 0}
        for conn in self.connections:
            counts[conn.kind] += 1
        return list(counts.items())

    def capture_figures(self) -> tuple[int, int, int, int] | None:
        """(records, frame bytes, early backlog writes, errors) of the capture, None without one."""
        if self.recorder is None:
            return None
        stats = self.recorder.stats
        return stats.frames, stats.bytes, stats.full_backlogs, int(self.recorder.error is not None)

    def new_session(self, conn: ProxiedConnection) -> ProxySession:
        """The session of a new connection, with this proxy's hooks (each hook factory may add one)."""
        hooks: list[Hook] = []
        if conn.kind == KIND_NAMESRV:
            hooks.append(RewriteHook(self.rewriter.rewrite_frame))
        elif conn.kind == KIND_BROKER:
            hooks.append(BrokerRewriteHook(self.rewriter.rewrite_broker_frame))
        for factory in self.hook_factories:
            hook = factory(conn)
            if hook is not None:
                hooks.append(hook)
        if self.recorder is not None:
            hooks.append(RecordHook())
        return ProxySession(hooks, framed=conn.kind != KIND_HA, max_frame_size=self.max_frame_size)

    def listen(self, port: int = 9876) -> IListeningPort:
        """Open the namesrv listener (port 0 picks a free one)."""
        factory = _RotatingNamesrvFactory(self, self.namesrv_upstreams)
        listening: IListeningPort = self.reactor.listenTCP(port, factory, interface=self.listen_host)
        factory.listener = self._advertised(listening)
        self.ports.append(listening)
        return listening

    def _advertised(self, port: IListeningPort) -> str:
        return f"{self.advertise_host}:{port.getHost().port}"  # type: ignore[attr-defined]

    def resolve(self, upstream_addr: str, kind: str) -> str | None:
        """The advertised address standing in for ``upstream_addr``; opens its listener on first sight."""
        key = (upstream_addr, kind)
        known = self.broker_listeners.get(key)
        if known is not None:
            return known
        if upstream_addr in {v for v in self.broker_listeners.values()}:
            return None  # already one of ours
        try:
            target = Upstream.parse(upstream_addr)
        except ValueError:
            return None
        factory = _ListenerFactory(self, kind, [target])
        listening = self._listen_broker(factory, target) if kind == KIND_BROKER else self._listen_any(factory)
        factory.listener = self._advertised(listening)
        self.broker_listeners[key] = factory.listener
        return factory.listener

    def lookup(self, upstream_addr: str) -> str | None:
        """The advertised address of the listener standing in for broker ``upstream_addr``, if any."""
        return self.broker_listeners.get((upstream_addr, KIND_BROKER))

    def _listen_any(self, factory: _ListenerFactory) -> IListeningPort:
        listening: IListeningPort = self.reactor.listenTCP(0, factory, interface=self.listen_host)
        self.ports.append(listening)
        return listening

    def _listen_broker(self, factory: _ListenerFactory, target: Upstream) -> IListeningPort:
        """A listener for the broker, and one two ports below it for the broker's VIP channel."""
        if target.port <= 2:
            return self._listen_any(factory)
        vip_factory = _ListenerFactory(self, KIND_BROKER, [Upstream(target.host, target.port - 2)])
        try:
            main, vip = listen_vip_pair(
                self.reactor, self._next_broker_port, factory, vip_factory, interface=self.listen_host
            )
        except CannotListenError:
            log.warn("no free port pair for {target}: its VIP channel is not proxied", target=str(target))
            return self._listen_any(factory)
        if self._next_broker_port:
            self._next_broker_port += 4
        vip_factory.listener = self._advertised(vip)
        self.ports += [main, vip]
        return main

    def stop(self, grace: float = 5.0) -> defer.Deferred[None]:
        """Stop listening, close every connection (waiting up to ``grace`` seconds for them to be
        gone, so their CLOSE records make it), then flush, fsync and close the capture."""
        waits = [defer.maybeDeferred(p.stopListening) for p in self.ports]
        self.ports.clear()
        for conn in list(self.connections):
            conn._t.loseConnection()
            if conn.upstream is not None and conn.upstream.transport is not None:
                conn.upstream._t.loseConnection()
        done: defer.Deferred[None] = defer.DeferredList(waits).addCallback(lambda _: None)
        deadline = self.reactor.seconds() + grace

        def drained(_: None) -> defer.Deferred[None] | None:
            if self.connections and self.reactor.seconds() < deadline:
                return task.deferLater(self.reactor, 0.05, lambda: None).addCallback(drained)
            return None

        done.addCallback(drained)
        if self.recorder is not None:
            recorder = self.recorder

            def close_capture(_: None) -> None:
                recorder.close()

            done.addCallback(close_capture)
        return done


class _RotatingNamesrvFactory(_ListenerFactory):
    """Namesrv listener: each new client starts at the next upstream namesrv, failing over in order."""

    def __init__(self, proxy: RecordingProxy, targets: Sequence[Upstream]) -> None:
        super().__init__(proxy, KIND_NAMESRV, targets)
        self._next = itertools.count()

    def buildProtocol(self, addr: IAddress | None) -> ProxiedConnection:
        n = next(self._next) % len(self.targets)
        return ProxiedConnection(self.proxy, self.kind, self.targets[n:] + self.targets[:n], self.listener)
