"""PySpark Python Data Sources: ``rmqcap`` (capture segments), ``pcap`` (tcpdump files) and
``rocketmq-store`` (a broker's store directory, read-only).

Readers yield Arrow record batches. The planning work (which files, where a large segment splits) is a
cheap driver-side scan of fixed-size record headers; each partition then reads only its byte range.
Damage (a truncated last record, an unknown format version, a corrupt record length, missing TCP
segments, non-RocketMQ flows, a torn commitlog tail) ends the readable part of a file and comes out as
a row of its own with ``skip_reason`` set, never silently.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Generic, TypeVar

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from rmqtwin.codec.message import MessageExt
from rmqtwin.spark import schemas

__all__ = [
    "DATA_SOURCES",
    "CaptureDataSource",
    "PcapDataSource",
    "StoreDataSource",
    "expand_inputs",
    "input_kind",
    "plan_capture",
]

BATCH_ROWS = 8192
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
"""A segment larger than this is read by several tasks, cut at record boundaries."""

_FILE_HEADER = struct.Struct("<8sHHIQI")
_LEN = struct.Struct("<I")
_CONN = struct.Struct("<Q")
_CONN_AT = 24  # the record's connection id: after its length, 4 one-byte fields and two timestamps
_FIXED = 80  # the record's fixed part after its length word
_MAX_DATA = 16 * 1024 * 1024 + 4
PCAP_MAGICS = (
    b"\xd4\xc3\xb2\xa1",
    b"\xa1\xb2\xc3\xd4",
    b"\x4d\x3c\xb2\xa1",
    b"\xa1\xb2\x3c\x4d",
    b"\x0a\x0d\x0d\x0a",
)


def input_kind(path: str | os.PathLike[str]) -> str:
    """``store`` (a directory with a commitlog), ``capture``, ``pcap`` or ``unknown``."""
    p = Path(path)
    if p.is_dir():
        return "store" if (p / "commitlog").is_dir() else "unknown"
    try:
        with open(p, "rb") as f:
            head = f.read(8)
    except OSError:
        return "unknown"
    if head == b"RMQTWCAP":
        return "capture"
    if head[:4] in PCAP_MAGICS:
        return "pcap"
    return "unknown"


def expand_inputs(paths: Sequence[str]) -> list[tuple[str, str]]:
    """(kind, path) per input: captures by their base name (segments found by the reader), pcaps,
    stores; a directory that is no store is searched for captures and pcaps."""
    from rmqtwin.proxy.capture import segment_paths

    out: list[tuple[str, str]] = []
    seen: set[str] = set()
    for raw in paths:
        p = Path(raw)
        candidates = (
            sorted(x for x in p.rglob("*") if x.is_file())
            if input_kind(p) == "unknown" and p.is_dir()
            else [p]
        )
        for c in candidates:
            kind = input_kind(c)
            if kind == "capture":
                base = _capture_base(c)
                if str(base) in seen:
                    continue
                seen.add(str(base))
                if not segment_paths(base):
                    base = c
                out.append((kind, str(base)))
            elif kind != "unknown" or c == p:
                out.append((kind, str(c)))
    return out


def _capture_base(path: Path) -> Path:
    """``FILE`` for ``FILE.3``."""
    stem, _, suffix = path.name.rpartition(".")
    if suffix.isdigit() and stem and (path.parent / stem).exists():
        return path.parent / stem
    if suffix.isdigit() and stem:
        return path.parent / stem
    return path


# ------------------------------------------------------------------------------------------- rmqcap


@dataclass(frozen=True)
class SegmentPart(InputPartition):
    """Records of one segment between byte offsets ``start`` and ``stop`` (record boundaries);
    ``damage``: what the planning scan found wrong at ``stop`` (the last part of a damaged segment)."""

    capture: str
    path: str
    segment: int
    start: int
    stop: int
    damage: tuple[tuple[str, int], ...] = ()


@dataclass
class CapturePlan:
    parts: list[SegmentPart] = field(default_factory=list)
    skips: list[tuple[str, str, int]] = field(default_factory=list)  # (file, reason, bytes)
    connections: dict[int, int] = field(default_factory=dict)
    """Bytes of records per connection id (what the ingest spreads its tasks by)."""


def plan_capture(capture: str, split_bytes: int = DEFAULT_SPLIT_BYTES) -> CapturePlan:
    """Partitions of a capture: one per segment, large segments cut at record boundaries found by
    walking the record length words; damage found on the way is noted on the segment's last part."""
    from rmqtwin.proxy.capture import segment_paths

    plan = CapturePlan()
    name = Path(capture).name
    segments = segment_paths(capture) or [Path(capture)]
    for seg in segments:
        size = seg.stat().st_size
        with open(seg, "rb") as f:
            head = f.read(_FILE_HEADER.size)
            if len(head) < _FILE_HEADER.size or head[:8] != b"RMQTWCAP":
                plan.skips.append((str(seg), "not an rmqtwin capture (bad magic)", size))
                continue
            _, major, _minor, index, _created, meta_len = _FILE_HEADER.unpack(head)
            if major != 1:
                plan.skips.append((str(seg), f"unknown capture format major version {major}", size))
                continue
            if size == 0 or size <= _FILE_HEADER.size + meta_len:
                continue
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                pos = start = _FILE_HEADER.size + meta_len
                damage: list[tuple[str, int]] = []
                unpack = _LEN.unpack_from
                unpack_conn = _CONN.unpack_from
                sizes = plan.connections
                while pos < size:
                    if size - pos < 4 + _FIXED:
                        damage.append(("truncated last record", size - pos))
                        break
                    n = unpack(mm, pos)[0]
                    if n < _FIXED or n - _FIXED > _MAX_DATA:
                        damage.append((f"corrupt record length {n} at offset {pos}", size - pos))
                        break
                    if pos + 4 + n > size:
                        damage.append(("truncated last record", size - pos))
                        break
                    conn = unpack_conn(mm, pos + _CONN_AT)[0]
                    sizes[conn] = sizes.get(conn, 0) + 4 + n
                    pos += 4 + n
                    if pos - start >= split_bytes and pos < size:
                        plan.parts.append(SegmentPart(name, str(seg), index, start, pos))
                        start = pos
                if pos > start or damage:
                    plan.parts.append(SegmentPart(name, str(seg), index, start, pos, tuple(damage)))
                for reason, n_bytes in damage:
                    plan.skips.append((str(seg), reason, n_bytes))
    return plan


_REC = struct.Struct("<IBBBBQQQ16sH16sHiiiI")


def _host(raw: bytes, cache: dict[bytes, str]) -> str:
    host = cache.get(raw)
    if host is None:
        from rmqtwin.proxy.capture import Endpoint

        host = cache[raw] = Endpoint.unpacked(raw, 0).host
    return host


Row = tuple[object, ...]
"""One record as a tuple in :data:`schemas.RECORDS` order (``R_*`` name the positions)."""

R_TYPE, R_DIRECTION, R_FLAGS, R_CONN_ID, R_CODE, R_OPAQUE, R_RPC_FLAG, R_DATA = 3, 4, 5, 9, 14, 15, 16, 17


def segment_rows(part: SegmentPart, connections: frozenset[int] | None = None) -> Iterator[Row]:
    """The records of one partition as :data:`Row` tuples, then a row per damage it ends with; only the
    records of ``connections`` if given, and no damage rows then (the planner noted the damage)."""
    cache: dict[bytes, str] = {}
    unpack = _REC.unpack_from
    unpack_conn = _CONN.unpack_from
    capture, segment = part.capture, part.segment
    with open(part.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = part.start
        while pos < part.stop:
            if connections is not None and unpack_conn(mm, pos + _CONN_AT)[0] not in connections:
                pos += 4 + _LEN.unpack_from(mm, pos)[0]
                continue
            (
                n,
                rtype,
                direction,
                flags,
                ser,
                mono,
                wall,
                conn,
                chost,
                cport,
                shost,
                sport,
                code,
                opaque,
                rpc,
                dlen,
            ) = unpack(mm, pos)
            start = pos + 4 + _FIXED
            yield (
                capture,
                segment,
                pos,
                rtype,
                direction,
                flags,
                ser,
                mono,
                wall,
                conn,
                cache.get(chost) or _host(chost, cache),
                cport,
                cache.get(shost) or _host(shost, cache),
                sport,
                code,
                opaque,
                rpc,
                mm[start : start + dlen],
                None,
                None,
            )
            pos += 4 + n
    if connections is None:
        for reason, n_bytes in part.damage:
            yield _skip_row(capture, segment, part.stop, reason, n_bytes)


def _skip_row(capture: str, segment: int, pos: int, reason: str, n_bytes: int) -> Row:
    return (capture, segment, pos, 0, *(None,) * 14, reason, n_bytes)


def record_batches(rows: Iterator[Row]) -> Iterator[pa.RecordBatch]:
    """:data:`Row` tuples as Arrow batches of :data:`schemas.RECORDS`."""
    chunk: list[Row] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= BATCH_ROWS:
            yield schemas.record_batch(chunk, schemas.RECORDS)
            chunk = []
    if chunk:
        yield schemas.record_batch(chunk, schemas.RECORDS)


def read_segment_part(part: SegmentPart) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the records of one partition (and a row per damage it ends with)."""
    return record_batches(segment_rows(part))


def capture_parts(path: str, split_bytes: int) -> list[SegmentPart]:
    """The partitions of one capture: its segments' splits, and one for each segment the scan rejected
    whole (so that it still gets its row)."""
    plan = plan_capture(path, split_bytes)
    parts = list(plan.parts)
    rejected = {s[0] for s in plan.skips} - {p.path for p in plan.parts}
    for seg in sorted(rejected):
        reasons = tuple((r, b) for f, r, b in plan.skips if f == seg)
        parts.append(SegmentPart(Path(path).name, seg, -1, 0, 0, reasons))
    return parts


PartT = TypeVar("PartT", bound=InputPartition)


class _PartsReader(DataSourceReader, Generic[PartT]):
    """Partitions planned on the driver, each read into Arrow batches by ``read_part`` on an executor (a
    module-level function: the reader pickles it by name)."""

    def __init__(
        self,
        parts: list[PartT],
        part_type: type[PartT],
        read_part: Callable[[PartT], Iterator[pa.RecordBatch]],
    ) -> None:
        self.parts = parts
        self.part_type = part_type
        self.read_part = read_part

    def partitions(self) -> list[PartT]:
        return self.parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, self.part_type)
        yield from self.read_part(partition)


class _FileSource(DataSource):
    """What the three sources share: a format name, a fixed schema, and the inputs named by the ``paths``
    option (comma-separated) or ``load(PATH)``."""

    NAME: ClassVar[str]
    SCHEMA: ClassVar[pa.Schema]

    @classmethod
    def name(cls) -> str:
        return cls.NAME

    def schema(self) -> str:
        return schemas.ddl(self.SCHEMA)

    @property
    def paths(self) -> list[str]:
        raw = self.options.get("paths") or self.options.get("path") or ""
        return [p for p in raw.split(",") if p]


class CaptureDataSource(_FileSource):
    """``spark.read.format("rmqcap").load(CAPTURE)``: one row per record of an rmqtwin capture
    (all segments; ``paths`` takes several captures, comma-separated; ``splitBytes`` sizes the splits)."""

    NAME = "rmqcap"
    SCHEMA = schemas.RECORDS

    def reader(self, schema: object) -> DataSourceReader:
        split_bytes = int(self.options.get("splitBytes", DEFAULT_SPLIT_BYTES))
        parts = [part for path in self.paths for part in capture_parts(path, split_bytes)]
        return _PartsReader(parts, SegmentPart, read_segment_part)


# --------------------------------------------------------------------------------------------- pcap


@dataclass(frozen=True)
class PcapFile(InputPartition):
    path: str
    server_ports: tuple[int, ...]


def pcap_rows(part: PcapFile) -> Iterator[Row]:
    """Records of one pcap through the project's TCP reassembler, then rows for what it could not use."""
    from rmqtwin.proxy.pcap import DEFAULT_SERVER_PORTS, TcpReassembler, pcap_records

    name = Path(part.path).name
    reasm = TcpReassembler(set(DEFAULT_SERVER_PORTS) | set(part.server_ports), redact=False)
    n = 0
    try:
        for rec in pcap_records(part.path, reasm):
            yield (
                name,
                0,
                n,
                rec.type,
                rec.direction,
                rec.flags,
                rec.serialize_type,
                rec.mono_ns,
                rec.wall_ns,
                rec.conn_id,
                rec.client.host,
                rec.client.port,
                rec.server.host,
                rec.server.port,
                rec.code,
                rec.opaque,
                rec.rpc_flag,
                bytes(rec.data),
                None,
                None,
            )
            n += 1
    except Exception as exc:  # a damaged pcap file: what came before stays, the rest is one skip row
        yield _skip_row(name, 0, n, f"unreadable pcap: {type(exc).__name__}: {exc}", -1)
    st = reasm.stats
    if st.undelivered_bytes:
        yield _skip_row(name, 0, n, "missing TCP segments (bytes never completed)", st.undelivered_bytes)
    if st.non_rocketmq_flows:
        yield _skip_row(name, 0, n, f"non-RocketMQ flows ({st.non_rocketmq_flows}, kept as raw chunks)", 0)
    if st.packets - st.tcp_segments:
        yield _skip_row(name, 0, n, f"packets that are not TCP ({st.packets - st.tcp_segments})", 0)


def read_pcap(part: PcapFile) -> Iterator[pa.RecordBatch]:
    """Arrow batches of :func:`pcap_rows`."""
    return record_batches(pcap_rows(part))


class PcapDataSource(_FileSource):
    """``spark.read.format("pcap").load(FILE)``: a tcpdump pcap/pcapng of RocketMQ traffic as capture
    records (same columns as ``rmqcap``; ``serverPorts`` adds ports taken as the server side)."""

    NAME = "pcap"
    SCHEMA = schemas.RECORDS

    def reader(self, schema: object) -> DataSourceReader:
        ports = tuple(int(p) for p in self.options.get("serverPorts", "").split(",") if p)
        return _PartsReader([PcapFile(path, ports) for path in self.paths], PcapFile, read_pcap)


# ------------------------------------------------------------------------------------------- store


@dataclass(frozen=True)
class CommitlogFile(InputPartition):
    store: str
    file_from_offset: int


TRANSACTION_NAMES = {0: "NOT_TYPE", 4: "PREPARED", 8: "COMMIT", 12: "ROLLBACK"}


MESSAGE_COLUMNS = tuple(f.name for f in schemas.MESSAGES if f.name in schemas.STORE_MESSAGES.names)
"""The message columns shared by ``rocketmq-store`` and the ``messages`` table, in both schemas' order."""


def message_values(msg: MessageExt) -> list[object]:
    """:data:`MESSAGE_COLUMNS` of a message, in that order."""
    return [
        msg.topic,
        msg.queue_id,
        msg.queue_offset,
        msg.commitlog_offset,
        msg.client_msg_id,
        msg.msg_id,
        msg.tags,
        msg.keys,
        msg.properties,
        msg.body,
        len(msg.body),
        msg.born_timestamp,
        f"{msg.born_host[0]}:{msg.born_host[1]}",
        msg.store_timestamp,
        f"{msg.store_host[0]}:{msg.store_host[1]}",
        msg.reconsume_times,
        msg.sys_flag,
        msg.flag,
        TRANSACTION_NAMES.get(msg.transaction_type) or str(msg.transaction_type),
        msg.prepared_transaction_offset,
    ]


TORN_TAIL = "torn commitlog tail (an invalid record before the zero fill)"


@dataclass(frozen=True, slots=True)
class TornTail:
    """Bytes after a commitlog file's last valid record that are not the zero fill."""

    file: str
    commitlog_offset: int
    n_bytes: int


def commitlog_messages(part: CommitlogFile) -> Iterator[tuple[str, int, MessageExt] | TornTail]:
    """(file name, stored size, message) per message of one commitlog file, through store_mirror opened
    read-only; then a :class:`TornTail` if the file has one."""
    from rmqtwin.codec.errors import CodecError
    from rmqtwin.codec.message import decode_message_record
    from rmqtwin.store_mirror.dump import open_read_only

    store = open_read_only(part.store)
    try:
        log = store.commit_log
        mf = next(
            m for m in log.mapped_file_queue.mapped_files if m.file_from_offset == part.file_from_offset
        )
        size = log.mapped_file_size
        pos = 0
        torn = False
        while pos < size:
            req = log.check_message(mf.mm, pos, size, False)
            if req.success and req.msg_size == 0:
                break  # the blank end-of-file record
            if not req.success:
                torn = True
                break
            try:
                msg, _ = decode_message_record(memoryview(mf.mm), pos)
            except CodecError:
                torn = True
                break
            yield mf.file_name, req.msg_size, msg
            pos += req.msg_size
        tail = bytes(mf.mm[pos:size]).rstrip(b"\0") if torn else b""
        if tail:
            yield TornTail(mf.file_name, part.file_from_offset + pos, len(tail))
    finally:
        store.shutdown()


def read_commitlog_file(part: CommitlogFile) -> Iterator[pa.RecordBatch]:
    """One row per message of one commitlog file; a torn tail is one skip row."""
    rows: list[list[object]] = []
    width = len(schemas.STORE_MESSAGES)
    for item in commitlog_messages(part):
        if isinstance(item, TornTail):
            row: list[object] = [None] * width
            row[:3] = [part.store, item.file, None]
            row[3 + MESSAGE_COLUMNS.index("commitlog_offset")] = item.commitlog_offset
            row[-2:] = [TORN_TAIL, item.n_bytes]
        else:
            file, size, msg = item
            row = [part.store, file, size, *message_values(msg), None, None]
        rows.append(row)
        if len(rows) >= BATCH_ROWS // 4:
            yield schemas.record_batch(rows, schemas.STORE_MESSAGES)
            rows = []
    if rows:
        yield schemas.record_batch(rows, schemas.STORE_MESSAGES)


def commitlog_files(store_dir: str) -> list[CommitlogFile]:
    """One partition per commitlog file of a store, listed by store_mirror opened read-only."""
    from rmqtwin.store_mirror.dump import open_read_only

    store = open_read_only(store_dir)
    try:
        return [
            CommitlogFile(store_dir, mf.file_from_offset)
            for mf in store.commit_log.mapped_file_queue.mapped_files
        ]
    finally:
        store.shutdown()


class StoreDataSource(_FileSource):
    """``spark.read.format("rocketmq-store").load(STORE_DIR)``: a (stopped) broker's store, one row per
    message, one partition per commitlog file; nothing in the directory is written."""

    NAME = "rocketmq-store"
    SCHEMA = schemas.STORE_MESSAGES

    def reader(self, schema: object) -> DataSourceReader:
        parts = [part for path in self.paths for part in commitlog_files(path)]
        return _PartsReader(parts, CommitlogFile, read_commitlog_file)


DATA_SOURCES: tuple[type[DataSource], ...] = (CaptureDataSource, PcapDataSource, StoreDataSource)
