from __future__ import annotations

import struct

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqtwin.codec.frame import FrameSplitter
from rmqtwin.proxy.wire import (
    HeadFields,
    mask_credentials,
    peek_header,
    peek_summary,
    read_head,
)
from tests.proxy.frames import binary_frame, json_frame

# protocol.md §1.4: GET_ROUTEINFO_BY_TOPIC "T", opaque 1, version 409, ROCKETMQ header.
SHEET_BINARY = bytes.fromhex(
    "000000250100002100690001990000000100000000000000000000000c0005746f7069630000000154"
)


def test_peek_json_header_from_protocol_sheet() -> None:
    header = (
        b'{"code":105,"extFields":{"topic":"T"},"flag":0,"language":"JAVA","opaque":1,'
        b'"serializeTypeCurrentRPC":"JSON","version":409}'
    )
    frame = struct.pack(">II", 4 + len(header), len(header)) + header
    assert frame[:8] == bytes.fromhex("0000007f0000007b")
    peek = peek_header(frame)
    assert peek is not None
    assert (peek.serialize_type, peek.code, peek.opaque, peek.flag) == (0, 105, 1, 0)
    assert peek.ext_fields == {"topic": "T"}


def test_peek_binary_header_from_protocol_sheet() -> None:
    peek = peek_header(SHEET_BINARY)
    assert peek is not None
    assert (peek.serialize_type, peek.code, peek.opaque, peek.flag, peek.version) == (1, 105, 1, 0, 409)
    assert peek.ext_fields == {"topic": "T"}
    assert binary_frame(105, 1, ext={"topic": "T"}) == SHEET_BINARY


def test_peek_rejects_garbage_and_wrong_lengths() -> None:
    assert peek_header(b"\x00\x00\x00\x04\x00\x00\x00\x00") is None  # empty JSON header
    assert peek_header(struct.pack(">II", 8, 4) + b"{bad") is None
    frame = json_frame(10, 7)
    assert peek_header(frame[:-1]) is None
    assert peek_header(struct.pack(">II", 4, 2 << 24)) is None  # unknown serialize type


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bodies=st.lists(st.binary(max_size=300), min_size=1, max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12),
)
def test_splitter_returns_the_same_frames_whatever_the_chunking(bodies: list[bytes], cuts: list[int]) -> None:
    frames = [json_frame(10, i, body=b) for i, b in enumerate(bodies)]
    stream = b"".join(frames)
    points = sorted({c % (len(stream) + 1) for c in cuts})
    chunks = [stream[a:b] for a, b in zip([0, *points], [*points, len(stream)], strict=True)]
    splitter = FrameSplitter()
    out: list[bytes] = []
    for chunk in chunks:
        out.extend(splitter.feed(chunk))
    assert out == frames
    assert splitter.buffered == 0
    assert not splitter.raw


def test_splitter_goes_raw_on_an_impossible_length_and_keeps_every_byte() -> None:
    good = json_frame(10, 1)
    bad = b"\x16\x03\x01\x02\x00" + b"x" * 20  # a TLS ClientHello-like start: length word far too large
    splitter = FrameSplitter(max_frame_size=1024)
    assert splitter.feed(good + bad[:3]) == [good]
    assert splitter.feed(bad[3:]) == []
    assert splitter.raw
    assert b"".join(splitter.take_raw()) == bad
    assert splitter.feed(b"more") == []
    assert splitter.take_raw() == [b"more"]


def test_splitter_large_frame_in_small_chunks() -> None:
    frame = json_frame(10, 1, body=b"z" * 200_000)
    splitter = FrameSplitter()
    out: list[bytes] = []
    for i in range(0, len(frame), 4096):
        out.extend(splitter.feed(frame[i : i + 4096]))
    assert out == [frame]


def test_mask_credentials_json_keeps_length_and_body() -> None:
    ext = {"topic": "T", "AccessKey": "rocketmq2", "Signature": "c2lnbmF0dXJl+/==", "SecurityToken": "tok"}
    frame = json_frame(10, 3, ext=ext, body=b"AccessKey in the body stays")
    masked = mask_credentials(frame)
    assert masked is not None and len(masked) == len(frame)
    peek = peek_header(masked)
    assert peek is not None
    assert peek.ext_fields == {
        "topic": "T",
        "AccessKey": "*" * 9,
        "Signature": "*" * 16,
        "SecurityToken": "***",
    }
    assert masked.endswith(b"AccessKey in the body stays")
    assert mask_credentials(json_frame(10, 3, ext={"topic": "T"})) is None


def test_mask_credentials_binary() -> None:
    frame = binary_frame(310, 9, ext={"a": "g", "AccessKey": "ak", "Signature": "sig="})
    masked = mask_credentials(frame)
    assert masked is not None and len(masked) == len(frame)
    peek = peek_header(masked)
    assert peek is not None
    assert peek.ext_fields == {"a": "g", "AccessKey": "**", "Signature": "****"}


def _loosely(header: bytes) -> tuple[int, int, int, int] | None:
    """The summary as orjson and ``int()`` read it (what the proxy did before its typed decoders)."""
    try:
        obj = orjson.loads(header)
        if not isinstance(obj, dict) or not isinstance(obj.get("extFields", {}), dict | None):
            return None
        return 0, int(obj.get("code", 0)), int(obj.get("opaque", 0)), int(obj.get("flag", 0))
    except (ValueError, TypeError):
        return None


ODD_HEADERS = [
    b'{"code":310,"extFields":{"a":"PG","b":"T"},"flag":0,"language":"JAVA","opaque":7,"version":409}',
    b'{"code":0,"extFields":{"queueId":"1","msgId":"0A00","offsetMsgId":"0B"},"flag":1,"opaque":7}',
    b'{"code":105,"extFields":{"topic":"T\\u00fc"},"opaque":2}',
    b'{"version":409,"opaque":7,"flag":1,"code":0}',
    b'{"code":"310","flag":"1","opaque":"7"}',
    b'{"code":"310","flag":"1","opaque":"7","extFields":{"b":"T"}}',
    b'{"code":310.0,"flag":true,"opaque":-7}',
    b'{"code":1,"code":2,"opaque":3,"opaque":4}',
    b'{"code":11,"extFields":null,"opaque":1}',
    b'{"code":11,"extFields":{"topic":5,"b":["x"]},"opaque":1}',
    b'{"code":11,"extFields":[],"opaque":1}',
    b'{"code":11,"opaque":1,"remark":"\\u00fc \\"opaque\\":2 \\ud800"}',
    b'{"code":"x","opaque":1}',
    b"[310, 1]",
    b"{}",
    b'{"code":310',
    b"\xff",
]
"""JSON headers as Java writes them and as it does not: each typed decoder must read them as the loose
way (orjson and ``int()``) does."""


@pytest.mark.parametrize("header", ODD_HEADERS)
def test_the_typed_summary_reads_what_the_loose_way_reads(header: bytes) -> None:
    """peek_summary's typed decoder hands what its strict types refuse to the loose way: the result is
    what orjson and int() give (the labels and pairing of the metrics depend on it). Integers past 64
    bits aside: the typed decoder reads them exactly, orjson as a float; Java's fields are 32-bit."""
    frame = struct.pack(">II", 4 + len(header), len(header)) + header
    assert peek_summary(frame) == _loosely(header)


def _head_fields(frame: bytes) -> tuple[object, ...] | None:
    """(code, opaque, flag, topic, b, msgId, offsetMsgId) as the loose way (peek_header) reads them."""
    peek = peek_header(frame)
    if peek is None:
        return None
    ext = peek.ext_fields
    return (peek.code, peek.opaque, peek.flag, *(ext.get(k) for k in ("topic", "b", "msgId", "offsetMsgId")))


@pytest.mark.parametrize("header", ODD_HEADERS)
def test_a_frames_head_is_what_the_loose_way_reads(header: bytes) -> None:
    """read_head's typed decoder hands what its strict types refuse to peek_header: what a proxy
    session hands its hooks is what the loose way reads."""
    frame = struct.pack(">II", 4 + len(header), len(header)) + header
    head = read_head(frame)
    got = None if head is None else (head.code, head.opaque, head.flag)
    if head is not None:
        ext = head.extFields or HeadFields()
        got = (*got, ext.topic, ext.b, ext.msgId, ext.offsetMsgId)
    assert got == _head_fields(frame)


def test_a_binary_frames_head_and_an_unreadable_one() -> None:
    ext = {"b": "T", "msgId": "0A00,0B00", "queueId": "3"}
    binary = binary_frame(310, 9, flag=1, ext=ext, remark="r", body=b"x")
    head = read_head(binary)
    assert head is not None and head.extFields is not None
    fields = head.extFields
    assert (head.code, head.opaque, head.flag, fields.b, fields.msgId) == (310, 9, 1, "T", "0A00,0B00")
    assert read_head(SHEET_BINARY[:12]) is None
