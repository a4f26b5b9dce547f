"""Twisted glue: a thin protocol over the codec's sans-IO ``RemotingConnection``.

``RemotingProtocol`` feeds received bytes to the connection, hands requests to a
:class:`~rmqtwin.fakes.dispatch.Dispatcher`, matches responses to requests this side sent, and
writes whatever the connection queued once per read. A frame the codec cannot decode closes only
that connection, gracefully (FIN), as Netty's decoder failure does. The same class serves the name
server, the broker, and the broker's client connection to a name server.

Careless and hostile clients are bounded per connection, as Netty's pipeline bounds them:

- idle reaping: a server connection with no read or write for ``max_idle_seconds``
  (``serverChannelMaxIdleTimeSeconds``, 120 s) is closed, as the ``IdleStateHandler`` ALL_IDLE event;
- a client that does not read its answers: the protocol is its transport's streaming producer, so once
  more than ``WRITE_BUFFER_HIGH_WATER_MARK`` bytes wait to be sent the connection stops reading
  requests until the buffer has drained (Netty's ``writeBufferHighWaterMark``, 64 KiB). What one
  connection holds is then at most that mark plus the answers to one read's requests;
- a frame whose header is large (over ``STEPPED_HEADER_BYTES``) is decoded in slices on later reactor
  turns while its connection stops reading; the slices of all connections share one budget per turn
  (:class:`SteppedDecoding`), so however many clients send 15 MiB headers, the others wait for the
  reactor about that budget at most.
"""

from __future__ import annotations

import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred
from twisted.internet.interfaces import IDelayedCall, IReactorTime
from twisted.internet.protocol import Protocol, ServerFactory
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOProtocol
from twisted.python.failure import Failure

from rmqtwin.codec.codes import version_ordinal
from rmqtwin.codec.connection import (
    DecodeInSteps,
    RemotingConnection,
    RequestReceived,
    ResponseReceived,
    events_before_error,
)
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.proxy_protocol import Detection, ProxyProtocolError, decode_preamble, detect
from rmqtwin.fakes.config import ROCKETMQ_VERSIONS, SERVER_RELEASES

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.dispatch import RequestHandler

SERVER_VERSION = version_ordinal(SERVER_RELEASES[ROCKETMQ_VERSIONS[-1]])
"""The default line's ``version`` (``BrokerConfig.server_version`` is the emulated line's)."""
DEFAULT_MAX_IDLE_SECONDS = 120.0
"""``serverChannelMaxIdleTimeSeconds``' default in both real lines."""
WRITE_BUFFER_HIGH_WATER_MARK = 64 * 1024
"""Netty's default ``writeBufferHighWaterMark`` (RocketMQ leaves it unset)."""
STEPPED_HEADER_BYTES = 256 * 1024
"""Headers larger than this are decoded in slices (``decode_command_steps``) between other work."""
DECODE_SECONDS_PER_TURN = 0.002
"""How long the slices of large headers may run, all connections together, before the reactor serves
others again."""

log = Logger()


class RemotingTimeout(Exception):  # noqa: N818 (Java's RemotingTimeoutException)
    """No response to a request this side sent before its timeout."""


class ConnectionClosed(Exception):  # noqa: N818
    """The connection went away while a request was waiting for its response."""


@dataclass(slots=True)
class Traffic:
    """What a server's connections carried: plain counters moved on the reactor thread (one add per
    read or write), read by the twin's metrics when they are scraped."""

    opened: int = 0
    received: int = 0
    sent: int = 0


class RemotingProtocol(Protocol):
    """One remoting connection; implements :class:`~rmqtwin.fakes.dispatch.Channel`."""

    def __init__(
        self,
        dispatcher: RequestHandler | None,
        clock: IReactorTime,
        *,
        version: int = SERVER_VERSION,
        on_close: Callable[[RemotingProtocol], None] | None = None,
        max_idle_seconds: float | None = None,
        proxy_protocol: bool = False,
    ) -> None:
        self.dispatcher = dispatcher
        self.clock = clock
        self.version = version
        self.on_close = on_close
        self.conn = RemotingConnection()
        self.connected_flag = False
        self.max_idle_seconds = max_idle_seconds
        self._last_active = 0.0
        self._idle_timer: IDelayedCall | None = None
        self._paused: set[str] = set()  # why reading is paused: "write-buffer", "decoding"
        self._closing = False
        self._waiting: dict[int, tuple[Deferred[RemotingCommand], IDelayedCall]] = {}
        self._remote = "0.0.0.0:0"
        self._local = "0.0.0.0:0"
        # 5.x: the HandshakeHandler's HAProxy preamble detection still to run (bytes of a preamble
        # read so far), ``None`` once it is done or on a 4.9 server.
        self._preamble: bytes | None = b"" if proxy_protocol else None
        self._detection: Detection | None = None
        self.traffic = Traffic()
        """Counted bytes; a server's factory shares its own across its connections."""

    # -- Channel -------------------------------------------------------------------------------
    @property
    def remote_addr(self) -> str:
        return self._remote

    @property
    def local_addr(self) -> str:
        return self._local

    @property
    def is_active(self) -> bool:
        return self.connected_flag

    def send_response(self, request: RemotingCommand, response: RemotingCommand) -> None:
        if not self.connected_flag:
            return
        response.version = self.version
        if self.conn.send_response(request, response):
            self._flush()

    def send_oneway(self, request: RemotingCommand) -> None:
        if not self.connected_flag:
            return
        request.version = self.version
        self.conn.send_request(request, now=self.clock.seconds(), timeout=0)
        self._flush()

    def invoke(self, request: RemotingCommand, timeout: float) -> Deferred[RemotingCommand]:
        """Send a request and fire with its response (errback on timeout or connection loss)."""
        d: Deferred[RemotingCommand] = Deferred()
        if not self.connected_flag:
            d.errback(ConnectionClosed(self._remote))
            return d
        request.version = self.version
        opaque = self.conn.send_request(request, now=self.clock.seconds(), timeout=timeout)
        timer = self.clock.callLater(timeout, self._timed_out, opaque)
        self._waiting[opaque] = (d, timer)
        self._flush()
        return d

    def close(self) -> None:
        if self.transport is not None:
            self.transport.loseConnection()

    # -- IPushProducer: the transport pauses us when its write buffer passes its high-water mark --
    def pauseProducing(self) -> None:
        self._pause("write-buffer")

    def resumeProducing(self) -> None:
        self._resume("write-buffer")

    def stopProducing(self) -> None:
        self._paused.clear()

    def _pause(self, reason: str) -> None:
        if not self._paused and self.transport is not None:
            self.transport.pauseProducing()  # type: ignore[attr-defined]
        self._paused.add(reason)

    def _resume(self, reason: str) -> None:
        if reason not in self._paused:
            return
        self._paused.discard(reason)
        if not self._paused and self.transport is not None and not self._closing:
            self.transport.resumeProducing()  # type: ignore[attr-defined]

    # -- Protocol ------------------------------------------------------------------------------
    def connectionMade(self) -> None:
        self.connected_flag = True
        # Netty channels run with TCP_NODELAY; without it Nagle holds back back-to-back responses.
        set_no_delay = getattr(self.transport, "setTcpNoDelay", None)
        if set_no_delay is not None:
            set_no_delay(True)
        peer = self.transport.getPeer() if self.transport is not None else None
        host = self.transport.getHost() if self.transport is not None else None
        self._remote = _addr(peer)
        self._local = _addr(host)
        if self.transport is not None and not isinstance(self.transport, TLSMemoryBIOProtocol):
            # Plain TCP only: under TLS the TLS layer pauses its producer until the handshake is done,
            # and pausing our reading then would stall the handshake itself.
            self.transport.bufferSize = WRITE_BUFFER_HIGH_WATER_MARK  # type: ignore[attr-defined]
            self.transport.registerProducer(self, True)  # type: ignore[attr-defined]
        self._last_active = self.clock.seconds()
        if self.max_idle_seconds:
            self._idle_timer = self.clock.callLater(self.max_idle_seconds, self._idle_check)

    def dataReceived(self, data: bytes) -> None:
        self._last_active = self.clock.seconds()
        self.traffic.received += len(data)
        if self._closing:
            return
        if self._preamble is not None:
            data = self._read_preamble(data)
            if not data:
                return
        try:
            events = self.conn.receive_data_stepped(data, STEPPED_HEADER_BYTES)
        except CodecError as exc:
            self._undecodable(exc)
            return
        self._dispatch(events)
        self._flush()

    def _read_preamble(self, data: bytes) -> bytes:
        """5.x's HandshakeHandler: a first read under 12 bytes is dropped (Netty releases it); a PROXY
        v1/v2 preamble is consumed and its source becomes the client's address; the rest goes on."""
        assert self._preamble is not None
        if self._detection is None:
            detection = detect(data)
            if detection is Detection.NEEDS_MORE_DATA:
                return b""
            if detection is Detection.INVALID:
                self._preamble = None
                return data
            self._detection = detection
        buffered = self._preamble + data
        try:
            decoded = decode_preamble(buffered, self._detection)
        except ProxyProtocolError as exc:
            self._undecodable(exc)
            return b""
        if decoded is None:
            self._preamble = buffered
            return b""
        header, used = decoded
        self._preamble = None
        if header.client_addr is not None:
            self._remote = header.client_addr
        return buffered[used:]

    def _undecodable(self, exc: CodecError) -> None:
        # Frames that arrived whole before the broken one are served, as Netty would have; then the
        # channel is closed as Netty closes it (an orderly FIN, answers already written still sent).
        self._dispatch(events_before_error(exc))
        self._flush()
        log.warn("closing {peer}: undecodable frame ({error})", peer=self._remote, error=exc)
        self._closing = True
        self.close()

    def decoded_in_steps(self, command: RemotingCommand) -> None:
        """The large frame :class:`SteppedDecoding` finished: serve it and the frames behind it."""
        try:
            events = self.conn.frame_decoded(command)
        except CodecError as exc:
            self._undecodable(exc)
            return
        self._resume("decoding")
        self._dispatch(events)
        self._flush()

    def failed_in_steps(self, error: CodecError) -> None:
        self.conn.frame_failed(error)
        self._undecodable(error)

    def _dispatch(self, events: Sequence[object]) -> None:
        for event in events:
            if isinstance(event, DecodeInSteps):
                # Always the last event: the frames behind it wait in the connection, in order.
                self._pause("decoding")
                stepped_decoding(self.clock).add(self, event)
            elif isinstance(event, RequestReceived):
                self._handle_request(event.command)
            elif isinstance(event, ResponseReceived):
                waiting = self._waiting.pop(event.command.opaque, None)
                if waiting is not None:
                    d, timer = waiting
                    if timer.active():
                        timer.cancel()
                    d.callback(event.command)

    def connectionLost(self, reason: Failure | None = None) -> None:
        self.connected_flag = False
        if self._idle_timer is not None and self._idle_timer.active():
            self._idle_timer.cancel()
        self._idle_timer = None
        self.conn.connection_lost()
        waiting, self._waiting = self._waiting, {}
        for d, timer in waiting.values():
            if timer.active():
                timer.cancel()
            d.errback(ConnectionClosed(self._remote))
        if self.on_close is not None:
            self.on_close(self)

    # -- internals -------------------------------------------------------------------------------
    def _handle_request(self, request: RemotingCommand) -> None:
        if self.dispatcher is None:
            return
        result = self.dispatcher.dispatch(self, request)
        if isinstance(result, Deferred):
            result.addCallback(self._answer_later, request)
            result.addErrback(lambda f: log.failure("answering {code}", f, code=request.code))
        elif result is not None:
            result.version = self.version
            self.conn.send_response(request, result)

    def _answer_later(self, result: RemotingCommand | None, request: RemotingCommand) -> None:
        if result is not None:
            self.send_response(request, result)

    def _timed_out(self, opaque: int) -> None:
        waiting = self._waiting.pop(opaque, None)
        self.conn.expire(self.clock.seconds())
        if waiting is not None:
            waiting[0].errback(RemotingTimeout(f"wait response on {self._remote} timeout"))

    def _flush(self) -> None:
        data = self.conn.data_to_send()
        if data and self.transport is not None:
            self._last_active = self.clock.seconds()
            self.traffic.sent += len(data)
            self.transport.write(data)

    def _idle_check(self) -> None:
        """``IdleStateHandler(0, 0, maxIdle)``: close after ``max_idle_seconds`` without reads or writes
        (a connection still closing by then, its peer not reading, is aborted)."""
        assert self.max_idle_seconds
        idle = self.clock.seconds() - self._last_active
        if idle < self.max_idle_seconds and not self._closing:
            self._idle_timer = self.clock.callLater(self.max_idle_seconds - idle, self._idle_check)
            return
        self._idle_timer = None
        if self.transport is None:
            return
        if self._closing:
            self.transport.abortConnection()  # type: ignore[attr-defined]
            return
        log.info("closing {peer}: idle for {idle:.0f} s", peer=self._remote, idle=idle)
        self._closing = True
        self.close()
        self._idle_timer = self.clock.callLater(self.max_idle_seconds, self._idle_check)


class SteppedDecoding:
    """The large frames being decoded on one reactor, every connection's together.

    Each reactor turn runs slices round robin, one connection's after another's, until
    ``seconds_per_turn`` is spent, then gives the reactor back (a delayed call of 0 s: sockets are
    polled before it runs). The stall a turn causes is then bounded whatever the number of hostile
    connections; a per-connection turn would grow with them (four 15 MiB headers in 32 KiB slices
    held everyone else 25 ms a turn). A connection has at most one frame here and reads nothing
    meanwhile, so its order is kept. ``timer`` measures the budget (a fake one in tests).
    """

    def __init__(
        self,
        clock: IReactorTime,
        *,
        seconds_per_turn: float = DECODE_SECONDS_PER_TURN,
        timer: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.clock = clock
        self.seconds_per_turn = seconds_per_turn
        self.timer = timer
        self._queue: deque[tuple[RemotingProtocol, DecodeInSteps]] = deque()
        self._turn: IDelayedCall | None = None
        self.turns = 0
        """Reactor turns that ran slices (for tests and figures)."""

    def add(self, proto: RemotingProtocol, pending: DecodeInSteps) -> None:
        """Decode ``pending`` for ``proto`` on later turns (never on this one: its bytes just came in)."""
        self._queue.append((proto, pending))
        if self._turn is None:
            self._turn = self.clock.callLater(0, self._run)

    @property
    def pending(self) -> int:
        return len(self._queue)

    def _run(self) -> None:
        self._turn = None
        self.turns += 1
        queue = self._queue
        deadline = self.timer() + self.seconds_per_turn
        while queue:
            proto, pending = queue.popleft()
            if not proto.connected_flag:
                continue
            try:
                command = pending.step()
            except CodecError as exc:
                proto.failed_in_steps(exc)
            else:
                if command is None:
                    queue.append((proto, pending))
                else:
                    proto.decoded_in_steps(command)
            if self.timer() >= deadline:
                break
        if queue:
            self._turn = self.clock.callLater(0, self._run)


_stepped: weakref.WeakKeyDictionary[IReactorTime, SteppedDecoding] = weakref.WeakKeyDictionary()


def stepped_decoding(clock: IReactorTime) -> SteppedDecoding:
    """The one :class:`SteppedDecoding` of ``clock`` (the reactor, or a test's Clock)."""
    decoding = _stepped.get(clock)
    if decoding is None:
        decoding = _stepped[clock] = SteppedDecoding(clock)
    return decoding


def _addr(address: Any) -> str:
    host = getattr(address, "host", None)
    port = getattr(address, "port", None)
    if host is None or port is None:
        return "0.0.0.0:0"
    return f"{host}:{port}"


class RemotingServerFactory(ServerFactory):
    """Accepts connections for one server (name server or broker) and tracks them."""

    def __init__(
        self,
        dispatcher: RequestHandler,
        clock: IReactorTime,
        *,
        version: int = SERVER_VERSION,
        on_close: Callable[[RemotingProtocol], None] | None = None,
        max_idle_seconds: float | None = DEFAULT_MAX_IDLE_SECONDS,
        proxy_protocol: bool = False,
    ) -> None:
        self.dispatcher = dispatcher
        self.clock = clock
        self.version = version
        self.on_close_hook = on_close
        self.max_idle_seconds = max_idle_seconds
        self.proxy_protocol = proxy_protocol
        """5.x servers read an HAProxy PROXY preamble (always: 5.5.0 has no switch for it)."""
        self.channels: set[RemotingProtocol] = set()
        self.traffic = Traffic()

    def buildProtocol(self, addr: Any) -> RemotingProtocol:
        proto = RemotingProtocol(
            self.dispatcher,
            self.clock,
            version=self.version,
            on_close=self._closed,
            max_idle_seconds=self.max_idle_seconds,
            proxy_protocol=self.proxy_protocol,
        )
        proto.factory = self
        proto.traffic = self.traffic
        self.traffic.opened += 1
        self.channels.add(proto)
        return proto

    def _closed(self, proto: RemotingProtocol) -> None:
        self.channels.discard(proto)
        if self.on_close_hook is not None:
            self.on_close_hook(proto)
