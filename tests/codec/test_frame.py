"""FrameDecoder: any split of the byte stream yields the same frames; limits are checked up front."""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest

from rmqtwin.codec.errors import CodecError, FrameError, FrameTooLarge
from rmqtwin.codec.frame import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame, split_header


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def _payloads(rnd: random.Random, count: int) -> list[bytes]:
    # each payload starts with a plausible header-length word so the frames are realistic
    out = []
    for i in range(count):
        header = b'{"code":%d}' % i
        out.append(struct.pack(">I", len(header)) + header + rnd.randbytes(rnd.choice([0, 1, 7, 300])))
    return out


def test_default_limit_is_netty_frame_max_length() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 16777216
    assert FrameDecoder().max_frame_size == DEFAULT_MAX_FRAME_SIZE


def test_many_frames_in_one_chunk() -> None:
    payloads = _payloads(random.Random(1), 50)
    decoder = FrameDecoder()
    assert decoder.feed(b"".join(_frame(p) for p in payloads)) == payloads
    assert decoder.buffered == 0


def test_byte_at_a_time() -> None:
    payloads = _payloads(random.Random(2), 10)
    stream = b"".join(_frame(p) for p in payloads)
    decoder = FrameDecoder()
    got: list[bytes] = []
    for i in range(len(stream)):
        got += decoder.feed(stream[i : i + 1])
    assert got == payloads
    assert decoder.buffered == 0


@pytest.mark.parametrize("seed", range(20))
def test_random_splits(seed: int) -> None:
    rnd = random.Random(seed)
    payloads = _payloads(rnd, 40)
    stream = b"".join(_frame(p) for p in payloads)
    cuts = sorted(rnd.sample(range(1, len(stream)), rnd.randint(1, 60)))
    decoder = FrameDecoder()
    got: list[bytes] = []
    for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        chunk = stream[a:b]
        got += decoder.feed(rnd.choice([bytes, bytearray, memoryview])(chunk))
    assert got == payloads


def test_empty_feed_and_partial_length_word() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(b"") == []
    assert decoder.feed(b"\x00\x00") == []
    assert decoder.buffered == 2
    assert decoder.feed(b"\x00\x05\x00\x00\x00\x01") == []
    assert decoder.feed(b"{") == [b"\x00\x00\x00\x01{"]


def test_sixteen_mib_frame_in_16_kib_chunks_is_copied_linearly() -> None:
    payload = struct.pack(">I", 2) + b"{}" + bytes(DEFAULT_MAX_FRAME_SIZE - 4 - 6)
    stream = _frame(payload)
    assert len(stream) == DEFAULT_MAX_FRAME_SIZE  # the largest frame Java accepts
    chunks = [stream[i : i + 16384] for i in range(0, len(stream), 16384)]
    decoder = FrameDecoder()
    tracemalloc.start()
    try:
        fed = 0
        for chunk in chunks[:-1]:
            assert decoder.feed(chunk) == []
            fed += len(chunk)
            assert decoder.buffered == fed  # bytes accumulate once, nothing is re-parsed or dropped
        frames = decoder.feed(chunks[-1])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert frames == [payload]
    # one growing buffer plus the finished frame: no per-chunk copies of the whole buffer
    assert peak < 3 * len(stream)


def test_oversize_length_rejected_before_buffering() -> None:
    decoder = FrameDecoder(max_frame_size=1024)
    with pytest.raises(FrameTooLarge) as info:
        decoder.feed(struct.pack(">i", 1021))  # 1021 + 4 > 1024, and no body has been sent
    assert info.value.length == 1025 and info.value.max_frame_size == 1024
    assert decoder.buffered == 0
    # poisoned: the connection must be closed, further input is refused
    with pytest.raises(FrameTooLarge):
        decoder.feed(b"\x00")


def test_oversize_detected_when_length_word_completes_across_feeds() -> None:
    decoder = FrameDecoder(max_frame_size=1024)
    assert decoder.feed(b"\x00\x00") == []
    with pytest.raises(FrameTooLarge):
        decoder.feed(b"\x10\x00" + bytes(100))
    assert decoder.buffered <= 4


def test_largest_allowed_frame_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_size=64)
    payload = struct.pack(">I", 0) + bytes(56)  # 4 + 60 = 64 bytes in all
    assert decoder.feed(_frame(payload)) == [payload]


@pytest.mark.parametrize("length", [-1, -(2**31), 0, 3])
def test_negative_or_short_length_is_a_frame_error(length: int) -> None:
    decoder = FrameDecoder()
    good = _frame(struct.pack(">I", 0))
    with pytest.raises(FrameError) as info:
        decoder.feed(good + struct.pack(">i", length) + b"rest")
    assert not isinstance(info.value, FrameTooLarge)
    with pytest.raises(CodecError):
        decoder.feed(good)


def test_encode_frame_and_split_header() -> None:
    raw = encode_frame(b"HDR", b"body", 1)
    assert raw == b"\x00\x00\x00\x0b\x01\x00\x00\x03HDRbody"
    assert split_header(raw[4:]) == (1, 3)
    assert encode_frame(b"{}") == b"\x00\x00\x00\x06\x00\x00\x00\x02{}"
    with pytest.raises(FrameError):
        split_header(b"\x00\x00\x00\x09{}")
    with pytest.raises(ValueError):
        FrameDecoder(max_frame_size=4)


def test_feed_until_error_keeps_the_frames_before_a_bad_length() -> None:
    rnd = random.Random(7)
    payloads = _payloads(rnd, 3)
    stream = b"".join(_frame(p) for p in payloads) + struct.pack(">i", -5) + _frame(payloads[0])
    # the first frame arrives split across feeds, the rest with the bad length word in one chunk
    decoder = FrameDecoder()
    assert decoder.feed_until_error(stream[:3]) == ([], None)
    frames, error = decoder.feed_until_error(stream[3:])
    assert frames == payloads
    assert isinstance(error, FrameError) and not isinstance(error, FrameTooLarge)
    # poisoned: no frames, the same error
    assert decoder.feed_until_error(_frame(payloads[1])) == ([], error)
    with pytest.raises(FrameError):
        decoder.feed(_frame(payloads[1]))


def test_feed_until_error_reports_an_oversize_frame_after_good_ones() -> None:
    decoder = FrameDecoder(max_frame_size=1024)
    good = struct.pack(">I", 0) + bytes(10)
    frames, error = decoder.feed_until_error(_frame(good) * 2 + struct.pack(">i", 2000))
    assert frames == [good, good]
    assert isinstance(error, FrameTooLarge) and error.length == 2004


def test_a_chunk_of_one_whole_frame_is_handed_on_uncopied_and_several_are_sliced_exactly() -> None:
    frames = [_frame(p) for p in _payloads(random.Random(7), 3)]
    one = frames[0]
    keeping = FrameDecoder(keep_length_word=True)
    assert keeping.feed(one)[0] is one
    # several in one chunk, from bytes and from a bytearray: the same frames either way
    assert FrameDecoder(keep_length_word=True).feed(b"".join(frames)) == frames
    assert FrameDecoder(keep_length_word=True).feed(bytearray(b"".join(frames))) == frames
    assert FrameDecoder().feed(b"".join(frames)) == [f[4:] for f in frames]
