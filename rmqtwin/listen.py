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
    reactor: Any, port: int, factory: Any, vip_factory: Any, *, interface: str = "", attempts: int = 50
) -> tuple[IListeningPort, IListeningPort]:
    """Listen on ``port`` with ``factory`` and on ``port - 2`` with ``vip_factory``.

    With ``port`` 0 the OS picks the main port and a pair whose lower port is taken is tried again
    elsewhere; a fixed ``port`` whose VIP port is taken raises :class:`CannotListenError`.
    """
    for _ in range(attempts):
        main: IListeningPort = reactor.listenTCP(port, factory, backlog=LISTEN_BACKLOG, interface=interface)
        actual = main.getHost().port  # type: ignore[attr-defined]
        if actual > 2:
            try:
                vip: IListeningPort = reactor.listenTCP(
                    actual - 2, vip_factory, backlog=LISTEN_BACKLOG, interface=interface
                )
            except CannotListenError:
                if port != 0:
                    main.stopListening()
                    raise
            else:
                return main, vip
        main.stopListening()
    raise CannotListenError(interface, port, OSError("no free port pair for a broker and its VIP channel"))
