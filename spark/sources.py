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
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

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
                    pos += 4 + n
                    if pos - start >= split_bytes and pos < size:
                        plan.parts.append(SegmentPart(name, str(seg), index, start, pos))
                        start = pos
                if pos > start or damage:
                    plan.parts.append(SegmentPart(name, str(seg), index, start, pos, tuple(damage)))
                for reason, n_bytes in damage:
                    plan.skips.append((str(seg), reason, n_bytes))
    return plan


class _Columns:
    """Column builders of :data:`schemas.RECORDS`, flushed as Arrow batches."""

    def __init__(self) -> None:
        self.cols: dict[str, list[object]] = {f.name: [] for f in schemas.RECORDS}

    def __len__(self) -> int:
        return len(self.cols["capture"])

    def skip(self, capture: str, segment: int, pos: int, reason: str, n_bytes: int) -> None:
        row = dict.fromkeys(self.cols)
        row.update(
            capture=capture, segment=segment, pos=pos, type=0, skip_reason=reason, skipped_bytes=n_bytes
        )
        for k, v in row.items():
            self.cols[k].append(v)

    def batch(self) -> pa.RecordBatch:
        out = pa.RecordBatch.from_pydict(self.cols, schema=schemas.RECORDS)
        for v in self.cols.values():
            v.clear()
        return out


_REC = struct.Struct("<IBBBBQQQ16sH16sHiiiI")


def _host(raw: bytes, cache: dict[bytes, str]) -> str:
    host = cache.get(raw)
    if host is None:
        from rmqtwin.proxy.capture import Endpoint

        host = cache[raw] = Endpoint.unpacked(raw, 0).host
    return host


def read_segment_part(part: SegmentPart) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the records of one partition (and a row per damage it ends with)."""
    out = _Columns()
    cols = out.cols
    cache: dict[bytes, str] = {}
    unpack = _REC.unpack_from
    appenders = [
        cols[n].append
        for n in (
            "type",
            "direction",
            "flags",
            "serialize_type",
            "mono_ns",
            "wall_ns",
            "conn_id",
        )
    ]
    with open(part.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = part.start
        while pos < part.stop:
            fields = unpack(mm, pos)
            n = fields[0]
            for app, value in zip(appenders, fields[1:8], strict=True):
                app(value)
            cols["capture"].append(part.capture)
            cols["segment"].append(part.segment)
            cols["pos"].append(pos)
            cols["client_host"].append(_host(fields[8], cache))
            cols["client_port"].append(fields[9])
            cols["server_host"].append(_host(fields[10], cache))
            cols["server_port"].append(fields[11])
            cols["code"].append(fields[12])
            cols["opaque"].append(fields[13])
            cols["rpc_flag"].append(fields[14])
            start = pos + 4 + _FIXED
            cols["data"].append(mm[start : start + fields[15]])
            cols["skip_reason"].append(None)
            cols["skipped_bytes"].append(None)
            pos += 4 + n
            if len(out) >= BATCH_ROWS:
                yield out.batch()
    for reason, n_bytes in part.damage:
        out.skip(part.capture, part.segment, part.stop, reason, n_bytes)
    if len(out):
        yield out.batch()


class _CaptureReader(DataSourceReader):
    def __init__(self, paths: list[str], split_bytes: int) -> None:
        self.paths = paths
        self.split_bytes = split_bytes

    def partitions(self) -> list[SegmentPart]:
        parts: list[SegmentPart] = []
        for path in self.paths:
            plan = plan_capture(path, self.split_bytes)
            parts += plan.parts
            # whole files the scan rejected still get their row, through a partition of their own
            rejected = {s[0] for s in plan.skips} - {p.path for p in plan.parts}
            for seg in sorted(rejected):
                reasons = tuple((r, b) for f, r, b in plan.skips if f == seg)
                parts.append(SegmentPart(Path(path).name, seg, -1, 0, 0, reasons))
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, SegmentPart)
        yield from read_segment_part(partition)


def _paths(options: Mapping[str, str]) -> list[str]:
    raw = options.get("paths") or options.get("path") or ""
    return [p for p in raw.split(",") if p]


class CaptureDataSource(DataSource):
    """``spark.read.format("rmqcap").load(CAPTURE)``: one row per record of an rmqtwin capture
    (all segments; ``paths`` takes several captures, comma-separated; ``splitBytes`` sizes the splits)."""

    @classmethod
    def name(cls) -> str:
        return "rmqcap"

    def schema(self) -> str:
        return schemas.ddl(schemas.RECORDS)

    def reader(self, schema: object) -> DataSourceReader:
        return _CaptureReader(_paths(self.options), int(self.options.get("splitBytes", DEFAULT_SPLIT_BYTES)))


# --------------------------------------------------------------------------------------------- pcap


@dataclass(frozen=True)
class PcapFile(InputPartition):
    path: str
    server_ports: tuple[int, ...]


def read_pcap(part: PcapFile) -> Iterator[pa.RecordBatch]:
    """Records of one pcap through the project's TCP reassembler, then rows for what it could not use."""
    from rmqtwin.proxy.pcap import DEFAULT_SERVER_PORTS, TcpReassembler, pcap_records

    name = Path(part.path).name
    reasm = TcpReassembler(set(DEFAULT_SERVER_PORTS) | set(part.server_ports), redact=False)
    out = _Columns()
    cols = out.cols
    n = 0
    try:
        for rec in pcap_records(part.path, reasm):
            for key, value in (
                ("capture", name),
                ("segment", 0),
                ("pos", n),
                ("type", rec.type),
                ("direction", rec.direction),
                ("flags", rec.flags),
                ("serialize_type", rec.serialize_type),
                ("mono_ns", rec.mono_ns),
                ("wall_ns", rec.wall_ns),
                ("conn_id", rec.conn_id),
                ("client_host", rec.client.host),
                ("client_port", rec.client.port),
                ("server_host", rec.server.host),
                ("server_port", rec.server.port),
                ("code", rec.code),
                ("opaque", rec.opaque),
                ("rpc_flag", rec.rpc_flag),
                ("data", bytes(rec.data)),
                ("skip_reason", None),
                ("skipped_bytes", None),
            ):
                cols[key].append(value)
            n += 1
            if len(out) >= BATCH_ROWS:
                yield out.batch()
    except Exception as exc:  # a damaged pcap file: what came before stays, the rest is one skip row
        out.skip(name, 0, n, f"unreadable pcap: {type(exc).__name__}: {exc}", -1)
    st = reasm.stats
    if st.undelivered_bytes:
        out.skip(name, 0, n, "missing TCP segments (bytes never completed)", st.undelivered_bytes)
    if st.non_rocketmq_flows:
        out.skip(name, 0, n, f"non-RocketMQ flows ({st.non_rocketmq_flows}, kept as raw chunks)", 0)
    if st.packets - st.tcp_segments:
        out.skip(name, 0, n, f"packets that are not TCP ({st.packets - st.tcp_segments})", 0)
    if len(out):
        yield out.batch()


class _PcapReader(DataSourceReader):
    def __init__(self, paths: list[str], ports: tuple[int, ...]) -> None:
        self.paths = paths
        self.ports = ports

    def partitions(self) -> list[PcapFile]:
        return [PcapFile(p, self.ports) for p in self.paths]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, PcapFile)
        yield from read_pcap(partition)


class PcapDataSource(DataSource):
    """``spark.read.format("pcap").load(FILE)``: a tcpdump pcap/pcapng of RocketMQ traffic as capture
    records (same columns as ``rmqcap``; ``serverPorts`` adds ports taken as the server side)."""

    @classmethod
    def name(cls) -> str:
        return "pcap"

    def schema(self) -> str:
        return schemas.ddl(schemas.RECORDS)

    def reader(self, schema: object) -> DataSourceReader:
        ports = tuple(int(p) for p in self.options.get("serverPorts", "").split(",") if p)
        return _PcapReader(_paths(self.options), ports)


# ------------------------------------------------------------------------------------------- store


@dataclass(frozen=True)
class CommitlogFile(InputPartition):
    store: str
    file_from_offset: int


TRANSACTION_NAMES = {0: "NOT_TYPE", 4: "PREPARED", 8: "COMMIT", 12: "ROLLBACK"}


def message_columns(msg: object) -> dict[str, object]:
    """The message columns shared by ``rocketmq-store`` and the ``messages`` table."""
    from rmqtwin.codec.message import MessageExt

    assert isinstance(msg, MessageExt)
    return {
        "topic": msg.topic,
        "queue_id": msg.queue_id,
        "queue_offset": msg.queue_offset,
        "commitlog_offset": msg.commitlog_offset,
        "msg_id": msg.client_msg_id,
        "offset_msg_id": msg.msg_id,
        "tags": msg.tags,
        "keys": msg.keys,
        "properties": list(msg.properties.items()),
        "body": msg.body,
        "body_length": len(msg.body),
        "born_timestamp": msg.born_timestamp,
        "born_host": f"{msg.born_host[0]}:{msg.born_host[1]}",
        "store_timestamp": msg.store_timestamp,
        "store_host": f"{msg.store_host[0]}:{msg.store_host[1]}",
        "reconsume_times": msg.reconsume_times,
        "sys_flag": msg.sys_flag,
        "flag": msg.flag,
        "transaction": TRANSACTION_NAMES.get(msg.transaction_type, str(msg.transaction_type)),
        "prepared_transaction_offset": msg.prepared_transaction_offset,
    }


def read_commitlog_file(part: CommitlogFile) -> Iterator[pa.RecordBatch]:
    """One row per message of one commitlog file, through store_mirror opened read-only; a torn tail
    (bytes after the last valid record that are not the zero fill) is one skip row."""
    from rmqtwin.codec.errors import CodecError
    from rmqtwin.codec.message import decode_message_record
    from rmqtwin.store_mirror.dump import open_read_only

    store = open_read_only(part.store)
    cols: dict[str, list[object]] = {f.name: [] for f in schemas.STORE_MESSAGES}

    def flush() -> pa.RecordBatch:
        batch = pa.RecordBatch.from_pydict(cols, schema=schemas.STORE_MESSAGES)
        for v in cols.values():
            v.clear()
        return batch

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
            row = message_columns(msg)
            row.update(store=part.store, file=mf.file_name, store_size=req.msg_size)
            for k, col in cols.items():
                col.append(row.get(k))
            pos += req.msg_size
            if len(cols["topic"]) >= BATCH_ROWS // 4:
                yield flush()
        tail = bytes(mf.mm[pos:size]).rstrip(b"\0") if torn else b""
        if tail:
            row = dict.fromkeys(cols)
            row.update(
                store=part.store,
                file=mf.file_name,
                commitlog_offset=part.file_from_offset + pos,
                skip_reason="torn commitlog tail (an invalid record before the zero fill)",
                skipped_bytes=len(tail),
            )
            for k, col in cols.items():
                col.append(row[k])
    finally:
        store.shutdown()
    if cols["store"]:
        yield flush()


class _StoreReader(DataSourceReader):
    def __init__(self, paths: list[str]) -> None:
        self.paths = paths

    def partitions(self) -> list[CommitlogFile]:
        from rmqtwin.store_mirror.dump import open_read_only

        parts = []
        for path in self.paths:
            store = open_read_only(path)
            try:
                parts += [
                    CommitlogFile(path, mf.file_from_offset)
                    for mf in store.commit_log.mapped_file_queue.mapped_files
                ]
            finally:
                store.shutdown()
        return parts

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, CommitlogFile)
        yield from read_commitlog_file(partition)


class StoreDataSource(DataSource):
    """``spark.read.format("rocketmq-store").load(STORE_DIR)``: a (stopped) broker's store, one row per
    message, one partition per commitlog file; nothing in the directory is written."""

    @classmethod
    def name(cls) -> str:
        return "rocketmq-store"

    def schema(self) -> str:
        return schemas.ddl(schemas.STORE_MESSAGES)

    def reader(self, schema: object) -> DataSourceReader:
        return _StoreReader(_paths(self.options))


DATA_SOURCES: tuple[type[DataSource], ...] = (CaptureDataSource, PcapDataSource, StoreDataSource)
