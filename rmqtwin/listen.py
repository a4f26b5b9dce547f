"""Listening on a broker's port pair: its remoting port ``P`` and its VIP channel ``P - 2``.

RocketMQ brokers also listen two ports below their remoting port (the "fast" / VIP channel that
clients with ``vipChannelEnabled`` dial), so whatever stands in for a broker needs both ports.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.error import CannotListenError
from twisted.internet.interfaces import IListeningPort

__all__ = ["LISTEN_BACKLOG", "listen_vip_pair"]

LISTEN_BACKLOG = 1024
"""``SO_BACKLOG`` of RocketMQ's Netty servers (Twisted's default, 50, makes a burst of connects wait)."""


def listen_vip_pair(
    reactor: Any,
    port: int,
    factory: Any,
    vip_factory: Any,
    *,
    interface: str = "",
    attempts: int = 50,
    ha_factory: Any = None,
) -> tuple[IListeningPort, ...]:
    """Listen on ``port`` with ``factory`` and on ``port - 2`` with ``vip_factory`` (and on ``port + 1``,
    the default HA port, with ``ha_factory`` when given).

    With ``port`` 0 the OS picks the main port and a set whose other ports are taken is tried again
    elsewhere; a fixed ``port`` whose VIP (or HA) port is taken raises :class:`CannotListenError`.
    """
    for _ in range(attempts):
        main: IListeningPort = reactor.listenTCP(port, factory, backlog=LISTEN_BACKLOG, interface=interface)
        actual = main.getHost().port  # type: ignore[attr-defined]
        bound = [main]
        wanted = [(actual - 2, vip_factory)] + ([(actual + 1, ha_factory)] if ha_factory is not None else [])
        try:
            if actual <= 2:
                raise CannotListenError(interface, actual - 2, OSError("no VIP port below 3"))
            for extra_port, extra_factory in wanted:
                bound.append(
                    reactor.listenTCP(extra_port, extra_factory, backlog=LISTEN_BACKLOG, interface=interface)
                )
        except CannotListenError:
            for listening in bound:
                listening.stopListening()
            if port != 0:
                raise
            continue
        return tuple(bound)
    raise CannotListenError(interface, port, OSError("no free port pair for a broker and its VIP channel"))
