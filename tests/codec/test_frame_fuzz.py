"""Hostile and random streams: only CodecError escapes, buffering stays bounded."""

from __future__ import annotations

import contextlib
import itertools
import struct

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rmqtwin.codec.command import RemotingCommand, decode_command, encode_command
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.frame import FrameDecoder

MAX = 4096


def _drive(chunks: list[bytes]) -> None:
    decoder = FrameDecoder(max_frame_size=MAX)
    try:
        for chunk in chunks:
            for frame in decoder.feed(chunk):
                assert len(frame) <= MAX - 4
                decode_command(frame)
            assert decoder.buffered <= MAX + 8
    except CodecError:
        pass


def _valid_frames() -> st.SearchStrategy[bytes]:
    return st.builds(
        lambda code, remark, ext, body, st_: encode_command(
            RemotingCommand(code=code, remark=remark, ext_fields=ext, body=body or None, serialize_type=st_)
        ),
        st.integers(-(2**15), 2**15 - 1),
        st.none() | st.text(max_size=8),
        st.none()
        | st.dictionaries(st.text(min_size=1, max_size=4), st.text(min_size=1, max_size=4), max_size=4),
        st.binary(max_size=16),
        st.sampled_from([0, 1]),
    )


@st.composite
def hostile_streams(draw: st.DrawFn) -> list[bytes]:
    pieces = draw(
        st.lists(
            st.one_of(
                _valid_frames(),
                _valid_frames().map(lambda f: f[: len(f) // 2]),  # truncated
                _valid_frames().flatmap(  # one byte flipped
                    lambda f: st.integers(0, len(f) - 1).map(
                        lambda i: f[:i] + bytes([f[i] ^ 0xFF]) + f[i + 1 :]
                    )
                ),
                st.binary(max_size=64),  # noise
                st.integers(-(2**31), 2**31 - 1).map(lambda n: struct.pack(">i", n)),  # bare length words
                st.builds(  # lying header length / serialize type
                    lambda hl, stype, rest: struct.pack(">iI", 4 + len(rest), (stype << 24) | hl) + rest,
                    st.integers(0, 0xFFFFFF),
                    st.integers(0, 255),
                    st.binary(max_size=40),
                ),
            ),
            max_size=12,
        )
    )
    stream = b"".join(pieces)
    cuts = sorted(draw(st.sets(st.integers(0, max(len(stream), 1)), max_size=10)))
    bounds = [0, *cuts, len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds) if a <= b]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_streams())
def test_hostile_streams_only_raise_codec_errors(chunks: list[bytes]) -> None:
    _drive(chunks)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=200), max_size=20))
def test_random_bytes_only_raise_codec_errors(chunks: list[bytes]) -> None:
    _drive(chunks)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_decode_command_on_arbitrary_frames(frame: bytes) -> None:
    with contextlib.suppress(CodecError):
        decode_command(frame)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60), st.sampled_from([b"", b"body"]))
def test_arbitrary_json_text_headers(text: str, body: bytes) -> None:
    header = text.encode("utf-8", "surrogatepass")
    with contextlib.suppress(CodecError):
        decode_command(struct.pack(">I", len(header)) + header + body)
