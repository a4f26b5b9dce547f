"""Length-prefixed framing of the remoting protocol.

A frame is ``int32 length`` followed by ``length`` bytes (``int32 serializeType<<24 | headerLength``,
header, body). Java reads it with Netty's ``LengthFieldBasedFrameDecoder(frameMaxLength, 0, 4, 0, 4)``:
the maximum applies to the whole frame *including* the length word, a negative length is corrupt, and
any decoding failure closes the channel. :class:`FrameDecoder` reproduces that incrementally.
"""

from __future__ import annotations

import struct

from rmqtwin.codec.codes import SerializeType
from rmqtwin.codec.errors import CodecError, FrameError, FrameTooLarge

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FrameDecoder",
    "encode_frame",
    "frame_prefix",
    "split_header",
]

DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024
"""``com.rocketmq.remoting.frameMaxLength`` default: 16 MiB for the whole frame, length word included."""

_INT = struct.Struct(">i")
_PREFIX = struct.Struct(">iI")
_MIN_LENGTH = 4  # the header-length word is mandatory


class FrameDecoder:
    """Incremental splitter: bytes in any split, complete frames (without the length word) out.

    Work and memory are linear in the bytes fed. When a chunk starts on a frame boundary its frames are
    sliced straight out of the chunk; only the unfinished tail of a chunk is kept, in one ``bytearray``
    that grows by appending, so a 16 MiB frame arriving in 16 KiB pieces is copied once. The length word
    is checked as soon as its 4 bytes are known, before any of the body is buffered. After an error the
    decoder is poisoned and raises the same error again: the connection must be closed.
    :meth:`feed_until_error` also returns the frames that preceded the error.
    """

    __slots__ = ("_buf", "_error", "_max", "_need")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 8:
            raise ValueError("max_frame_size must allow at least the 8-byte frame prefix")
        self._max = max_frame_size
        self._buf = bytearray()
        self._need = 0  # total bytes (length word + frame) of the frame being buffered, 0 = unknown yet
        self._error: CodecError | None = None

    @property
    def max_frame_size(self) -> int:
        return self._max

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that is not complete yet."""
        return len(self._buf)

    def _check_length(self, length: int) -> int:
        if length < _MIN_LENGTH:
            self._error = FrameError(f"bad frame length {length}")
            raise self._error
        if length > self._max - 4:
            self._error = FrameTooLarge(length + 4, self._max)
            raise self._error
        return length + 4

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Consume ``data``; return every frame it completes (header-length word, header and body).

        Raises the :class:`~rmqtwin.codec.errors.CodecError` of a bad length word; frames completed
        earlier in the same ``data`` are then lost (use :meth:`feed_until_error` to keep them).
        """
        frames, error = self.feed_until_error(data)
        if error is not None:
            raise error
        return frames

    def feed_until_error(self, data: bytes | bytearray | memoryview) -> tuple[list[bytes], CodecError | None]:
        """Like :meth:`feed`, but return the frames completed before a bad length word with the error.

        Netty hands the frames it split before a corrupt one to the pipeline before the channel closes;
        this keeps them too. The error is None when all of ``data`` was good; once it is set the decoder
        is poisoned and every later call returns no frames and the same error.
        """
        if self._error is not None:
            return [], self._error
        frames: list[bytes] = []
        try:
            self._split(data, frames)
        except CodecError as exc:
            return frames, exc
        return frames, None

    def _split(self, data: bytes | bytearray | memoryview, frames: list[bytes]) -> None:
        view = memoryview(data)
        end = len(view)
        pos = 0
        buf = self._buf
        if buf:
            # Finish the frame that an earlier chunk started, taking only the bytes it still needs.
            if not self._need:
                take = min(4 - len(buf), end)
                buf += view[:take]
                pos = take
                if len(buf) < 4:
                    return
                self._need = self._check_length(_INT.unpack_from(buf, 0)[0])
            take = min(self._need - len(buf), end - pos)
            buf += view[pos : pos + take]
            pos += take
            if len(buf) < self._need:
                return
            frames.append(bytes(memoryview(buf)[4:]))
            buf.clear()
            self._need = 0
        # Frames that lie wholly inside this chunk are sliced out of it directly.
        unpack = _INT.unpack_from
        while end - pos >= 4:
            total = self._check_length(unpack(view, pos)[0])
            if end - pos < total:
                self._need = total
                break
            frames.append(bytes(view[pos + 4 : pos + total]))
            pos += total
        if pos < end:
            buf += view[pos:]


def frame_prefix(header_length: int, body_length: int, serialize_type: int = SerializeType.JSON) -> bytes:
    """The 8 bytes before the header: total length and ``serializeType << 24 | headerLength``."""
    return _PREFIX.pack(4 + header_length + body_length, (serialize_type << 24) | (header_length & 0xFFFFFF))


def encode_frame(header: bytes, body: bytes | None = None, serialize_type: int = SerializeType.JSON) -> bytes:
    """A whole frame, length word included, from an already serialized header and an optional body."""
    if len(header) > 0xFFFFFF:
        raise FrameError(f"header of {len(header)} bytes does not fit the 24-bit header length")
    if body:
        return b"".join((frame_prefix(len(header), len(body), serialize_type), header, body))
    return frame_prefix(len(header), 0, serialize_type) + header


def split_header(frame: bytes | bytearray | memoryview) -> tuple[int, int]:
    """Serialize type and header length of a frame (as :meth:`FrameDecoder.feed` returns it).

    Raises :class:`FrameError` like Java's ``RemotingCommand.decode`` for a header that does not fit.
    """
    if len(frame) < 4:
        raise FrameError(f"frame of {len(frame)} bytes has no header-length word")
    word = _INT.unpack_from(frame, 0)[0]
    header_length = word & 0xFFFFFF
    if header_length > len(frame) - 4:
        raise FrameError(f"decode error, bad header length: {header_length}")
    return (word >> 24) & 0xFF, header_length
