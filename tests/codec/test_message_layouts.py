"""The construct declarations and the hand-written hot path agree, both ways."""

from __future__ import annotations

import ipaddress
import zlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqtwin.codec.layouts.message import (
    BATCH_BODY,
    BATCH_ITEM,
    BLANK_RECORD,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    MESSAGE_RECORD,
    MESSAGE_RECORDS,
)
from rmqtwin.codec.message import (
    Message,
    MessageExt,
    decode_batch,
    decode_message_record,
    encode_batch,
    encode_blank_record,
    encode_message_record,
    iter_message_records,
    properties_to_string,
    string_to_properties,
)

_i32 = st.integers(-(2**31), 2**31 - 1)
_i64 = st.integers(-(2**63), 2**63 - 1)
_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x01\x02"),
    min_size=1,
    max_size=10,
)
_props = st.dictionaries(_text, _text, max_size=5)


@st.composite
def _record_fields(draw: st.DrawFn) -> dict[str, Any]:
    """Field values for MESSAGE_RECORD.build (no compression bit: bodies are opaque here)."""
    born_v6, store_v6, v2 = draw(st.booleans()), draw(st.booleans()), draw(st.booleans())
    topic_len = draw(st.integers(128, 400) if v2 else st.integers(1, 127))
    return {
        "magic": MESSAGE_MAGIC_CODE_V2 if v2 else MESSAGE_MAGIC_CODE,
        "queue_id": draw(_i32),
        "flag": draw(_i32),
        "queue_offset": draw(_i64),
        "commitlog_offset": draw(_i64),
        "sys_flag": (draw(st.integers(0, 0x7FF)) & ~0x31)
        | (0x10 if born_v6 else 0)
        | (0x20 if store_v6 else 0),
        "born_timestamp": draw(_i64),
        "born_host": {
            "address": draw(st.binary(min_size=16 if born_v6 else 4, max_size=16 if born_v6 else 4)),
            "port": draw(st.integers(0, 65535)),
        },
        "store_timestamp": draw(_i64),
        "store_host": {
            "address": draw(st.binary(min_size=16 if store_v6 else 4, max_size=16 if store_v6 else 4)),
            "port": draw(st.integers(0, 65535)),
        },
        "reconsume_times": draw(_i32),
        "prepared_transaction_offset": draw(_i64),
        "body": draw(st.binary(max_size=200)),
        "topic": draw(st.text(alphabet="abcXYZ09_-%|", min_size=topic_len, max_size=topic_len)).encode(),
        "properties": properties_to_string(draw(_props), trailing_separator=draw(st.booleans())).encode(),
    }


def _ip(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))


def _as_message(fields: dict[str, Any]) -> MessageExt:
    return MessageExt(
        topic=fields["topic"].decode(),
        flag=fields["flag"],
        properties=string_to_properties(fields["properties"].decode()),
        body=fields["body"],
        queue_id=fields["queue_id"],
        queue_offset=fields["queue_offset"],
        sys_flag=fields["sys_flag"],
        born_timestamp=fields["born_timestamp"],
        born_host=(_ip(fields["born_host"]["address"]), fields["born_host"]["port"]),
        store_timestamp=fields["store_timestamp"],
        store_host=(_ip(fields["store_host"]["address"]), fields["store_host"]["port"]),
        commitlog_offset=fields["commitlog_offset"],
        reconsume_times=fields["reconsume_times"],
        prepared_transaction_offset=fields["prepared_transaction_offset"],
        magic=fields["magic"],
        properties_string=fields["properties"].decode(),
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_record_fields())
def test_construct_built_records_decode_on_the_hot_path(fields: dict[str, Any]) -> None:
    raw = MESSAGE_RECORD.build(fields)
    msg, end = decode_message_record(raw, check_crc=True)
    assert end == len(raw)
    expected = _as_message(fields)
    assert msg.topic == expected.topic and msg.body == expected.body and msg.properties == expected.properties
    assert msg.born_host == expected.born_host and msg.store_host == expected.store_host
    assert (msg.queue_id, msg.flag, msg.queue_offset, msg.commitlog_offset, msg.sys_flag, msg.magic) == (
        expected.queue_id,
        expected.flag,
        expected.queue_offset,
        expected.commitlog_offset,
        expected.sys_flag,
        expected.magic,
    )
    assert (
        msg.born_timestamp,
        msg.store_timestamp,
        msg.reconsume_times,
        msg.prepared_transaction_offset,
    ) == (
        expected.born_timestamp,
        expected.store_timestamp,
        expected.reconsume_times,
        expected.prepared_transaction_offset,
    )
    assert msg.body_crc == zlib.crc32(fields["body"]) & 0x7FFFFFFF and msg.store_size == len(raw)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fields=_record_fields())
def test_hot_path_records_parse_with_construct_and_match_byte_for_byte(fields: dict[str, Any]) -> None:
    raw = encode_message_record(_as_message(fields))
    assert raw == MESSAGE_RECORD.build(fields)
    parsed = MESSAGE_RECORD.parse(raw)
    assert parsed.total_size == len(raw)
    for name in (
        "magic",
        "queue_id",
        "flag",
        "queue_offset",
        "commitlog_offset",
        "sys_flag",
        "born_timestamp",
        "store_timestamp",
        "reconsume_times",
        "prepared_transaction_offset",
        "body",
        "topic",
        "properties",
    ):
        assert parsed[name] == fields[name], name
    assert parsed.born_host.address == fields["born_host"]["address"]
    assert parsed.store_host.port == fields["store_host"]["port"]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(_record_fields(), max_size=4))
def test_pull_bodies_agree(records: list[dict[str, Any]]) -> None:
    to_build: list[dict[str, Any] | None] = list(records)
    body = MESSAGE_RECORDS.build(to_build)
    assert [m.topic.encode() for m in iter_message_records(body)] == [r["topic"] for r in records]
    assert len(MESSAGE_RECORDS.parse(body)) == len(records)


def test_blank_record_agrees() -> None:
    assert BLANK_RECORD.build({"max_blank": 4096}) == encode_blank_record(4096)
    assert BLANK_RECORD.parse(encode_blank_record(17)).max_blank == 17


_batch_message = st.builds(
    Message,
    topic=st.just(""),
    flag=_i32,
    properties=_props,
    body=st.binary(max_size=100),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messages=st.lists(_batch_message, max_size=5), trailing=st.booleans())
def test_batch_layout_agrees_both_ways(messages: list[Message], trailing: bool) -> None:
    raw = encode_batch(messages, trailing_separator=trailing)
    parsed = BATCH_BODY.parse(raw)
    assert [p.flag for p in parsed] == [m.flag for m in messages]
    assert [p.body for p in parsed] == [m.body for m in messages]
    assert all(p.magic == 0 and p.body_crc == 0 for p in parsed)
    items: list[dict[str, Any] | None] = [
        {
            "flag": m.flag,
            "body": m.body,
            "properties": properties_to_string(m.properties, trailing_separator=trailing).encode(),
        }
        for m in messages
    ]
    assert BATCH_BODY.build(items) == raw
    decoded = decode_batch(BATCH_BODY.build(items))
    assert [(d.flag, d.body, d.properties) for d in decoded] == [
        (m.flag, m.body, m.properties) for m in messages
    ]


def test_batch_item_sizes() -> None:
    raw = BATCH_ITEM.build({"flag": 1, "body": b"xyz", "properties": b"a\x01b"})
    assert len(raw) == 20 + 3 + 2 + 3
    assert BATCH_ITEM.parse(raw).total_size == len(raw)
