"""Sans-IO remoting connection: bytes in, events out, bytes to send drained by the caller.

Shaped like h2's ``H2Connection``: :meth:`RemotingConnection.receive_data` returns the events the bytes
caused, outbound frames accumulate until :meth:`RemotingConnection.data_to_send`, and time is always
an argument (no clock inside). One connection carries requests in both directions (the broker also
sends requests to clients), so both roles use the same class. Responses are matched to the requests
this side sent by ``opaque``, as in Java's ``NettyRemotingAbstract.responseTable``.

Any :class:`~rmqtwin.codec.errors.CodecError` raised by :meth:`receive_data` means the peer sent bytes
that cannot be decoded; like Java, the caller closes this connection (other connections are unaffected).
The frames that arrived before the bad one are still good, as Netty passes them on before the channel
closes: the error carries their events (:func:`events_before_error`), and a caller that wants them
handles them before closing::

    try:
        events = conn.receive_data(data)
    except CodecError as exc:
        handle(events_before_error(exc))
        close()
    else:
        handle(events)
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass

from rmqtwin.codec.command import (
    JsonDialect,
    RemotingCommand,
    decode_command,
    decode_command_steps,
    encode_command,
)
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.frame import (
    DEFAULT_MAX_FRAME_SIZE,
    ONEWAY_FLAG,
    RESPONSE_FLAG,
    FrameDecoder,
    header_length,
)

__all__ = [
    "DecodeInSteps",
    "Event",
    "RemotingConnection",
    "RequestFailed",
    "RequestReceived",
    "RequestTimedOut",
    "ResponseReceived",
    "SteppedEvent",
    "events_before_error",
]


@dataclass(frozen=True, slots=True)
class RequestReceived:
    """The peer sent a request; ``command.is_oneway`` tells whether it expects a response."""

    command: RemotingCommand


@dataclass(frozen=True, slots=True)
class ResponseReceived:
    """The peer answered; ``request`` is the pending request with that opaque, or None if there was none
    (already timed out, or never sent: Java logs and drops such a response)."""

    command: RemotingCommand
    request: RemotingCommand | None


@dataclass(frozen=True, slots=True)
class RequestTimedOut:
    """A request sent by this side got no response before its deadline; it is no longer pending."""

    request: RemotingCommand


@dataclass(frozen=True, slots=True)
class RequestFailed:
    """A pending request that can no longer be answered because the connection was lost."""

    request: RemotingCommand


@dataclass(slots=True)
class DecodeInSteps:
    """A frame whose header is too large to decode in one go without holding up everything else the
    caller serves. Call :meth:`step` (on later turns of the caller's loop) until it returns the
    command, then hand that to :meth:`RemotingConnection.frame_decoded`; the frames that arrived after
    this one wait in the connection until then, so order is kept. Always the last event of a batch."""

    steps: Generator[None, None, RemotingCommand]

    def step(self) -> RemotingCommand | None:
        """One bounded slice of the decoding: the command when done, else None."""
        try:
            next(self.steps)
        except StopIteration as done:
            command: RemotingCommand = done.value
            return command
        return None


Event = RequestReceived | ResponseReceived
"""What :meth:`RemotingConnection.receive_data` returns."""
SteppedEvent = RequestReceived | ResponseReceived | DecodeInSteps
"""What :meth:`RemotingConnection.receive_data_stepped` returns."""

_EVENTS_ATTR = "events"


def events_before_error(error: CodecError) -> list[Event]:
    """The events of the good frames that preceded ``error`` in the :meth:`RemotingConnection.receive_data`
    call that raised it, in order (empty for an error raised by anything else)."""
    events: list[Event] = getattr(error, _EVENTS_ATTR, [])
    return events


@dataclass(slots=True)
class _Pending:
    request: RemotingCommand
    deadline: float


class RemotingConnection:
    """State of one remoting connection, either side.

    ``json_dialect`` selects how JSON headers this side writes are escaped (fastjson 1 as in 4.9.x, or
    fastjson2 as in 5.4+); received headers of either dialect are read alike.
    """

    def __init__(
        self,
        *,
        json_dialect: JsonDialect = JsonDialect.FASTJSON1,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        first_opaque: int = 0,
    ) -> None:
        self._decoder = FrameDecoder(max_frame_size)
        self._error: CodecError | None = None
        self._held: deque[bytes] = deque()  # frames behind one being decoded in steps
        self._held_error: CodecError | None = None
        self._stepping = False
        self._header_limit: int | None = None
        self._dialect = json_dialect
        self._outbound: list[bytes] = []
        self._next_opaque = first_opaque
        self._pending: dict[int, _Pending] = {}
        self._deadlines: list[tuple[float, int]] = []  # heap of (deadline, opaque); stale entries skipped

    # --- inbound -----------------------------------------------------------------------------------

    def receive_data(self, data: bytes | bytearray | memoryview) -> list[Event]:
        """Feed bytes from the peer; return the requests and responses they complete, in order.

        Raises :class:`~rmqtwin.codec.errors.CodecError` on undecodable input, with the events of the
        frames before the bad one attached (:func:`events_before_error`; responses among them are no
        longer pending). Frames after the bad one are dropped. The connection is then poisoned: every
        later call raises the same error, with no events.
        """
        self._feed(data)
        events: list[Event] = []
        for event in self._release([], None):
            assert not isinstance(event, DecodeInSteps)  # only with a header limit
            events.append(event)
        return events

    def receive_data_stepped(
        self, data: bytes | bytearray | memoryview, header_bytes: int
    ) -> list[SteppedEvent]:
        """:meth:`receive_data`, except that a frame whose header is longer than ``header_bytes`` is
        handed back as a :class:`DecodeInSteps` (the last event) for the caller to decode bit by bit
        between other work; the frames after it wait here until :meth:`frame_decoded`."""
        self._feed(data)
        self._header_limit = header_bytes
        return self._release([], header_bytes)

    def _feed(self, data: bytes | bytearray | memoryview) -> None:
        """Split ``data`` into frames held for release; a poisoned connection raises its error again."""
        if self._error is not None:
            setattr(self._error, _EVENTS_ATTR, [])
            raise self._error
        frames, error = self._decoder.feed_until_error(data)
        self._held.extend(frames)
        if error is not None and self._held_error is None:
            self._held_error = error

    def frame_decoded(self, command: RemotingCommand) -> list[SteppedEvent]:
        """The command of a :class:`DecodeInSteps` frame: its event and those of the frames held behind
        it (raising as :meth:`receive_data` does if one of those is undecodable)."""
        self._stepping = False
        return self._release([self._event(command)], self._header_limit)

    def frame_failed(self, error: CodecError) -> None:
        """A :class:`DecodeInSteps` frame turned out undecodable: the connection is poisoned."""
        self._stepping = False
        self._held.clear()
        self._error = error

    def _release(self, events: list[SteppedEvent], header_limit: int | None) -> list[SteppedEvent]:
        if self._stepping:
            return events
        error = None
        try:
            while self._held:
                frame = self._held.popleft()
                if header_limit is not None and header_length(frame) > header_limit:
                    self._stepping = True
                    events.append(DecodeInSteps(decode_command_steps(frame)))
                    return events
                events.append(self._event(decode_command(frame)))
        except CodecError as exc:
            error = exc
        error = error or self._held_error
        if error is not None:
            self._held.clear()
            self._error = error
            setattr(error, _EVENTS_ATTR, events)
            raise error
        return events

    def _event(self, command: RemotingCommand) -> Event:
        if command.flag & RESPONSE_FLAG:
            pending = self._pending.pop(command.opaque, None)
            return ResponseReceived(command, pending.request if pending is not None else None)
        return RequestReceived(command)

    # --- outbound ----------------------------------------------------------------------------------

    def send_request(self, request: RemotingCommand, *, now: float, timeout: float) -> int:
        """Queue ``request`` with a fresh opaque (written into ``request.opaque``) and return it.

        Unless the request is oneway it stays pending until its response arrives or ``now + timeout``
        passes (see :meth:`expire`).
        """
        if request.flag & RESPONSE_FLAG:
            raise ValueError("send_request() got a response; use send_response()")
        opaque = self._next_opaque
        self._next_opaque = opaque + 1 if opaque < 0x7FFFFFFF else -0x80000000  # Java int wrap-around
        request.opaque = opaque
        if not request.flag & ONEWAY_FLAG:
            deadline = now + timeout
            self._pending[opaque] = _Pending(request, deadline)
            heapq.heappush(self._deadlines, (deadline, opaque))
        self._outbound.append(encode_command(request, self._dialect))
        return opaque

    def send_response(self, request: RemotingCommand, response: RemotingCommand) -> bool:
        """Queue ``response`` to ``request``: same opaque, response flag, the request's serialize type.

        Returns False (and queues nothing) when ``request`` was oneway: Java never answers those.
        """
        if request.flag & ONEWAY_FLAG:
            return False
        response.opaque = request.opaque
        response.flag |= RESPONSE_FLAG
        response.serialize_type = request.serialize_type
        self._outbound.append(encode_command(response, self._dialect))
        return True

    def send_raw(self, frame: bytes) -> None:
        """Queue already encoded bytes (a whole frame, e.g. replayed from a capture)."""
        self._outbound.append(bytes(frame))

    def data_to_send(self) -> bytes:
        """Everything queued since the last call; empty when there is nothing to write."""
        if not self._outbound:
            return b""
        data = b"".join(self._outbound)
        self._outbound.clear()
        return data

    # --- time --------------------------------------------------------------------------------------

    def expire(self, now: float) -> list[RequestTimedOut]:
        """Drop and return the pending requests whose deadline is at or before ``now``."""
        expired: list[RequestTimedOut] = []
        heap = self._deadlines
        while heap and heap[0][0] <= now:
            deadline, opaque = heapq.heappop(heap)
            pending = self._pending.get(opaque)
            if pending is not None and pending.deadline == deadline:
                del self._pending[opaque]
                expired.append(RequestTimedOut(pending.request))
        return expired

    def next_deadline(self) -> float | None:
        """When :meth:`expire` next has something to do, or None when nothing is pending."""
        heap = self._deadlines
        while heap:
            deadline, opaque = heap[0]
            pending = self._pending.get(opaque)
            if pending is not None and pending.deadline == deadline:
                return deadline
            heapq.heappop(heap)
        return None

    def connection_lost(self) -> list[RequestFailed]:
        """Fail every pending request (the transport is gone); the connection is then empty."""
        failed = [RequestFailed(p.request) for p in self._pending.values()]
        self._pending.clear()
        self._deadlines.clear()
        self._outbound.clear()
        return failed

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def pending_request(self, opaque: int) -> RemotingCommand | None:
        pending = self._pending.get(opaque)
        return pending.request if pending is not None else None
