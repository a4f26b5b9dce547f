"""Readiness probe: ask a name server for a topic's route, blocking, with the codec.

A name server that answers a port is not yet useful; one that returns a route with a broker in it is.
The container healthchecks run ``python -m rmqtwin.probe HOST:PORT`` and the testcontainers wait
strategies call :func:`route_brokers`, so "healthy" means what a client needs. Its blocking
connection, :class:`BlockingChannel` (and :func:`invoke_sync`, one request on a fresh one), serves the
tools, benchmarks and tests that want answers without a reactor.
"""

from __future__ import annotations

import socket
import sys
import time
from collections import deque
from collections.abc import Sequence
from types import TracebackType
from typing import Self

from rmqtwin.codec.bodies import TopicRouteData
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.codec.connection import Event, RemotingConnection, ResponseReceived

__all__ = ["DEFAULT_TOPIC", "BlockingChannel", "NoAnswerError", "invoke_sync", "route_brokers"]

DEFAULT_TOPIC = "TBW102"
"""The topic every broker with autoCreateTopicEnable registers: its route exists once a broker has."""


class NoAnswerError(ConnectionError):
    """The peer closed the connection before it answered."""


class BlockingChannel:
    """One blocking connection to ``HOST:PORT`` (TCP_NODELAY) through the codec: :meth:`invoke` is
    ``RemotingClient.invokeSync`` (a request, then its answer); :meth:`write` and :meth:`read` put bytes
    built elsewhere on the wire (a hostile frame, a frame with a chosen opaque) and take the peer's next
    command. ``timeout`` bounds the connect and each call (TimeoutError); :class:`NoAnswerError` when the
    peer closes first; other OSErrors as the socket raises them, CodecError for bytes that are no command.
    """

    def __init__(self, addr: str, timeout: float = 10.0) -> None:
        host, _, port = addr.rpartition(":")
        self.addr = addr
        self.timeout = timeout
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as Netty's client sets it
        self._conn = RemotingConnection()
        self._events: deque[Event] = deque()

    def invoke(self, request: RemotingCommand) -> RemotingCommand:
        """``request``'s answer (other commands the peer sends meanwhile are passed over)."""
        deadline = time.monotonic() + self.timeout
        opaque = self._conn.send_request(request, now=0.0, timeout=self.timeout)
        self.sock.sendall(self._conn.data_to_send())
        while True:
            event = self._next_event(deadline, f"request code {request.code}")
            if isinstance(event, ResponseReceived) and event.command.opaque == opaque:
                return event.command

    def write(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read(self) -> RemotingCommand:
        """The next command the peer sends: an answer, or a request of its own."""
        return self._next_event(time.monotonic() + self.timeout, "a command").command

    def _next_event(self, deadline: float, awaited: str) -> Event:
        while not self._events:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.addr} did not answer {awaited} in {self.timeout} s")
            self.sock.settimeout(left)
            data = self.sock.recv(65536)
            if not data:
                raise NoAnswerError(f"{self.addr} closed the connection before answering {awaited}")
            self._events.extend(self._conn.receive_data(data))
        return self._events.popleft()

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def invoke_sync(addr: str, request: RemotingCommand, timeout: float = 10.0) -> RemotingCommand:
    """``request`` over a fresh :class:`BlockingChannel` to ``HOST:PORT``, and its answer."""
    with BlockingChannel(addr, timeout) as channel:
        return channel.invoke(request)


def route_brokers(namesrv_addr: str, topic: str = DEFAULT_TOPIC, timeout: float = 3.0) -> list[str]:
    """The broker addresses (master first) the name server routes ``topic`` to; [] without a route.

    Raises OSError when the name server cannot be reached or closes the connection.
    """
    request = create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    response = invoke_sync(namesrv_addr, request, timeout)
    if response.code != ResponseCode.SUCCESS or not response.body:
        return []
    brokers = TopicRouteData.decode(response.body).broker_datas
    return [addr for broker in brokers for _, addr in sorted(broker.broker_addrs.items())]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m rmqtwin.probe NAMESRV [TOPIC]``: exit 0 when the topic has a broker route."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        print("usage: python -m rmqtwin.probe HOST:PORT [TOPIC]", file=sys.stderr)
        return 2
    try:
        brokers = route_brokers(args[0], args[1] if len(args) > 1 else DEFAULT_TOPIC)
    except (OSError, ValueError) as exc:
        print(f"{args[0]}: {exc}", file=sys.stderr)
        return 1
    if not brokers:
        print(f"{args[0]}: no route yet", file=sys.stderr)
        return 1
    print(" ".join(brokers))
    return 0


if __name__ == "__main__":
    sys.exit(main())
