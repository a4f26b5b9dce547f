"""The HAProxy PROXY protocol preamble (v1 text, v2 binary), as RocketMQ 5.x servers read it.

5.x's ``NettyRemotingServer.HandshakeHandler`` runs Netty's ``HAProxyMessageDecoder.detectProtocol``
on the first read of every connection: fewer than 12 bytes is "needs more data" and the handler
returns, so Netty releases that read (those bytes are gone); the v2 signature or ``PROXY`` starts a
preamble, decoded before the remoting frames and taken as the client's address; anything else is
handed on untouched. 4.9.x has no such step. Sans-IO: bytes in, a :class:`ProxyHeader` out.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass
from enum import Enum

from rmqtwin.codec.errors import CodecError

__all__ = [
    "DETECT_BYTES",
    "Detection",
    "ProxyHeader",
    "ProxyProtocolError",
    "decode_preamble",
    "detect",
]

V2_SIGNATURE = b"\r\n\r\n\x00\r\nQUIT\n"
V1_PREFIX = b"PROXY"
DETECT_BYTES = 12
"""``HAProxyMessageDecoder.detectProtocol`` decides on the first 12 bytes (the v2 signature's length)."""
V1_MAX_LENGTH = 108
"""A v1 line, ``\\r\\n`` included, is at most 107 bytes (Netty: more than 108 fails)."""


class ProxyProtocolError(CodecError):
    """A preamble Netty's decoder refuses (the server closes the connection)."""


class Detection(Enum):
    NEEDS_MORE_DATA = "needs-more-data"
    V1 = "v1"
    V2 = "v2"
    INVALID = "invalid"  # not a preamble: the bytes are remoting frames


def detect(data: bytes) -> Detection:
    """What ``detectProtocol`` says of the first read."""
    if len(data) < DETECT_BYTES:
        return Detection.NEEDS_MORE_DATA
    if data.startswith(V2_SIGNATURE):
        return Detection.V2
    if data.startswith(V1_PREFIX):
        return Detection.V1
    return Detection.INVALID


@dataclass(frozen=True, slots=True)
class ProxyHeader:
    """The addresses a preamble carries (``None`` for ``UNKNOWN`` / ``LOCAL`` / unspecified)."""

    source_address: str | None
    source_port: int | None
    destination_address: str | None = None
    destination_port: int | None = None

    @property
    def client_addr(self) -> str | None:
        """5.x ``RemotingHelper.parseChannelRemoteAddr``: ``address:port`` when the preamble has both."""
        if not self.source_address or self.source_port is None:
            return None
        return f"{self.source_address}:{self.source_port}"


def decode_preamble(data: bytes, detection: Detection) -> tuple[ProxyHeader, int] | None:
    """The preamble at the start of ``data`` and its length, or ``None`` until it is all there."""
    if detection is Detection.V1:
        return _decode_v1(data)
    if detection is Detection.V2:
        return _decode_v2(data)
    raise ValueError(f"no preamble to decode: {detection}")


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ProxyProtocolError(f"invalid port: {text!r}")
    return int(text)


def _address(text: str, version: int) -> str:
    try:
        parsed = ipaddress.ip_address(text)
    except ValueError:
        raise ProxyProtocolError(f"invalid IPv{version} address: {text!r}") from None
    if parsed.version != version:
        raise ProxyProtocolError(f"invalid IPv{version} address: {text!r}")
    return text


def _decode_v1(data: bytes) -> tuple[ProxyHeader, int] | None:
    end = data.find(b"\r\n", 0, V1_MAX_LENGTH)
    if end < 0:
        if len(data) >= V1_MAX_LENGTH:
            raise ProxyProtocolError(f"header length exceeds the allowed maximum ({V1_MAX_LENGTH})")
        return None
    try:
        line = data[:end].decode("ascii")
    except UnicodeDecodeError:
        raise ProxyProtocolError("v1 header is not ASCII") from None
    parts = line.split(" ")
    if parts[0] != "PROXY" or len(parts) < 2:
        raise ProxyProtocolError(f"invalid header: {line!r}")
    if parts[1] == "UNKNOWN":
        return ProxyHeader(None, None), end + 2
    if parts[1] not in ("TCP4", "TCP6") or len(parts) != 6:
        raise ProxyProtocolError(f"invalid header: {line!r}")
    version = 4 if parts[1] == "TCP4" else 6
    header = ProxyHeader(
        _address(parts[2], version), _port(parts[4]), _address(parts[3], version), _port(parts[5])
    )
    return header, end + 2


_V2_FAMILIES: dict[int, tuple[str, int, type[ipaddress.IPv4Address] | type[ipaddress.IPv6Address]]] = {
    1: ("IPv4", 4, ipaddress.IPv4Address),  # AF_INET
    2: ("IPv6", 16, ipaddress.IPv6Address),  # AF_INET6
}
"""v2 address families with IP addresses: (name, address size, address class)."""


def _decode_v2(data: bytes) -> tuple[ProxyHeader, int] | None:
    if len(data) < 16:
        return None
    ver_cmd, family, length = struct.unpack_from(">BBH", data, 12)
    total = 16 + length
    if len(data) < total:
        return None
    if ver_cmd >> 4 != 2:
        raise ProxyProtocolError(f"invalid version: {ver_cmd >> 4}")
    command = ver_cmd & 0x0F
    if command not in (0, 1):
        raise ProxyProtocolError(f"invalid command: {command}")
    if command == 0 or family >> 4 in (0, 3):  # LOCAL, or AF_UNSPEC / AF_UNIX: no IP addresses
        return ProxyHeader(None, None), total
    address_family = _V2_FAMILIES.get(family >> 4)
    if address_family is None:
        raise ProxyProtocolError(f"invalid address family: {family >> 4}")
    name, size, address_class = address_family
    if length < 2 * size + 4:
        raise ProxyProtocolError(f"incomplete {name} address information: {length} bytes")
    src, dst = data[16 : 16 + size], data[16 + size : 16 + 2 * size]
    sport, dport = struct.unpack_from(">HH", data, 16 + 2 * size)
    return ProxyHeader(str(address_class(src)), sport, str(address_class(dst)), dport), total
