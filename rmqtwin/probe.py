"""Readiness probe: ask a name server for a topic's route, blocking, with the codec.

A name server that answers a port is not yet useful; one that returns a route with a broker in it is.
The container healthchecks run ``python -m rmqtwin.probe HOST:PORT`` and the testcontainers wait
strategies call :func:`route_brokers`, so "healthy" means what a client needs. Its one blocking
request, :func:`invoke_sync`, serves the tools and tests that want one answer without a reactor.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Sequence

from rmqtwin.codec.bodies import TopicRouteData
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.codec.connection import RemotingConnection, ResponseReceived

__all__ = ["DEFAULT_TOPIC", "NoAnswerError", "invoke_sync", "route_brokers"]

DEFAULT_TOPIC = "TBW102"
"""The topic every broker with autoCreateTopicEnable registers: its route exists once a broker has."""


class NoAnswerError(ConnectionError):
    """The peer closed the connection before it answered."""


def invoke_sync(addr: str, request: RemotingCommand, timeout: float = 10.0) -> RemotingCommand:
    """``RemotingClient.invokeSync``: ``request`` over a fresh blocking connection to ``HOST:PORT``, and
    its answer. ``timeout`` bounds the whole exchange (TimeoutError); :class:`NoAnswerError` when the peer
    closes first; other OSErrors as the socket raises them, CodecError for an answer that is not one."""
    host, _, port = addr.rpartition(":")
    conn = RemotingConnection()
    conn.send_request(request, now=0.0, timeout=timeout)
    deadline = time.monotonic() + timeout
    with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as sock:
        sock.sendall(conn.data_to_send())
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{addr} did not answer request code {request.code} in {timeout} s")
            sock.settimeout(left)
            data = sock.recv(65536)
            if not data:
                raise NoAnswerError(
                    f"{addr} closed the connection before answering request code {request.code}"
                )
            for event in conn.receive_data(data):
                if isinstance(event, ResponseReceived):
                    return event.command


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
