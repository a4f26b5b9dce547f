"""A scapy layer for the RocketMQ remoting protocol.

``RocketMQ`` dissects one frame (length word, header mark, header, body) and reassembles frames split
over TCP segments through scapy's ``TCPSession`` (``tcp_reassemble``); several frames in one segment
come out one after the other (``extract_padding``). Importing this module binds the layer to the
namesrv (9876), broker (10911) and broker VIP (10909) ports; :func:`bind_port` adds others, e.g. a
proxy's listeners::

    from scapy.all import sniff
    from scapy.sessions import TCPSession
    from rmqtwin.proxy.scapy_layer import RocketMQ, bind_port
    bind_port(41234)
    for pkt in sniff(offline="x.pcap", session=TCPSession, store=True):
        if RocketMQ in pkt:
            print(pkt[RocketMQ].summary())
"""

from __future__ import annotations

import struct
from typing import Any

from scapy.fields import BitField, IntField, StrLenField
from scapy.layers.inet import TCP
from scapy.packet import Packet, bind_bottom_up, bind_layers

from rmqtwin.proxy.wire import HeaderPeek, peek_header

__all__ = ["DEFAULT_PORTS", "RocketMQ", "bind_port"]

DEFAULT_PORTS = (9876, 10911, 10909)


class RocketMQ(Packet):
    name = "RocketMQ"
    fields_desc = [
        IntField("length", None),
        BitField("serialize_type", 0, 8),
        BitField("header_length", None, 24),
        StrLenField("header", b"", length_from=lambda pkt: pkt.header_length),
        StrLenField("body", b"", length_from=lambda pkt: max(0, pkt.length - 4 - pkt.header_length)),
    ]

    def post_build(self, pkt: bytes, pay: bytes) -> bytes:
        header_length = len(self.header)
        if self.header_length is None:
            pkt = pkt[:4] + struct.pack(">I", (self.serialize_type << 24) | header_length) + pkt[8:]
        if self.length is None:
            pkt = struct.pack(">I", len(pkt) - 4) + pkt[4:]
        return pkt + pay

    def extract_padding(self, s: bytes) -> tuple[bytes, bytes]:
        return b"", s

    def peek(self) -> HeaderPeek | None:
        """The decoded header (code, opaque, flag, extFields), via the proxy's header reader."""
        return peek_header(bytes(self))

    def mysummary(self) -> str:
        peek = self.peek()
        if peek is None:
            return f"RocketMQ {len(self.body)}B body (undecodable header)"
        kind = "response" if peek.is_response else "request"
        return f"RocketMQ {kind} code={peek.code} opaque={peek.opaque} body={len(self.body)}B"

    @classmethod
    def tcp_reassemble(cls, data: bytes, metadata: dict[str, Any], session: dict[str, Any]) -> Packet | None:
        """TCPSession hook: a packet once ``data`` holds at least one whole frame, else wait."""
        if len(data) < 4:
            return None
        length = struct.unpack_from(">I", data)[0]
        if len(data) >= length + 4:
            return cls(data)
        return None


def bind_port(port: int) -> None:
    """Dissect TCP traffic to or from ``port`` as RocketMQ remoting frames."""
    bind_bottom_up(TCP, RocketMQ, dport=port)
    bind_bottom_up(TCP, RocketMQ, sport=port)


for _port in DEFAULT_PORTS:
    bind_port(_port)
bind_layers(TCP, RocketMQ, dport=9876)
