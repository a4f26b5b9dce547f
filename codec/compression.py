"""Message body compression as the Java producer and consumer do it, and the sysFlag bits that announce it.

Java side: ``common/.../compression/{CompressionType,ZlibCompressor,Lz4Compressor,ZstdCompressor}.java``
(present from 4.9.4 and in 5.x) and ``DefaultMQProducerImpl.tryToCompressMessage``.

* sysFlag bit 0 (``COMPRESSED_FLAG``) says the body is compressed; bits 8-10 carry the type
  (LZ4 = 1, ZSTD = 2, ZLIB = 3). Type 0 means ZLIB: that is what 4.9.0-4.9.3 producers and the Go
  client send (they only set bit 0).
* ZLIB is ``java.util.zip.Deflater(level)`` behind a ``DeflaterOutputStream``: an RFC 1950 zlib stream.
* LZ4 is an lz4-java ``LZ4FrameOutputStream`` frame: 4 MiB blocks, independent blocks, no content size,
  no checksums. lz4-java's reader rejects frames whose BLOCK_INDEPENDENCE bit is clear ("Dependent block
  stream is unsupported"), and python-lz4 links blocks by default, so ``block_linked=False`` is essential.
* ZSTD is a zstd-jni ``ZstdOutputStream(level)`` frame: streaming, so the frame header has no content size
  and ``ZstdDecompressor().decompress`` cannot size its output; decoding goes through a streaming reader.
* The producer compresses a single message whose body is at least ``compressMsgBodyOverHowmuch``
  (4096) bytes at ``rocketmq.message.compressLevel`` (5); batches are never compressed.
"""

from __future__ import annotations

import zlib
from enum import IntEnum

import lz4.frame
import zstandard

from rmqtwin.codec.errors import BodyDecompressError

__all__ = [
    "COMPRESSED_FLAG",
    "COMPRESSION_LZ4_TYPE",
    "COMPRESSION_TYPE_COMPARATOR",
    "COMPRESSION_ZLIB_TYPE",
    "COMPRESSION_ZSTD_TYPE",
    "COMPRESS_MSG_BODY_OVER_HOWMUCH",
    "DEFAULT_COMPRESS_LEVEL",
    "CompressionType",
    "clear_compressed_flag",
    "compress",
    "compress_for_send",
    "decompress",
    "decompress_body",
    "get_compression_type",
    "is_compressed",
]

#: ``MessageSysFlag.COMPRESSED_FLAG``: the stored/sent body is compressed.
COMPRESSED_FLAG = 0x1
#: ``MessageSysFlag.COMPRESSION_*_TYPE``: the compression type in bits 8-10 (4.9.4+ and 5.x).
COMPRESSION_LZ4_TYPE = 0x1 << 8
COMPRESSION_ZSTD_TYPE = 0x2 << 8
COMPRESSION_ZLIB_TYPE = 0x3 << 8
COMPRESSION_TYPE_COMPARATOR = 0x7 << 8

#: ``DefaultMQProducer.compressMsgBodyOverHowmuch``: bodies of at least this many bytes are compressed.
COMPRESS_MSG_BODY_OVER_HOWMUCH = 4 * 1024
#: ``rocketmq.message.compressLevel`` default.
DEFAULT_COMPRESS_LEVEL = 5


class CompressionType(IntEnum):
    """``org.apache.rocketmq.common.compression.CompressionType``: the value stored in sysFlag bits 8-10."""

    LZ4 = 1
    ZSTD = 2
    ZLIB = 3

    @classmethod
    def of(cls, name: str) -> CompressionType:
        """``CompressionType.of``: parse the ``rocketmq.message.compressType`` system property."""
        try:
            return cls[name.strip().upper()]
        except KeyError:
            raise ValueError(f"Unsupported compress type name: {name}") from None

    @classmethod
    def find_by_value(cls, value: int) -> CompressionType:
        """``CompressionType.findByValue``: 0 is ZLIB, for senders older than 4.9.4."""
        if value == 0:
            return cls.ZLIB
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"Unknown compress type value: {value}") from None

    @property
    def compression_flag(self) -> int:
        """``getCompressionFlag``: the sysFlag bits for this type (without ``COMPRESSED_FLAG``)."""
        return int(self) << 8


def get_compression_type(sys_flag: int) -> CompressionType:
    """``MessageSysFlag.getCompressionType``: the type announced by sysFlag (ZLIB when bits 8-10 are 0)."""
    return CompressionType.find_by_value((sys_flag & COMPRESSION_TYPE_COMPARATOR) >> 8)


def is_compressed(sys_flag: int) -> bool:
    """Whether sysFlag's ``COMPRESSED_FLAG`` is set."""
    return sys_flag & COMPRESSED_FLAG == COMPRESSED_FLAG


def clear_compressed_flag(sys_flag: int) -> int:
    """``MessageSysFlag.clearCompressedFlag``: 5.x clears bit 0 after decompressing (the type bits stay)."""
    return sys_flag & ~COMPRESSED_FLAG


def compress(
    body: bytes, type_: CompressionType = CompressionType.ZLIB, level: int = DEFAULT_COMPRESS_LEVEL
) -> bytes:
    """Compress ``body`` into the format the Java ``Compressor`` for ``type_`` writes.

    ``level`` applies to ZLIB and ZSTD; lz4-java's frame stream has no level (it always uses the fast
    compressor), so LZ4 ignores it like ``Lz4Compressor`` does.
    """
    if type_ is CompressionType.ZLIB:
        return zlib.compress(body, level)
    if type_ is CompressionType.LZ4:
        # A streaming compressor, so the descriptor keeps the 4 MiB block size lz4-java writes (the one-shot
        # API shrinks it to fit the input).
        ctx = lz4.frame.LZ4FrameCompressor(
            block_size=lz4.frame.BLOCKSIZE_MAX4MB,
            block_linked=False,
            compression_level=0,
            content_checksum=False,
        )
        return bytes(ctx.begin() + ctx.compress(body) + ctx.flush())
    if type_ is CompressionType.ZSTD:
        compressor = zstandard.ZstdCompressor(level=level).compressobj()
        return compressor.compress(body) + compressor.flush()
    raise ValueError(f"Unsupported compress type: {type_!r}")


def decompress(body: bytes | bytearray | memoryview, type_: CompressionType = CompressionType.ZLIB) -> bytes:
    """Decompress a body written by any producer; raises :class:`BodyDecompressError` when it is corrupt.

    Like the Java streams, data after the end of a zlib stream is ignored and several concatenated
    LZ4 or ZSTD frames decode to their concatenation.
    """
    try:
        if type_ is CompressionType.ZLIB:
            inflater = zlib.decompressobj()
            out = inflater.decompress(body)
            if not inflater.eof:
                raise BodyDecompressError("truncated zlib stream")
            return out
        if type_ is CompressionType.LZ4:
            return _lz4_decompress_frames(bytes(body))
        if type_ is CompressionType.ZSTD:
            return _zstd_decompress_frames(bytes(body))
    except BodyDecompressError:
        raise
    except (zlib.error, RuntimeError, zstandard.ZstdError, ValueError) as exc:
        raise BodyDecompressError(f"cannot decompress {type_.name} body: {exc}") from exc
    raise ValueError(f"Unsupported compress type: {type_!r}")


def _lz4_decompress_frames(data: bytes) -> bytes:
    """Decode one or more concatenated LZ4 frames (``LZ4FrameInputStream`` reads on after an end mark)."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        ctx = lz4.frame.LZ4FrameDecompressor()
        out.append(ctx.decompress(data[pos:]))
        if not ctx.eof:
            raise BodyDecompressError("truncated lz4 frame")
        pos = len(data) - len(ctx.unused_data or b"")
    return b"".join(out)


def _zstd_decompress_frames(data: bytes) -> bytes:
    """Decode one or more concatenated zstd frames, with or without a content size in their headers."""
    out: list[bytes] = []
    dctx = zstandard.ZstdDecompressor()
    while data:
        reader = dctx.decompressobj()
        out.append(reader.decompress(data))
        if not reader.eof:
            raise BodyDecompressError("truncated zstd frame")
        data = reader.unused_data
    return b"".join(out)


def decompress_body(body: bytes | bytearray | memoryview, sys_flag: int) -> bytes:
    """Decompress ``body`` as sysFlag announces it; return it unchanged when ``COMPRESSED_FLAG`` is clear."""
    if sys_flag & COMPRESSED_FLAG != COMPRESSED_FLAG:
        return bytes(body)
    try:
        type_ = get_compression_type(sys_flag)
    except ValueError as exc:
        raise BodyDecompressError(str(exc)) from exc
    return decompress(body, type_)


def compress_for_send(
    body: bytes,
    *,
    type_: CompressionType = CompressionType.ZLIB,
    level: int = DEFAULT_COMPRESS_LEVEL,
    threshold: int = COMPRESS_MSG_BODY_OVER_HOWMUCH,
    with_type_bits: bool = True,
) -> tuple[bytes, int]:
    """What ``DefaultMQProducerImpl`` does to a single message body: ``(body, sysFlag bits to OR in)``.

    Bodies shorter than ``threshold`` are sent as they are (bits 0). ``with_type_bits=False`` gives what a
    4.9.0-4.9.3 producer or the Go client sends: only ``COMPRESSED_FLAG``, which readers take as ZLIB.
    """
    if len(body) < threshold:
        return body, 0
    if not with_type_bits and type_ is not CompressionType.ZLIB:
        raise ValueError("only ZLIB can be announced without compression type bits")
    bits = COMPRESSED_FLAG | (type_.compression_flag if with_type_bits else 0)
    return compress(body, type_, level), bits
