"""Sans-IO HA replication protocol (Java ``DefaultHAService`` / ``HAConnection`` / ``DefaultHAClient``).

The master/slave commitlog replication of Apache RocketMQ 4.9.x and 5.x's default (non
auto-switch) HA, a plain TCP stream on the master's ``haListenPort`` with no remoting frames:

- slave -> master: 8-byte big-endian longs, each the slave's max commitlog offset (the first one
  is where the master starts transferring; later ones acknowledge what arrived);
- master -> slave: transfers ``int64 offset`` + ``int32 bodySize`` + ``bodySize`` commitlog bytes
  starting at ``offset``; a transfer with an empty body is the heartbeat sent when idle.

No sockets or clocks here: feed bytes in, get events out; the encoders give bytes to send.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

REPORT_HEADER_SIZE = 8
"""``DefaultHAClient.REPORT_HEADER_SIZE``: one slave offset report."""
TRANSFER_HEADER_SIZE = 12
"""``DefaultHAConnection.TRANSFER_HEADER_SIZE``: offset (8) + body size (4)."""
HA_TRANSFER_BATCH_SIZE = 32 * 1024
"""``haTransferBatchSize``: the most commitlog bytes one transfer carries."""
READ_MAX_BUFFER_SIZE = 4 * 1024 * 1024
"""``DefaultHAClient.READ_MAX_BUFFER_SIZE``: a transfer body larger than this cannot be read by a
Java slave, so the decoder refuses one (a stream that is not HA at all, say)."""

_REPORT = struct.Struct(">q")
_TRANSFER = struct.Struct(">qi")


class HAProtocolError(ValueError):
    """The peer sent bytes no HA peer sends; the connection is closed, as Java's threads do."""


@dataclass(frozen=True)
class SlaveOffsetReported:
    """The slave's max commitlog offset (``slaveAckOffset``; the first is ``slaveRequestOffset``)."""

    offset: int


@dataclass(frozen=True)
class TransferReceived:
    """Commitlog bytes from ``master_offset`` (empty for a heartbeat)."""

    master_offset: int
    body: bytes

    @property
    def heartbeat(self) -> bool:
        return not self.body


def encode_report(offset: int) -> bytes:
    """What ``reportSlaveMaxOffset`` writes."""
    return _REPORT.pack(offset)


def encode_transfer(offset: int, body: bytes | memoryview = b"") -> bytes:
    """One transfer as ``WriteSocketService`` writes it: header then body (no body: a heartbeat)."""
    return _TRANSFER.pack(offset, len(body)) + bytes(body)


class ReportDecoder:
    """The master's side: a byte stream of slave offset reports (``ReadSocketService``)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[SlaveOffsetReported]:
        buf = self._buffer
        buf += data
        whole = len(buf) - len(buf) % REPORT_HEADER_SIZE
        events = [SlaveOffsetReported(_REPORT.unpack_from(buf, pos)[0]) for pos in range(0, whole, 8)]
        del buf[:whole]
        return events


class TransferDecoder:
    """The slave's side: a byte stream of transfers (``DefaultHAClient.dispatchReadRequest``)."""

    def __init__(self, max_body: int = READ_MAX_BUFFER_SIZE) -> None:
        self._buffer = bytearray()
        self.max_body = max_body

    def feed(self, data: bytes) -> list[TransferReceived]:
        buf = self._buffer
        buf += data
        events: list[TransferReceived] = []
        pos = 0
        while len(buf) - pos >= TRANSFER_HEADER_SIZE:
            offset, size = _TRANSFER.unpack_from(buf, pos)
            if size < 0 or size > self.max_body or offset < 0:
                raise HAProtocolError(f"not an HA transfer: offset {offset}, body size {size}")
            end = pos + TRANSFER_HEADER_SIZE + size
            if len(buf) < end:
                break
            events.append(TransferReceived(offset, bytes(buf[pos + TRANSFER_HEADER_SIZE : end])))
            pos = end
        del buf[:pos]
        return events
