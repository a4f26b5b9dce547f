"""Encodings only the Python side produces, read by the real Java decoders of both lines.

Also differential checks of the properties string: ``string_to_properties`` against
``MessageDecoder.string2messageProperties`` on well-formed and malformed strings, and
``properties_to_string`` against ``messageProperties2String`` (4.9.8 drops the trailing separator, 5.5.0
keeps it).

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
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.message import (
    body_crc32,
    create_offset_msg_id,
    decode_offset_msg_id,
    properties_to_string,
    string_to_properties,
)
from tests.golden import vectors as gv
from tests.golden.conftest import LINES, GoldenLine
from tests.golden.vectors import BODY, LONG_TOPIC

pytestmark = [pytest.mark.java, pytest.mark.timeout(900)]

Golden = Callable[[str], GoldenLine]

# Known differences, one case each ("test id" -> the exact difference); strict, so a fix fails loudly.
_JSON_LANGUAGE = (
    "Java decodes the unknown JSON language name 'KOTLIN' as null; decode_command gives LanguageCode.OTHER"
)
_BINARY_LANGUAGE = "Java decodes the unknown ROCKETMQ language byte 99 as null; decode_command keeps 99"
XFAIL_ORIGINATED: dict[str, str] = {
    "json_unknown_language-v4": _JSON_LANGUAGE,
    "json_unknown_language-v5": _JSON_LANGUAGE,
    "binary_unknown_language-v4": _BINARY_LANGUAGE,
    "binary_unknown_language-v5": _BINARY_LANGUAGE,
    "json_invalid_utf8_remark-v5": (
        "5.5.0 (fastjson2) rejects invalid UTF-8 in a JSON header (JSONException: malformed input around "
        "byte 44); decode_command decodes it with U+FFFD, as 4.9.8 (fastjson) does"
    ),
}


def _cases(names: list[str]) -> list[Any]:
    """(line, name) cases with the XFAIL_ORIGINATED marks, ids "name-line" like stacked parametrize."""
    cases = []
    for name in names:
        for line in LINES:
            case_id = f"{name}-{line}"
            marks = (
                [pytest.mark.xfail(strict=True, reason=XFAIL_ORIGINATED[case_id])]
                if case_id in XFAIL_ORIGINATED
                else []
            )
            cases.append(pytest.param(line, name, id=case_id, marks=marks))
    return cases


@pytest.mark.parametrize("line", list(LINES))
@pytest.mark.parametrize("compression", [ct.name.lower() for ct in CompressionType])
def test_java_inflates_python_compressed_bodies(golden: Golden, line: str, compression: str) -> None:
    result = golden(line).java_result(f"originated.compressed_{compression}")
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
    result = golden("v5").java_result("originated.v2_magic_long_topic")
    assert result["ok"], result.get("trace")
    (msg,) = result["messages"]
    assert msg["topic"] == LONG_TOPIC
    assert bytes.fromhex(msg["body"]) == b"v2 body"
    assert msg["properties"] == {"UNIQ_KEY": "AC110001000118B4AAC20A2B3C0000", "TAGS": "TagA"}


def test_java_4_cannot_read_the_v2_magic(golden: Golden) -> None:
    """4.9.8 ignores the magic and reads a 1-byte topic length: the v2 record is not readable there."""
    result = golden("v4").java_result("originated.v2_magic_long_topic")
    readable = result["ok"] and result["messages"][0]["topic"] == LONG_TOPIC
    assert not readable


@pytest.mark.parametrize("line", list(LINES))
@pytest.mark.parametrize("index", range(len(gv.PROPERTY_STRINGS)))
def test_properties_parse_like_java(golden: Golden, line: str, index: int) -> None:
    result = golden(line).java_result(f"originated.props.parse.{index}")
    assert result["ok"], result
    assert string_to_properties(gv.PROPERTY_STRINGS[index]) == result["properties"]


@pytest.mark.parametrize("line", list(LINES))
@pytest.mark.parametrize("index", range(len(gv.PROPERTY_PAIRS)))
def test_properties_write_like_java(golden: Golden, line: str, index: int) -> None:
    result = golden(line).java_result(f"originated.props.write.{index}")
    assert result["ok"], result
    pairs = dict(gv.PROPERTY_PAIRS[index])
    written = properties_to_string(pairs, trailing_separator=gv.trailing_separator(line))
    assert written == result["text"]


@pytest.mark.parametrize(("line", "index"), _cases([str(i) for i in range(len(gv.OFFSET_MSG_IDS))]))
def test_offset_msg_id_decodes_like_java(golden: Golden, line: str, index: str) -> None:
    result = golden(line).java_result(f"originated.msgid.{index}")
    if not result["ok"]:
        # Java refuses the id; so must we (a codec error, not a bogus address).
        with pytest.raises(CodecError):
            decode_offset_msg_id(gv.OFFSET_MSG_IDS[int(index)])
        return
    host, port, offset = decode_offset_msg_id(gv.OFFSET_MSG_IDS[int(index)])
    assert (gv.java_host(f"{host}|{port}"), offset) == (gv.java_host(result["address"]), result["offset"])


@pytest.mark.parametrize(("line", "name"), _cases(list(gv.ODD_FRAMES)))
def test_odd_frames_decode_like_java(golden: Golden, line: str, name: str) -> None:
    """What Java's NettyDecoder accepts we decode to the same fields; what it rejects we reject."""
    result = golden(line).java_result(f"originated.odd.{name}")
    frame = bytes.fromhex(gv.ODD_FRAMES[name])
    if not result["ok"]:
        with pytest.raises(CodecError):
            gv.decode_frame(frame)
        return
    assert gv.describe_command(gv.decode_frame(frame)) == gv.java_command(result["command"])
