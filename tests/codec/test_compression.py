"""Body compression: the formats the Java compressors read and write, and the sysFlag bits."""

from __future__ import annotations

import os
import zlib

import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtwin.codec.compression import (
    COMPRESS_MSG_BODY_OVER_HOWMUCH,
    COMPRESSED_FLAG,
    CompressionType,
    clear_compressed_flag,
    compress,
    compress_for_send,
    decompress,
    decompress_body,
    get_compression_type,
    is_compressed,
)
from rmqtwin.codec.errors import BodyDecompressError, CodecError, MessageDecodeError

# A body that compresses but is not trivial: 200 KiB, spanning several 64 KiB blocks.
_BIG = (os.urandom(3000) + b"rocketmq " * 500) * 40

# LZ4 frame descriptor (https://github.com/lz4/lz4/blob/dev/doc/lz4_Frame_format.md): FLG is byte 4.
_LZ4_MAGIC = bytes.fromhex("04224d18")
_FLG_BLOCK_INDEPENDENCE = 0x20
_FLG_CONTENT_SIZE = 0x08
_FLG_CONTENT_CHECKSUM = 0x04


@settings(max_examples=40, deadline=None)
@given(body=st.binary(max_size=3000), type_=st.sampled_from(list(CompressionType)))
def test_round_trip_every_type(body: bytes, type_: CompressionType) -> None:
    assert decompress(compress(body, type_), type_) == body


def test_lz4_frame_is_what_lz4_java_accepts_beyond_64k() -> None:
    frame = compress(_BIG, CompressionType.LZ4)
    assert frame[:4] == _LZ4_MAGIC
    flg, bd = frame[4], frame[5]
    assert flg & _FLG_BLOCK_INDEPENDENCE, "lz4-java rejects dependent blocks"
    assert not flg & _FLG_CONTENT_SIZE
    assert not flg & _FLG_CONTENT_CHECKSUM
    assert (bd >> 4) & 0x7 == 7  # 4 MiB maximum block size, LZ4FrameOutputStream's default
    assert decompress(frame, CompressionType.LZ4) == _BIG


def test_python_lz4_default_would_break_lz4_java() -> None:
    """The pitfall the LZ4 settings avoid: python-lz4's default links blocks past 64 KiB."""
    default_frame = lz4.frame.compress(_BIG)
    assert not default_frame[4] & _FLG_BLOCK_INDEPENDENCE
    # We still read such frames (and frames that carry a content size).
    assert decompress(default_frame, CompressionType.LZ4) == _BIG


def test_zstd_streaming_frame_without_content_size_decodes() -> None:
    cobj = zstandard.ZstdCompressor(level=5).compressobj()
    frame = cobj.compress(_BIG) + cobj.flush()
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(frame)
    assert decompress(frame, CompressionType.ZSTD) == _BIG


def test_zstd_output_is_streaming_like_zstd_jni() -> None:
    frame = compress(_BIG, CompressionType.ZSTD)
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    one_shot = zstandard.ZstdCompressor(level=5).compress(b"sized")
    assert decompress(one_shot, CompressionType.ZSTD) == b"sized"


def test_zlib_is_the_deflater_stream_at_level_5() -> None:
    data = compress(_BIG, CompressionType.ZLIB)
    assert data == zlib.compress(_BIG, 5)
    assert data[0] == 0x78 and (data[0] << 8 | data[1]) % 31 == 0  # RFC 1950 header
    # InflaterInputStream stops at the end of the stream and ignores what follows.
    assert decompress(data + b"trailing", CompressionType.ZLIB) == _BIG


@pytest.mark.parametrize("type_", [CompressionType.LZ4, CompressionType.ZSTD])
def test_concatenated_frames_decode_to_the_concatenation(type_: CompressionType) -> None:
    assert decompress(compress(b"one", type_) + compress(b"two", type_), type_) == b"onetwo"


@pytest.mark.parametrize("type_", list(CompressionType))
def test_corrupt_and_truncated_bodies_raise_a_codec_error(type_: CompressionType) -> None:
    good = compress(_BIG, type_)
    for bad in (good[: len(good) // 2], b"\x00garbage" * 4):
        with pytest.raises(BodyDecompressError) as info:
            decompress(bad, type_)
        assert isinstance(info.value, MessageDecodeError)
        assert isinstance(info.value, CodecError)


def test_compression_type_values_match_java() -> None:
    assert [t.value for t in CompressionType] == [1, 2, 3]
    assert CompressionType.find_by_value(0) is CompressionType.ZLIB  # pre-4.9.4 senders
    assert CompressionType.find_by_value(2) is CompressionType.ZSTD
    with pytest.raises(ValueError, match="Unknown compress type value: 4"):
        CompressionType.find_by_value(4)
    assert CompressionType.of(" lz4 ") is CompressionType.LZ4
    with pytest.raises(ValueError, match="Unsupported compress type name"):
        CompressionType.of("snappy")
    assert [t.compression_flag for t in CompressionType] == [0x100, 0x200, 0x300]


@pytest.mark.parametrize(
    ("sys_flag", "expected"),
    [
        (0x1, CompressionType.ZLIB),  # 4.9.0-4.9.3 / Go client: bit 0 only
        (0x301, CompressionType.ZLIB),  # 4.9.4+ Java default
        (0x101, CompressionType.LZ4),
        (0x201 | 0x30, CompressionType.ZSTD),  # other bits do not interfere
    ],
)
def test_sys_flag_compression_bits(sys_flag: int, expected: CompressionType) -> None:
    assert get_compression_type(sys_flag) is expected
    assert is_compressed(sys_flag)
    assert clear_compressed_flag(sys_flag) == sys_flag & ~1
    assert not is_compressed(clear_compressed_flag(sys_flag))


def test_decompress_body_follows_sys_flag() -> None:
    raw = compress(b"x" * 5000, CompressionType.LZ4)
    assert decompress_body(raw, 0x101) == b"x" * 5000
    assert decompress_body(raw, 0x100) == raw  # type bits without COMPRESSED_FLAG: stored as is
    with pytest.raises(BodyDecompressError):
        decompress_body(raw, 0x401)  # type 4 does not exist


def test_producer_threshold_and_flags() -> None:
    small = b"a" * (COMPRESS_MSG_BODY_OVER_HOWMUCH - 1)
    assert compress_for_send(small) == (small, 0)
    body = b"a" * COMPRESS_MSG_BODY_OVER_HOWMUCH
    data, bits = compress_for_send(body)
    assert bits == COMPRESSED_FLAG | 0x300
    assert data == zlib.compress(body, 5)
    data, bits = compress_for_send(body, type_=CompressionType.ZSTD, level=3)
    assert bits == 0x201 and decompress(data, CompressionType.ZSTD) == body
    data, bits = compress_for_send(body, with_type_bits=False)
    assert bits == COMPRESSED_FLAG and decompress_body(data, bits) == body
    with pytest.raises(ValueError, match="only ZLIB"):
        compress_for_send(body, type_=CompressionType.LZ4, with_type_bits=False)
