"""Encodings only the Python side produces, read by the real Java decoders of both lines.

The generated vectors start from Java objects; these start from Python: bodies compressed by
``rmqtwin.codec.compression`` (LZ4 frames, zstd, zlib) must inflate in Java's ``Compressor``s, and the
5.x v2 record magic (topics over 127 bytes) must decode in 5.5.0, while 4.9.8, which only knows v1,
cannot read it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rmqtwin.codec.compression import COMPRESSED_FLAG, CompressionType, compress
from rmqtwin.codec.message import (
    MESSAGE_MAGIC_CODE_V2,
    MessageExt,
    body_crc32,
    create_offset_msg_id,
    encode_message_record,
)
from tests.golden import vectors as gv
from tests.golden.conftest import LINES, GoldenLine

pytestmark = pytest.mark.java

Golden = Callable[[str], GoldenLine]

BODY = ("RocketMQ golden \u00fc " * 400).encode()
LONG_TOPIC = "T" * 100 + "-long-topic-" + "x" * 88  # 200 bytes: needs the v2 magic


def _message(topic: str, body: bytes, sys_flag: int, magic: int | None = None) -> MessageExt:
    msg = MessageExt(
        topic=topic,
        flag=3,
        properties={"UNIQ_KEY": "AC110001000118B4AAC20A2B3C0000", "TAGS": "TagA"},
        body=body,
        queue_id=2,
        queue_offset=17,
        sys_flag=sys_flag,
        born_timestamp=1700000000123,
        born_host=("2001:db8::7", 40000),
        store_timestamp=1700000000125,
        store_host=("127.0.0.1", 10911),
        commitlog_offset=123456789,
        reconsume_times=1,
    )
    if magic is not None:
        msg.magic = magic
    return msg


def _records(line: str) -> list[dict[str, Any]]:
    items = []
    for ct in CompressionType:
        msg = _message("TopicTest", compress(BODY, ct), COMPRESSED_FLAG | ct.compression_flag)
        record = encode_message_record(msg, trailing_separator=gv.trailing_separator(line))
        items.append({"name": f"compressed_{ct.name.lower()}", "kind": "records", "hex": record.hex()})
    long_topic = _message(LONG_TOPIC, b"v2 body", 0, MESSAGE_MAGIC_CODE_V2)
    record = encode_message_record(long_topic, trailing_separator=gv.trailing_separator(line))
    items.append({"name": "v2_magic_long_topic", "kind": "records", "hex": record.hex()})
    return items


@pytest.mark.parametrize("line", list(LINES))
@pytest.mark.parametrize("compression", [ct.name.lower() for ct in CompressionType])
def test_java_inflates_python_compressed_bodies(golden: Golden, line: str, compression: str) -> None:
    result = golden(line).java_reads("originated", _records)[f"compressed_{compression}"]
    assert result["ok"], result.get("trace")
    (msg,) = result["messages"]
    ct = CompressionType[compression.upper()]
    assert bytes.fromhex(msg["bodyDecompressed"]) == BODY
    assert bytes.fromhex(msg["body"]) == compress(BODY, ct)
    assert msg["bodyCRC"] == body_crc32(compress(BODY, ct))
    assert msg["sysFlag"] & 0x731 == COMPRESSED_FLAG | ct.compression_flag | 0x10
    assert gv.java_host(msg["bornHost"]) == "2001:db8::7|40000"
    assert msg["msgId"] == create_offset_msg_id(("127.0.0.1", 10911), 123456789)


def test_java_5_decodes_the_v2_magic(golden: Golden) -> None:
    result = golden("v5").java_reads("originated", _records)["v2_magic_long_topic"]
    assert result["ok"], result.get("trace")
    (msg,) = result["messages"]
    assert msg["topic"] == LONG_TOPIC
    assert bytes.fromhex(msg["body"]) == b"v2 body"
    assert msg["properties"] == {"UNIQ_KEY": "AC110001000118B4AAC20A2B3C0000", "TAGS": "TagA"}


def test_java_4_cannot_read_the_v2_magic(golden: Golden) -> None:
    """4.9.8 ignores the magic and reads a 1-byte topic length: the v2 record is not readable there."""
    result = golden("v4").java_reads("originated", _records)["v2_magic_long_topic"]
    readable = result["ok"] and result["messages"][0]["topic"] == LONG_TOPIC
    assert not readable
