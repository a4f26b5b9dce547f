"""The HA replication wire format (``codec/ha.py``), fed whole and a byte at a time."""

from __future__ import annotations

import struct

import pytest

from rmqtwin.codec.ha import (
    HAProtocolError,
    ReportDecoder,
    SlaveOffsetReported,
    TransferDecoder,
    TransferReceived,
    encode_report,
    encode_transfer,
)


def test_report_is_one_big_endian_long() -> None:
    assert encode_report(0x0102030405060708) == bytes(range(1, 9))


def test_transfer_header_is_offset_then_body_size() -> None:
    data = encode_transfer(1 << 33, b"abc")
    assert data == struct.pack(">qi", 1 << 33, 3) + b"abc"
    assert encode_transfer(7) == struct.pack(">qi", 7, 0)  # the heartbeat


def test_reports_arrive_in_any_slices() -> None:
    stream = encode_report(5) + encode_report(1 << 40) + encode_report(0)
    decoder = ReportDecoder()
    events = [e for i in range(len(stream)) for e in decoder.feed(stream[i : i + 1])]
    assert events == [SlaveOffsetReported(5), SlaveOffsetReported(1 << 40), SlaveOffsetReported(0)]
    assert ReportDecoder().feed(stream) == events


def test_transfers_and_heartbeats_arrive_in_any_slices() -> None:
    stream = encode_transfer(0, b"x" * 100) + encode_transfer(100) + encode_transfer(100, b"yz")
    expected = [TransferReceived(0, b"x" * 100), TransferReceived(100, b""), TransferReceived(100, b"yz")]
    decoder = TransferDecoder()
    assert [e for i in range(len(stream)) for e in decoder.feed(stream[i : i + 1])] == expected
    assert TransferDecoder().feed(stream) == expected
    assert expected[1].heartbeat and not expected[0].heartbeat


@pytest.mark.parametrize("header", [struct.pack(">qi", 0, -1), struct.pack(">qi", -5, 0), b"GET / HTTP/1"])
def test_a_stream_that_is_no_ha_transfer_is_refused(header: bytes) -> None:
    with pytest.raises(HAProtocolError):
        TransferDecoder().feed(header)
