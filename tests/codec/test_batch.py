"""SEND_BATCH_MESSAGE bodies: the client's encoding and how the broker turns items into stored records."""

from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtwin.codec.errors import MessageDecodeError, MessageEncodeError
from rmqtwin.codec.message import (
    MESSAGE_MAGIC_CODE_V2,
    BatchItem,
    Message,
    MessageExt,
    decode_batch,
    decode_message_records,
    encode_batch,
    encode_batch_item,
    encode_message_record,
    expand_batch,
    merge_batch_properties,
)


def test_batch_item_bytes() -> None:
    msg = Message(topic="T", flag=5, properties={"UNIQ_KEY": "U1", "TAGS": "a"}, body=b"hi")
    props = b"UNIQ_KEY\x01U1\x02TAGS\x01a"
    expected = (
        struct.pack(">iiiii", 20 + 2 + 2 + len(props), 0, 0, 5, 2)
        + b"hi"
        + struct.pack(">h", len(props))
        + props
    )
    assert encode_batch_item(msg) == expected
    assert encode_batch_item(msg, trailing_separator=True) == (
        struct.pack(">iiiii", 20 + 2 + 2 + len(props) + 1, 0, 0, 5, 2)
        + b"hi"
        + struct.pack(">h", len(props) + 1)
        + props
        + b"\x02"
    )
    assert encode_batch([msg, msg]) == expected * 2


def test_properties_too_long_for_a_short() -> None:
    with pytest.raises(MessageEncodeError, match="Properties size"):
        encode_batch_item(Message(properties={"k": "v" * 40000}))


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(
        st.builds(
            Message,
            flag=st.integers(-(2**31), 2**31 - 1),
            body=st.binary(max_size=64),
            properties=st.dictionaries(
                st.sampled_from(["KEYS", "TAGS", "UNIQ_KEY", "x"]), st.text("abc ", min_size=1)
            ),
        ),
        max_size=6,
    ),
    trailing=st.booleans(),
)
def test_batch_round_trip(messages: list[Message], trailing: bool) -> None:
    items = decode_batch(encode_batch(messages, trailing_separator=trailing))
    assert [i.to_message() for i in items] == [
        Message(flag=m.flag, body=m.body, properties=m.properties) for m in messages
    ]


def test_broker_ignores_item_size_magic_and_crc() -> None:
    good = encode_batch_item(Message(flag=1, body=b"abc", properties={"k": "v"}))
    tampered = struct.pack(">iii", 999, 0x7777, 0x1234) + good[12:]
    assert decode_batch(tampered) == [BatchItem(1, b"abc", "k\x01v")]


@pytest.mark.parametrize(
    "body",
    [
        b"\x00" * 10,  # shorter than an item head
        struct.pack(">iiiii", 0, 0, 0, 0, 100) + b"short",  # body length beyond the end
        struct.pack(">iiiii", 0, 0, 0, 0, -1),  # negative body length
        struct.pack(">iiiii", 0, 0, 0, 0, 0) + struct.pack(">h", 10) + b"abc",  # properties beyond the end
        struct.pack(">iiiii", 0, 0, 0, 0, 0) + struct.pack(">h", -3),  # negative properties length
    ],
)
def test_malformed_batches_raise(body: bytes) -> None:
    with pytest.raises(MessageDecodeError):
        decode_batch(body)


@pytest.mark.parametrize(
    ("item", "batch", "stored"),
    [
        (
            "UNIQ_KEY\x01A",
            "WAIT\x01true\x02CLUSTER\x01c",
            "UNIQ_KEY\x01A\x02WAIT\x01true\x02CLUSTER\x01c",
        ),  # 4.9 style
        ("UNIQ_KEY\x01A\x02", "WAIT\x01true\x02", "UNIQ_KEY\x01A\x02WAIT\x01true\x02"),  # 5.2+ style
        ("", "CLUSTER\x01c", "CLUSTER\x01c"),
        ("UNIQ_KEY\x01A", "", "UNIQ_KEY\x01A"),
    ],
)
def test_merge_batch_properties(item: str, batch: str, stored: str) -> None:
    assert merge_batch_properties(item, batch) == stored


def test_expand_batch_gives_the_records_the_broker_stores() -> None:
    messages = [
        Message(flag=i, body=f"body-{i}".encode(), properties={"UNIQ_KEY": f"U{i}", "TAGS": "TagA"})
        for i in range(3)
    ]
    template = MessageExt(
        topic="BatchTopic",
        queue_id=2,
        sys_flag=0,
        born_timestamp=111,
        born_host=("10.1.1.1", 40000),
        store_timestamp=222,
        store_host=("::1", 10911),
        reconsume_times=0,
        prepared_transaction_offset=99,  # batches never carry it: the broker writes 0
    )
    stored = expand_batch(encode_batch(messages), template, {"WAIT": "true", "CLUSTER": "DefaultCluster"})
    assert [m.properties_string for m in stored] == [
        f"UNIQ_KEY\x01U{i}\x02TAGS\x01TagA\x02WAIT\x01true\x02CLUSTER\x01DefaultCluster" for i in range(3)
    ]
    records = b"".join(encode_message_record(m) for m in stored)
    decoded = decode_message_records(records, check_crc=True)
    assert [m.body for m in decoded] == [m.body for m in messages]
    assert [m.flag for m in decoded] == [0, 1, 2]
    assert all(
        m.topic == "BatchTopic" and m.queue_id == 2 and m.prepared_transaction_offset == 0 for m in decoded
    )
    assert all(m.store_host == ("::1", 10911) and m.sys_flag == 0x20 for m in decoded)
    assert decoded[1].properties == {
        "UNIQ_KEY": "U1",
        "TAGS": "TagA",
        "WAIT": "true",
        "CLUSTER": "DefaultCluster",
    }
    assert [m.body_crc for m in stored] == [zlib.crc32(m.body) & 0x7FFFFFFF for m in messages]


def test_expand_batch_keeps_5x_style_and_v2_magic() -> None:
    body = encode_batch([Message(body=b"x", properties={"UNIQ_KEY": "U"})], trailing_separator=True)
    template = MessageExt(topic="t" * 150, magic=MESSAGE_MAGIC_CODE_V2)
    (stored,) = expand_batch(body, template, {"CLUSTER": "c"}, trailing_separator=True)
    assert stored.properties_string == "UNIQ_KEY\x01U\x02CLUSTER\x01c\x02"
    (decoded,) = decode_message_records(encode_message_record(stored))
    assert decoded.topic == "t" * 150 and decoded.magic == MESSAGE_MAGIC_CODE_V2
