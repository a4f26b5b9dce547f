"""The 8-byte frame prefix of the remoting protocol, and everything that cuts a stream into frames.

A frame is ``int32 length`` followed by ``length`` bytes: ``int32 serializeType<<24 | headerLength``
(the header mark), header, body. Java reads it with Netty's
``LengthFieldBasedFrameDecoder(frameMaxLength, 0, 4, 0, 4)``: the maximum applies to the whole frame
*including* the length word, a negative length is corrupt, and any decoding failure closes the channel.
:class:`FrameDecoder` reproduces that incrementally; :class:`FrameSplitter` is its variant for a proxy,
which keeps the length word and, instead of failing, passes an unframeable stream on as raw chunks.
This module is the one place that knows the prefix: the command codec, the proxy and the dissectors
read it through :func:`split_header`, :func:`whole_frame_prefix` and :func:`split_whole_frame`.
"""

from __future__ import annotations

import struct

from rmqtwin.codec.codes import SerializeType
from rmqtwin.codec.errors import CodecError, FrameError, FrameTooLarge

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "HEADER_LENGTH_MASK",
    "LENGTH_WORD_SIZE",
    "ONEWAY_FLAG",
    "PREFIX_SIZE",
    "RESPONSE_FLAG",
    "FlagBits",
    "FrameDecoder",
    "FrameSplitter",
    "encode_frame",
    "frame_prefix",
    "header_length",
    "split_header",
    "split_whole_frame",
    "whole_frame_prefix",
]

DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024
"""``com.rocketmq.remoting.frameMaxLength`` default: 16 MiB for the whole frame, length word included."""

LENGTH_WORD_SIZE = 4
"""The ``int32`` total length in front of every frame."""
PREFIX_SIZE = 8
"""Length word plus header mark: what precedes the header."""
HEADER_LENGTH_MASK = 0xFFFFFF
"""The header mark's low 24 bits are the header length, its high byte the serialize type."""

RESPONSE_FLAG = 1
"""``flag`` bit 0: the command is a response (``RemotingCommand.RPC_TYPE``)."""
ONEWAY_FLAG = 2
"""``flag`` bit 1: the request expects no response (``RemotingCommand.RPC_ONEWAY``)."""

_INT = struct.Struct(">i")
_UINT = struct.Struct(">I")
_PREFIX = struct.Struct(">iI")
_UPREFIX = struct.Struct(">II")
_MIN_LENGTH = 4  # the header-length word is mandatory


class FlagBits:
    """``isResponseType`` and ``isOnewayRPC``: what a header's ``flag`` says, for every class that
    carries one (a decoded command, a proxy's peek at a frame)."""

    __slots__ = ()
    flag: int

    @property
    def is_response(self) -> bool:
        return bool(self.flag & RESPONSE_FLAG)

    @property
    def is_oneway(self) -> bool:
        return bool(self.flag & ONEWAY_FLAG)


class FrameDecoder:
    """Incremental splitter: bytes in any split, complete frames (without the length word) out.

    Work and memory are linear in the bytes fed. When a chunk starts on a frame boundary its frames are
    sliced straight out of the chunk; only the unfinished tail of a chunk is kept, in one ``bytearray``
    that grows by appending, so a 16 MiB frame arriving in 16 KiB pieces is copied once. The length word
    is checked as soon as its 4 bytes are known, before any of the body is buffered. After an error the
    decoder is poisoned and raises the same error again: the connection must be closed.
    :meth:`feed_until_error` also returns the frames that preceded the error.
    """

    __slots__ = ("_buf", "_error", "_max", "_need", "_skip", "_unframed")

    def __init__(
        self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE, *, keep_length_word: bool = False
    ) -> None:
        if max_frame_size < PREFIX_SIZE:
            raise ValueError("max_frame_size must allow at least the 8-byte frame prefix")
        self._max = max_frame_size
        self._buf = bytearray()
        self._need = 0  # total bytes (length word + frame) of the frame being buffered, 0 = unknown yet
        self._error: CodecError | None = None
        self._skip = 0 if keep_length_word else LENGTH_WORD_SIZE  # where a returned frame starts
        self._unframed = b""  # the bytes from the bad length word on, once the error is set

    @property
    def max_frame_size(self) -> int:
        return self._max

    @property
    def buffered(self) -> int:
        """Bytes held for a frame that is not complete yet."""
        return len(self._buf)

    def _frame_size(self, length: int) -> int:
        """Whole frame size for a good ``length``; else 0, with the decoder poisoned."""
        if _MIN_LENGTH <= length <= self._max - LENGTH_WORD_SIZE:
            return length + LENGTH_WORD_SIZE
        if length < _MIN_LENGTH:
            self._error = FrameError(f"bad frame length {length}")
        else:
            self._error = FrameTooLarge(length + LENGTH_WORD_SIZE, self._max)
        return 0

    def _fail(self, unframed: bytes) -> CodecError:
        """The error just set; ``unframed`` (the stream from the bad length word on) is kept for raw mode."""
        assert self._error is not None
        self._unframed = unframed
        return self._error

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
                self._need = self._frame_size(_INT.unpack_from(buf, 0)[0])
                if not self._need:
                    raise self._fail(bytes(buf) + view[pos:])
            take = min(self._need - len(buf), end - pos)
            buf += view[pos : pos + take]
            pos += take
            if len(buf) < self._need:
                return
            frames.append(bytes(memoryview(buf)[self._skip :]))
            buf.clear()
            self._need = 0
        # Frames that lie wholly inside this chunk are sliced out of it directly.
        unpack = _INT.unpack_from
        skip = self._skip
        longest = self._max - LENGTH_WORD_SIZE
        whole = data if type(data) is bytes else None  # sliced directly: no view object per frame
        while end - pos >= 4:
            length = unpack(view, pos)[0]
            if not _MIN_LENGTH <= length <= longest:  # as _frame_size, without a call per good frame
                self._frame_size(length)  # sets the error Netty gives for this length
                raise self._fail(bytes(view[pos:]))
            total = length + LENGTH_WORD_SIZE
            if end - pos < total:
                self._need = total
                break
            if whole is not None:  # a chunk that is exactly one whole frame is handed on uncopied
                frames.append(whole[pos + skip : pos + total])
            else:
                frames.append(bytes(view[pos + skip : pos + total]))
            pos += total
        if pos < end:
            buf += view[pos:]


class FrameSplitter(FrameDecoder):
    """A proxy's splitter: whole frames *with* their length word, and raw mode instead of an error.

    A proxy forwards bytes, not commands, so it must not stop at a length word Netty would reject (a
    TLS hello on a plain port, an HA stream): ``raw`` becomes true for good and the rest of the stream,
    the buffered bytes included, comes back as unframed chunks from :meth:`take_raw`.
    """

    __slots__ = ("_raw_out", "raw")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        super().__init__(max_frame_size, keep_length_word=True)
        self._raw_out: list[bytes] = []
        self.raw = False
        """True once a length word was impossible: framing stopped for the rest of the stream (a plain
        attribute, not a property: a proxy session reads it after every read)."""

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        if not self._buf and not self.raw and type(data) is bytes and len(data) >= LENGTH_WORD_SIZE:
            # A chunk that is exactly one whole frame (a proxy's usual read) is handed on as it is.
            length = _INT.unpack_from(data, 0)[0]
            if (
                length + LENGTH_WORD_SIZE == len(data)
                and _MIN_LENGTH <= length <= self._max - LENGTH_WORD_SIZE
            ):
                return [data]
        if self.raw:
            if data:
                self._raw_out.append(bytes(data))
            return []
        frames, error = self.feed_until_error(data)
        if error is not None:
            self.raw = True
            self._buf = bytearray()
            if self._unframed:
                self._raw_out.append(self._unframed)
                self._unframed = b""
        return frames

    def take_raw(self) -> list[bytes]:
        """Unframed chunks collected since the last call (only once ``raw`` is set)."""
        out, self._raw_out = self._raw_out, []
        return out


def frame_prefix(header_length: int, body_length: int, serialize_type: int = SerializeType.JSON) -> bytes:
    """The 8 bytes before the header: total length and ``serializeType << 24 | headerLength``."""
    mark = (serialize_type << 24) | (header_length & HEADER_LENGTH_MASK)
    return _PREFIX.pack(LENGTH_WORD_SIZE + header_length + body_length, mark)


def encode_frame(header: bytes, body: bytes | None = None, serialize_type: int = SerializeType.JSON) -> bytes:
    """A whole frame, length word included, from an already serialized header and an optional body."""
    if len(header) > HEADER_LENGTH_MASK:
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
    header_length = word & HEADER_LENGTH_MASK
    if header_length > len(frame) - 4:
        raise FrameError(f"decode error, bad header length: {header_length}")
    return (word >> 24) & 0xFF, header_length


def header_length(frame: bytes | bytearray | memoryview) -> int:
    """The header length a frame (without its length word) declares; 0 when it has none."""
    if len(frame) < 4:
        return 0
    return int(_UINT.unpack_from(frame)[0] & HEADER_LENGTH_MASK)


def whole_frame_prefix(frame: bytes | bytearray | memoryview) -> tuple[int, int] | None:
    """Serialize type and header length of a whole frame (length word included), or ``None``.

    ``None`` unless the length word matches ``len(frame)`` and the header fits: what a proxy or a
    dissector sees when a capture holds something that is not one remoting frame.
    """
    if len(frame) < PREFIX_SIZE:
        return None
    length, mark = _UPREFIX.unpack_from(frame, 0)
    header_length = mark & HEADER_LENGTH_MASK
    if length + LENGTH_WORD_SIZE != len(frame) or header_length > length - 4:
        return None
    return mark >> 24, header_length


def split_whole_frame(frame: bytes) -> tuple[int, bytes, bytes] | None:
    """(serialize type, header, body) of a whole frame (length word included), or ``None`` as above."""
    prefix = whole_frame_prefix(frame)
    if prefix is None:
        return None
    serialize_type, header_length = prefix
    header_end = PREFIX_SIZE + header_length
    return serialize_type, frame[PREFIX_SIZE:header_end], frame[header_end:]
