"""Hosts in records, offset msgIds (``createMessageId``) and UNIQ_KEY (``MessageClientIDSetter``)."""

from __future__ import annotations

import os
import random
import socket
import struct
import time
from collections.abc import Callable
from datetime import datetime, tzinfo
from functools import lru_cache
from typing import NamedTuple

from rmqtwin.codec.errors import MessageEncodeError, MessageIdError
from rmqtwin.codec.java import java_int
from rmqtwin.codec.message.constants import (
    Host,
)

__all__ = [
    "UniqId",
    "UniqIdGenerator",
    "create_offset_msg_id",
    "create_uniq_id",
    "decode_offset_msg_id",
    "parse_uniq_id",
    "uniq_id_nearly_time",
]

# --------------------------------------------------------------------------------------------------
# Hosts and msgIds


@lru_cache(maxsize=1024)
def _host_bytes(host: Host) -> bytes:
    """Address + port as ``MessageExt.socketAddress2ByteBuffer`` writes them (8 or 20 bytes).

    Cached: a broker sees a handful of hosts, and every record and offset msgId needs theirs."""
    address, port = host
    try:
        if ":" in address:
            raw = socket.inet_pton(socket.AF_INET6, address)
        else:
            raw = (
                socket.inet_aton(address)
                if address.count(".") == 3
                else socket.inet_pton(socket.AF_INET, address)
            )
    except OSError:
        raise MessageEncodeError(f"not an IP address: {address!r}") from None
    return raw + struct.pack(">i", port)


def _host_from_bytes(raw: bytes | memoryview) -> str:
    if len(raw) == 4:
        return socket.inet_ntoa(raw)
    return socket.inet_ntop(socket.AF_INET6, raw)


def create_offset_msg_id(store_host: Host, commitlog_offset: int) -> str:
    """``MessageDecoder.createMessageId``: uppercase hex of store IP + port + commitlog offset.

    32 hex chars for an IPv4 store host, 56 for IPv6.
    """
    return (_host_bytes(store_host) + struct.pack(">q", commitlog_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[str, int, int]:
    """``MessageDecoder.decodeMessageId``: ``(host, port, commitlog offset)``; IPv4 iff 32 chars long."""
    if len(msg_id) not in (32, 56):
        raise MessageIdError(f"offset msgId must have 32 or 56 hex chars, got {len(msg_id)}: {msg_id!r}")
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError:
        raw = b""
    if len(raw) * 2 != len(msg_id):  # fromhex skips whitespace: 32 spaces would be no bytes at all
        raise MessageIdError(f"offset msgId is not hex: {msg_id!r}")
    ip_len = 4 if len(raw) == 16 else 16
    port, offset = struct.unpack_from(">iq", raw, ip_len)
    if not 0 <= port <= 0xFFFF:  # InetSocketAddress refuses it: "port out of range"
        raise MessageIdError(f"offset msgId has port out of range: {port}: {msg_id!r}")
    return _host_from_bytes(raw[:ip_len]), port, offset


# --------------------------------------------------------------------------------------------------
# UNIQ_KEY (MessageClientIDSetter)


class UniqId(NamedTuple):
    """The parts of a ``UNIQ_KEY``: ``ip + pid(u16) + classLoaderHash(i32) + msSinceMonthStart + counter``."""

    ip: str
    pid: int
    class_loader_hash: int
    time_since_month_start: int
    counter: int


def _month_start_ms(timestamp_ms: int, tz: tzinfo | None) -> tuple[int, int]:
    """Start of the month containing ``timestamp_ms`` and of the next one, in ``tz`` (None = local time).

    ``Calendar.getInstance()`` uses the JVM's default time zone; pass the same zone for the same ids.
    """
    moment = datetime.fromtimestamp(timestamp_ms / 1000, tz)
    start = moment.replace(day=1, hour=0, minute=0, second=0, microsecond=0)
    nxt = (
        start.replace(year=start.year + 1, month=1)
        if start.month == 12
        else start.replace(month=start.month + 1)
    )
    return int(start.timestamp() * 1000), int(nxt.timestamp() * 1000)


def _ip_bytes(ip: str | bytes) -> bytes:
    if isinstance(ip, bytes):
        if len(ip) not in (4, 16):
            raise ValueError("ip must be 4 or 16 bytes")
        return ip
    return socket.inet_pton(socket.AF_INET6 if ":" in ip else socket.AF_INET, ip)


def create_uniq_id(
    *,
    ip: str | bytes,
    pid: int,
    class_loader_hash: int,
    timestamp_ms: int,
    counter: int,
    month_start_ms: int | None = None,
    tz: tzinfo | None = None,
) -> str:
    """``MessageClientIDSetter.createUniqID`` for given inputs: 32 hex chars (56 with an IPv6 ip).

    ``month_start_ms`` defaults to the start of ``timestamp_ms``'s month in ``tz`` (local time when None,
    like Java's ``Calendar``). The time field is ``(int)(now - monthStart)`` with small negative values
    (NTP steps back under 1000 s) clamped to 0; the counter keeps its low 16 bits.
    """
    if month_start_ms is None:
        month_start_ms, _ = _month_start_ms(timestamp_ms, tz)
    diff = java_int(timestamp_ms - month_start_ms)
    if -1_000_000 < diff < 0:
        diff = 0
    raw = _ip_bytes(ip) + struct.pack(">Hii", pid & 0xFFFF, java_int(class_loader_hash), diff)
    return raw.hex().upper() + f"{counter & 0xFFFF:04X}"


def parse_uniq_id(uniq_id: str) -> UniqId:
    """Split a ``UNIQ_KEY`` into its parts (``getIPStrFromID``, ``getPidFromID`` and friends)."""
    if len(uniq_id) not in (32, 56):
        raise MessageIdError(f"UNIQ_KEY must have 32 or 56 hex chars, got {len(uniq_id)}: {uniq_id!r}")
    try:
        raw = bytes.fromhex(uniq_id)
    except ValueError:
        raise MessageIdError(f"UNIQ_KEY is not hex: {uniq_id!r}") from None
    ip_len = 16 if len(raw) == 28 else 4
    pid, loader, span, counter = struct.unpack_from(">HiIH", raw, ip_len)
    return UniqId(_host_from_bytes(raw[:ip_len]), pid, loader, span, counter)


def uniq_id_nearly_time(uniq_id: str, now_ms: int, tz: tzinfo | None = None) -> int:
    """``MessageClientIDSetter.getNearlyTimeFromID``: when the id was made, in ms, as seen at ``now_ms``.

    The id stores only ms since its month started: if that lands at or after ``now_ms`` in the current
    month, the id is taken to be from the previous month.
    """
    span = parse_uniq_id(uniq_id).time_since_month_start
    month_start, _ = _month_start_ms(now_ms, tz)
    if month_start + span >= now_ms:
        previous = datetime.fromtimestamp(month_start / 1000 - 1, tz)
        month_start, _ = _month_start_ms(int(previous.timestamp() * 1000), tz)
    return month_start + span


class UniqIdGenerator:
    """A stateful ``MessageClientIDSetter``: fixed ip/pid/loader prefix, a month start, a counter.

    Every input can be pinned for deterministic ids; ``clock`` returns ms since the epoch.
    """

    def __init__(
        self,
        *,
        ip: str | bytes = "127.0.0.1",
        pid: int | None = None,
        class_loader_hash: int | None = None,
        clock: Callable[[], int] | None = None,
        tz: tzinfo | None = None,
        counter: int = 0,
    ) -> None:
        self._ip = _ip_bytes(ip)
        self._pid = os.getpid() if pid is None else pid
        self._loader = random.getrandbits(31) if class_loader_hash is None else class_loader_hash
        self._clock = clock or (lambda: time.time_ns() // 1_000_000)
        self._tz = tz
        self._counter = counter
        self._start, self._next_start = _month_start_ms(self._clock(), tz)

    def __call__(self) -> str:
        now = self._clock()
        if now >= self._next_start:
            self._start, self._next_start = _month_start_ms(now, self._tz)
        counter = self._counter
        self._counter = (counter + 1) & 0xFFFFFFFF
        return create_uniq_id(
            ip=self._ip,
            pid=self._pid,
            class_loader_hash=self._loader,
            timestamp_ms=now,
            counter=counter,
            month_start_ms=self._start,
        )
