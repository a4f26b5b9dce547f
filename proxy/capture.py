"""The rmqtwin capture format (version 1): writer with size-based rotation, reader over all segments.

The layout is specified in ``docs/capture-format.md``; this module is its reference implementation.
A capture is a series of segment files ``FILE``, ``FILE.1``, ``FILE.2``, ...; each starts with its own
file header, so any segment can be read alone, and every record carries both endpoints for the same
reason. All integers are little-endian.
"""

from __future__ import annotations

import ipaddress
import mmap
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import orjson

from rmqtwin.codec.frame import whole_frame_prefix
from rmqtwin.proxy.wire import masked_at, summary_at

__all__ = [
    "DIR_TO_CLIENT",
    "DIR_TO_SERVER",
    "FLAG_DECODED",
    "FLAG_RAW",
    "FLAG_REDACTED",
    "FLAG_REWRITTEN",
    "FORMAT_VERSION",
    "MAGIC",
    "REC_CLOSE",
    "REC_FRAME",
    "REC_OPEN",
    "CaptureFormatError",
    "CaptureReader",
    "CaptureWriter",
    "Endpoint",
    "Record",
    "event_record",
    "frame_record",
    "pack_frame_records",
    "pack_record",
    "read_records",
    "segment_paths",
]

MAGIC = b"RMQTWCAP"
FORMAT_VERSION = 1

# File header: magic, u16 major version, u16 minor version, u32 segment index, u64 created (wall ns),
# u32 length of the UTF-8 JSON metadata that follows.
_FILE_HEADER = struct.Struct("<8sHHIQI")

# Record: u32 length of what follows the length word, then this fixed part, then `data_len` bytes.
_RECORD = struct.Struct("<BBBBQQQ16sH16sHiiiI")
_LEN = struct.Struct("<I")
_LEN_RECORD = struct.Struct("<I" + _RECORD.format.lstrip("<"))

REC_FRAME = 1
"""One remoting frame (or an unframed chunk, with FLAG_RAW), exactly as it crossed the wire."""
REC_OPEN = 2
"""A connection opened; data is UTF-8 JSON with its kind (``namesrv``/``broker``) and addresses."""
REC_CLOSE = 3
"""A connection closed; data is the UTF-8 reason."""

DIR_TO_SERVER = 0
"""Client to upstream (namesrv or broker)."""
DIR_TO_CLIENT = 1
"""Upstream to client (responses, and broker-initiated requests)."""

FLAG_DECODED = 0x01
"""The header decoded: serialize type, code, opaque and flag are valid."""
FLAG_REDACTED = 0x02
"""ACL credential values in the recorded copy were overwritten with ``*`` (the forwarded bytes were not)."""
FLAG_REWRITTEN = 0x04
"""The proxy forwarded a rewritten frame (broker addresses); the record holds the original bytes."""
FLAG_RAW = 0x08
"""Not a frame: bytes of a stream that could not be framed (bad length word), forwarded unchanged."""

_NO_VALUE = -1


class CaptureFormatError(ValueError):
    """The file is not an rmqtwin capture, or is of a version this reader cannot read."""


_PACKED: dict[str, bytes] = {}


@dataclass(frozen=True, slots=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    def packed(self) -> bytes:
        """The host as 16 bytes (IPv4 as IPv4-mapped IPv6; a name that is no address as zeros)."""
        raw = _PACKED.get(self.host)
        if raw is None:
            try:
                addr = ipaddress.ip_address(self.host)
            except ValueError:
                raw = bytes(16)
            else:
                raw = b"\0" * 10 + b"\xff\xff" + addr.packed if addr.version == 4 else addr.packed
            if len(_PACKED) < 65536:
                _PACKED[self.host] = raw
        return raw

    @classmethod
    def unpacked(cls, raw: bytes, port: int) -> Endpoint:
        addr = ipaddress.IPv6Address(raw)
        mapped = addr.ipv4_mapped
        return cls(str(mapped) if mapped is not None else str(addr), port)


UNKNOWN_ENDPOINT = Endpoint("::", 0)


@dataclass(slots=True)
class Record:
    """One capture record; for REC_FRAME ``data`` is the whole frame including its length word."""

    type: int
    direction: int
    flags: int
    serialize_type: int
    mono_ns: int
    wall_ns: int
    conn_id: int
    client: Endpoint
    server: Endpoint
    code: int
    opaque: int
    rpc_flag: int
    data: bytes

    @property
    def decoded(self) -> bool:
        return bool(self.flags & FLAG_DECODED)

    @property
    def is_response(self) -> bool:
        return self.decoded and bool(self.rpc_flag & 1)

    def meta(self) -> dict[str, object]:
        """The JSON payload of a REC_OPEN record."""
        value = orjson.loads(self.data) if self.data else {}
        return value if isinstance(value, dict) else {}


def pack_record(rec: Record) -> bytes:
    client_packed = rec.client.packed()
    server_packed = rec.server.packed()
    fixed = _RECORD.pack(
        rec.type,
        rec.direction,
        rec.flags,
        rec.serialize_type,
        rec.mono_ns,
        rec.wall_ns,
        rec.conn_id,
        client_packed,
        rec.client.port,
        server_packed,
        rec.server.port,
        rec.code,
        rec.opaque,
        rec.rpc_flag,
        len(rec.data),
    )
    return _LEN.pack(len(fixed) + len(rec.data)) + fixed + rec.data


def segment_paths(path: str | os.PathLike[str]) -> list[Path]:
    """Existing segments of a capture in order: ``FILE`` then ``FILE.1``, ``FILE.2``, ... (gaps allowed
    at the front, where a capped capture deleted its oldest segments)."""
    base = Path(path)
    found: dict[int, Path] = {}
    if base.exists():
        found[0] = base
    parent = base.parent if str(base.parent) else Path(".")
    prefix = base.name + "."
    if parent.is_dir():
        for entry in parent.iterdir():
            if entry.name.startswith(prefix) and entry.name[len(prefix) :].isdigit():
                found[int(entry.name[len(prefix) :])] = entry
    return [found[k] for k in sorted(found)]


class CaptureWriter:
    """Appends records to a capture, rotating segments by size; synchronous (the recorder's thread).

    ``rotate_bytes`` starts a new segment once the current one is at least that large;
    ``max_segments`` (0 = unlimited) deletes the oldest segments beyond that many, capping disk use.
    ``close`` flushes and fsyncs the current segment.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        rotate_bytes: int = 256 * 1024 * 1024,
        max_segments: int = 0,
        metadata: dict[str, object] | None = None,
        wall_ns: int = 0,
    ) -> None:
        self.path = Path(path)
        self.rotate_bytes = rotate_bytes
        self.max_segments = max_segments
        self.metadata = dict(metadata or {})
        self._created_ns = wall_ns
        self._segment_index = -1
        self._file: BinaryIO | None = None
        self._size = 0
        self.bytes_written = 0
        self.records_written = 0
        self._segments: list[Path] = []
        self._open_next()

    @property
    def segment_index(self) -> int:
        return self._segment_index

    def _segment_path(self, index: int) -> Path:
        return self.path if index == 0 else self.path.with_name(f"{self.path.name}.{index}")

    def _open_next(self) -> None:
        if self._file is not None:
            self._finish(self._file)
        self._segment_index += 1
        seg = self._segment_path(self._segment_index)
        seg.parent.mkdir(parents=True, exist_ok=True)
        self._file = open(seg, "wb", buffering=1024 * 1024)  # noqa: SIM115 - lives across calls
        meta = orjson.dumps(self.metadata)
        header = _FILE_HEADER.pack(MAGIC, FORMAT_VERSION, 0, self._segment_index, self._created_ns, len(meta))
        self._file.write(header + meta)
        self._file.flush()  # a reader opening the segment at once sees a valid, empty capture
        self._size = len(header) + len(meta)
        self.bytes_written += self._size
        self._segments.append(seg)
        if self.max_segments and len(self._segments) > self.max_segments:
            for old in self._segments[: -self.max_segments]:
                old.unlink(missing_ok=True)
            del self._segments[: -self.max_segments]

    def write(self, rec: Record) -> None:
        self.write_packed(pack_record(rec))

    def write_packed(self, packed: bytes, data: bytes = b"") -> None:
        """Append one record made by :func:`pack_record` (or the two parts of
        :func:`pack_frame_records`); rotates first when the segment is full."""
        if self._file is None:
            raise ValueError("capture writer is closed")
        if self._size >= self.rotate_bytes:
            self._open_next()
            assert self._file is not None
        self._file.write(packed)
        if data:
            self._file.write(data)
        size = len(packed) + len(data)
        self._size += size
        self.bytes_written += size
        self.records_written += 1

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    @staticmethod
    def _finish(f: BinaryIO) -> None:
        f.flush()
        os.fsync(f.fileno())
        f.close()

    def close(self) -> None:
        if self._file is not None:
            self._finish(self._file)
            self._file = None

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class CaptureReader:
    """Reads every record of one segment file; a truncated last record (a crash mid-write) ends it."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        with open(self.path, "rb") as f:
            head = f.read(_FILE_HEADER.size)
            if len(head) < _FILE_HEADER.size or head[:8] != MAGIC:
                raise CaptureFormatError(f"{self.path}: not an rmqtwin capture (bad magic)")
            _, major, minor, index, created, meta_len = _FILE_HEADER.unpack(head)
            if major != FORMAT_VERSION:
                raise CaptureFormatError(f"{self.path}: capture format version {major} is not supported")
            self.version = (major, minor)
            self.segment_index = index
            self.created_ns = created
            self.metadata = orjson.loads(f.read(meta_len)) if meta_len else {}
            self._data_start = _FILE_HEADER.size + meta_len

    @property
    def data_start(self) -> int:
        """Where the first record begins in the segment file."""
        return self._data_start

    def records_in(self, data: bytes) -> list[Record]:
        """The whole records in ``data``, bytes of this segment read from a record boundary."""
        return list(self._records(data, 0, len(data)))

    def __iter__(self) -> Iterator[Record]:
        with open(self.path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size <= self._data_start:
                return
            # Mapped, not read: a 256 MiB segment costs page cache, not a 256 MiB bytes object.
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                yield from self._records(data, self._data_start, size)

    def _records(self, data: mmap.mmap | bytes, pos: int, end: int) -> Iterator[Record]:
        fixed_size = _RECORD.size
        unpack = _RECORD.unpack_from
        endpoints: dict[tuple[bytes, int], Endpoint] = {}
        while end - pos >= 4 + fixed_size:
            rec_len = _LEN.unpack_from(data, pos)[0]
            if pos + 4 + rec_len > end or rec_len < fixed_size:
                break
            (
                rtype,
                direction,
                flags,
                ser,
                mono,
                wall,
                conn,
                c_ip,
                c_port,
                s_ip,
                s_port,
                code,
                opaque,
                rpc_flag,
                data_len,
            ) = unpack(data, pos + 4)
            start = pos + 4 + fixed_size
            client = endpoints.get((c_ip, c_port))
            if client is None:
                client = endpoints[(c_ip, c_port)] = Endpoint.unpacked(c_ip, c_port)
            server = endpoints.get((s_ip, s_port))
            if server is None:
                server = endpoints[(s_ip, s_port)] = Endpoint.unpacked(s_ip, s_port)
            yield Record(
                rtype,
                direction,
                flags,
                ser,
                mono,
                wall,
                conn,
                client,
                server,
                code,
                opaque,
                rpc_flag,
                data[start : start + data_len],
            )
            pos += 4 + rec_len


def read_records(path: str | os.PathLike[str]) -> Iterator[Record]:
    """Every record of a capture across all its segments, in order."""
    segments = segment_paths(path)
    if not segments:
        raise FileNotFoundError(path)
    for seg in segments:
        yield from CaptureReader(seg)


def _frame_fields(frame: bytes, flags: int, redact: bool) -> tuple[bytes, int, int, int, int, int]:
    """(frame as recorded, flags, serialize type, code, opaque, rpc flag) for a FRAME record."""
    prefix = None if flags & FLAG_RAW else whole_frame_prefix(frame)
    peek = None if prefix is None else summary_at(frame, *prefix)
    if peek is None:
        return frame, flags, 255, -1, -1, -1
    if redact:
        assert prefix is not None
        masked = masked_at(frame, *prefix)
        if masked is not None:
            frame = masked
            flags |= FLAG_REDACTED
    return frame, flags | FLAG_DECODED, peek[0], peek[1], peek[2], peek[3]


def frame_record(
    *,
    direction: int,
    mono_ns: int,
    wall_ns: int,
    conn_id: int,
    client: Endpoint,
    server: Endpoint,
    frame: bytes,
    flags: int = 0,
    redact: bool = True,
) -> Record:
    """A REC_FRAME record for ``frame``, with its header peeked and credentials masked (``redact``)."""
    data, flags, ser, code, opaque, rpc_flag = _frame_fields(frame, flags, redact)
    return Record(
        REC_FRAME,
        direction,
        flags,
        ser,
        mono_ns,
        wall_ns,
        conn_id,
        client,
        server,
        code,
        opaque,
        rpc_flag,
        data,
    )


def pack_frame_records(  # noqa: PLR0917 - the recorder's hot path, positional on purpose
    direction: int,
    mono_ns: int,
    wall_ns: int,
    conn_id: int,
    client: Endpoint,
    server: Endpoint,
    frames: list[bytes],
    flags: int = 0,
    redact: bool = True,
) -> list[bytes]:
    """What ``pack_record(frame_record(...))`` gives for each of ``frames``, which arrived together (they
    share all but the frame), without the Records: head, data, head, data, ..."""
    client_raw, client_port = client.packed(), client.port
    server_raw, server_port = server.packed(), server.port
    pack = _LEN_RECORD.pack
    size = _RECORD.size
    out: list[bytes] = []
    for frame in frames:
        data, frame_flags, ser, code, opaque, rpc_flag = _frame_fields(frame, flags, redact)
        out.append(
            pack(
                size + len(data),
                REC_FRAME,
                direction,
                frame_flags,
                ser,
                mono_ns,
                wall_ns,
                conn_id,
                client_raw,
                client_port,
                server_raw,
                server_port,
                code,
                opaque,
                rpc_flag,
                len(data),
            )
        )
        out.append(data)
    return out


def event_record(
    rtype: int, *, mono_ns: int, wall_ns: int, conn_id: int, client: Endpoint, server: Endpoint, data: bytes
) -> Record:
    return Record(rtype, 0, 0, 255, mono_ns, wall_ns, conn_id, client, server, -1, -1, -1, data)
