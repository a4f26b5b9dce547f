"""``record_size`` (a clean restart's scan: validity and size only) answers exactly as the full
``check_message_and_return_size`` does, on valid records and on every kind of damage."""

from __future__ import annotations

import socket

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rmqtwin.codec.message import (
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MessageExt,
    encode_blank_record,
    encode_message_record,
)
from rmqtwin.store_mirror import record as record_module
from rmqtwin.store_mirror.record import (
    SCHEDULE_TOPIC,
    DelayTimeFn,
    check_message_and_return_size,
    record_size,
)

_host = st.tuples(
    st.one_of(
        st.ip_addresses(v=4).map(str),
        st.ip_addresses(v=6).map(lambda a: socket.inet_ntop(socket.AF_INET6, a.packed)),
    ),
    st.integers(0, 65535),
)
_props = st.dictionaries(
    st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "a"]),
    st.text(alphabet="0123456789abc ", min_size=1, max_size=12),
    max_size=4,
)
_DELAY = DelayTimeFn([1000, 5000, 10_000])


@st.composite
def records(draw: st.DrawFn) -> bytes:
    v2 = draw(st.booleans())
    topic = draw(
        st.text(alphabet="abXY_", min_size=128, max_size=200)
        if v2
        else st.one_of(st.just(SCHEDULE_TOPIC), st.text(alphabet="abXY_", min_size=1, max_size=20))
    )
    msg = MessageExt(
        topic=topic,
        properties=draw(_props),
        body=draw(st.binary(max_size=200)),
        queue_id=draw(st.integers(0, 7)),
        born_host=draw(_host),
        store_host=draw(_host),
        magic=MESSAGE_MAGIC_CODE_V2 if v2 else MESSAGE_MAGIC_CODE,
    )
    return encode_message_record(msg, append_prop_crc=draw(st.booleans()))


def full(buf: bytes, limit: int, crc: bool) -> int:
    try:
        req = check_message_and_return_size(buf, 0, limit, crc, _DELAY)
    except ValueError:  # a SCHEDULE_TOPIC_XXXX record whose DELAY is no number
        return -2
    return req.msg_size if req.success else -1


def lean(buf: bytes, limit: int, crc: bool) -> int:
    try:
        return record_size(buf, 0, limit, crc, _DELAY)
    except ValueError:
        return -2


@given(records(), st.booleans())
def test_valid_records(record: bytes, crc: bool) -> None:
    buf = record + encode_blank_record(1000)
    assert lean(buf, len(buf), crc) == full(buf, len(buf), crc)
    assert record_size(buf, len(record), len(buf)) == 0


@given(
    records(),
    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 255)), min_size=1, max_size=4),
    st.integers(0, 40),
    st.booleans(),
)
def test_damaged_records(record: bytes, changes: list[tuple[int, int]], cut: int, crc: bool) -> None:
    buf = bytearray(record + bytes(64))
    for at, value in changes:
        buf[at % len(record)] = value
    for limit in (len(buf), max(len(record) - cut, 0)):
        assert lean(bytes(buf), limit, crc) == full(bytes(buf), limit, crc)


def test_a_plain_record_is_settled_without_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    record = encode_message_record(MessageExt(topic="T", properties={"TAGS": "a"}, body=b"x" * 64))

    def decoded(*args: object) -> object:
        raise AssertionError("decoded")

    monkeypatch.setattr(record_module, "check_message_and_return_size", decoded)
    assert record_size(record, 0, len(record)) == len(record)
