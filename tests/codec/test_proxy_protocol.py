"""The HAProxy PROXY preamble as Netty's HAProxyMessageDecoder reads it for RocketMQ 5.x servers."""

from __future__ import annotations

import socket
import struct

import pytest

from rmqtwin.codec.proxy_protocol import (
    V2_SIGNATURE,
    Detection,
    ProxyHeader,
    ProxyProtocolError,
    decode_preamble,
    detect,
)


def v2(family: int = 0x11, command: int = 0x21, addresses: bytes | None = None) -> bytes:
    if addresses is None:
        addresses = (
            socket.inet_aton("10.1.2.3") + socket.inet_aton("10.1.2.4") + struct.pack(">HH", 5555, 10911)
        )
    return V2_SIGNATURE + bytes([command, family]) + struct.pack(">H", len(addresses)) + addresses


def test_detection_needs_twelve_bytes_and_knows_both_versions() -> None:
    assert detect(b"PROXY TCP4") is Detection.NEEDS_MORE_DATA
    assert detect(b"PROXY TCP4 1.2.3.4") is Detection.V1
    assert detect(v2()) is Detection.V2
    assert detect(struct.pack(">ii", 100, 20) + b"{}{}") is Detection.INVALID


def test_v1_gives_the_client_address_and_leaves_the_rest() -> None:
    data = b"PROXY TCP4 10.1.2.3 10.1.2.4 5555 10911\r\nframe"
    header, used = decode_preamble(data, Detection.V1) or (None, 0)
    assert header == ProxyHeader("10.1.2.3", 5555, "10.1.2.4", 10911)
    assert header.client_addr == "10.1.2.3:5555" and data[used:] == b"frame"
    unknown, used = decode_preamble(b"PROXY UNKNOWN\r\n", Detection.V1) or (None, 0)
    assert unknown is not None and unknown.client_addr is None and used == 15
    assert decode_preamble(b"PROXY TCP4 10.1.2.3 10.1.2.4 5", Detection.V1) is None  # more to come


@pytest.mark.parametrize(
    "line",
    [
        b"PROXY TCP4 10.1.2.3 10.1.2.4 5555\r\n",
        b"PROXY TCP4 ::1 ::1 1 2\r\n",
        b"PROXY TCP9 a b 1 2\r\n",
        b"PROXY " + b"x" * 120,
    ],
)
def test_v1_refuses_what_netty_refuses(line: bytes) -> None:
    with pytest.raises(ProxyProtocolError):
        decode_preamble(line, Detection.V1)


def test_v2_ipv4_ipv6_and_local() -> None:
    header, used = decode_preamble(v2() + b"rest", Detection.V2) or (None, 0)
    assert header is not None and header.client_addr == "10.1.2.3:5555" and used == 28
    six = socket.inet_pton(socket.AF_INET6, "2001:db8::1") + socket.inet_pton(socket.AF_INET6, "::1")
    header6, _ = decode_preamble(v2(0x21, addresses=six + struct.pack(">HH", 7, 8)), Detection.V2) or (
        None,
        0,
    )
    assert header6 is not None and header6.client_addr == "2001:db8::1:7"
    local, _ = decode_preamble(v2(command=0x20, addresses=b""), Detection.V2) or (None, 0)
    assert local is not None and local.client_addr is None
    assert decode_preamble(v2()[:20], Detection.V2) is None
    with pytest.raises(ProxyProtocolError):
        decode_preamble(v2(command=0x31), Detection.V2)


@pytest.mark.parametrize(
    ("family", "addresses", "message"),
    [
        (0x11, b"\x00" * 11, "incomplete IPv4 address information: 11 bytes"),
        (0x21, b"\x00" * 35, "incomplete IPv6 address information: 35 bytes"),
        (0x41, b"\x00" * 12, "invalid address family: 4"),
    ],
)
def test_v2_refuses_short_addresses_and_unknown_families(family: int, addresses: bytes, message: str) -> None:
    with pytest.raises(ProxyProtocolError, match=message):
        decode_preamble(v2(family, addresses=addresses), Detection.V2)
