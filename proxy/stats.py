"""Reading a capture as exchanges: requests paired with their responses, latency tables, a listing.

A response answers the request of the same connection, travelling the other way, with the same
opaque (Java matches nothing else either). Oneway requests expect no answer; a request still
unanswered at the end of the capture is counted as such.
"""

from __future__ import annotations

import datetime as dt
import os
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from rmqtwin.codec.codes import request_code_name, response_code_name
from rmqtwin.codec.frame import ONEWAY_FLAG
from rmqtwin.proxy.capture import (
    DIR_TO_SERVER,
    FLAG_RAW,
    FLAG_REDACTED,
    FLAG_REWRITTEN,
    REC_CLOSE,
    REC_FRAME,
    REC_OPEN,
    Record,
    read_records,
)
from rmqtwin.proxy.wire import peek_header

__all__ = ["CaptureStats", "Exchange", "format_record", "format_stats", "pair_exchanges", "percentile"]

TOPIC_FIELDS = ("topic", "b")
"""Where a request names its topic: long header names, and SEND_MESSAGE_V2's letter ``b``."""


@dataclass(slots=True)
class Exchange:
    request: Record
    response: Record | None

    @property
    def latency_ns(self) -> int | None:
        return None if self.response is None else self.response.mono_ns - self.request.mono_ns

    @property
    def oneway(self) -> bool:
        return bool(self.request.rpc_flag & ONEWAY_FLAG)


def request_topic(rec: Record) -> str | None:
    peek = peek_header(rec.data)
    if peek is None:
        return None
    for name in TOPIC_FIELDS:
        value = peek.ext_fields.get(name)
        if value:
            return value
    return None


def pair_exchanges(records: Iterable[Record]) -> Iterator[Exchange]:
    """Exchanges in the order their request was seen; unanswered ones come last, response ``None``."""
    pending: dict[tuple[int, int, int], Record] = {}
    for rec in records:
        if rec.type != REC_FRAME or not rec.decoded:
            continue
        if rec.rpc_flag & 1:
            req = pending.pop((rec.conn_id, 1 - rec.direction, rec.opaque), None)
            if req is not None:
                yield Exchange(req, rec)
        elif rec.rpc_flag & ONEWAY_FLAG:
            yield Exchange(rec, None)
        else:
            pending[(rec.conn_id, rec.direction, rec.opaque)] = rec
    for req in pending.values():
        yield Exchange(req, None)


def percentile(sorted_values: list[int], q: float) -> int:
    """Nearest-rank percentile of an ascending list (``q`` in 0..100)."""
    if not sorted_values:
        raise ValueError("no values")
    rank = max(1, -(-len(sorted_values) * q // 100))
    return sorted_values[int(rank) - 1]


@dataclass(slots=True)
class _Row:
    count: int = 0
    oneway: int = 0
    answered: int = 0
    errors: int = 0
    bytes: int = 0
    latencies: list[int] = field(default_factory=list)


@dataclass(slots=True)
class CaptureStats:
    frames: int = 0
    raw_chunks: int = 0
    undecoded: int = 0
    redacted: int = 0
    rewritten: int = 0
    connections: int = 0
    closes: int = 0
    bytes: int = 0
    by_code: dict[int, _Row] = field(default_factory=lambda: defaultdict(_Row))
    by_topic: dict[str, _Row] = field(default_factory=lambda: defaultdict(_Row))
    response_codes: dict[int, int] = field(default_factory=lambda: defaultdict(int))

    @classmethod
    def of(cls, path: str | os.PathLike[str]) -> CaptureStats:
        stats = cls()
        records: list[Record] = []
        for rec in read_records(path):
            if rec.type == REC_OPEN:
                stats.connections += 1
            elif rec.type == REC_CLOSE:
                stats.closes += 1
            elif rec.type == REC_FRAME:
                stats.bytes += len(rec.data)
                if rec.flags & FLAG_RAW:
                    stats.raw_chunks += 1
                    continue
                stats.frames += 1
                stats.redacted += bool(rec.flags & FLAG_REDACTED)
                stats.rewritten += bool(rec.flags & FLAG_REWRITTEN)
                if not rec.decoded:
                    stats.undecoded += 1
                    continue
                if rec.rpc_flag & 1:
                    stats.response_codes[rec.code] += 1
                records.append(rec)
        for ex in pair_exchanges(records):
            topic = request_topic(ex.request)
            rows = [stats.by_code[ex.request.code]]
            if topic is not None:
                rows.append(stats.by_topic[topic])
            latency = ex.latency_ns
            for row in rows:
                row.count += 1
                row.bytes += len(ex.request.data) + (len(ex.response.data) if ex.response else 0)
                if ex.oneway:
                    row.oneway += 1
                if latency is not None:
                    row.answered += 1
                    row.latencies.append(latency)
                    if ex.response is not None and ex.response.code != 0:
                        row.errors += 1
        return stats


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3f}"


def _table(title: str, key_header: str, rows: dict[str, _Row]) -> list[str]:
    head = (
        f"{key_header:<40} {'count':>8} {'oneway':>7} {'answered':>8} {'not ok':>6} "
        f"{'p50 ms':>9} {'p90 ms':>9} {'p99 ms':>9} {'max ms':>9}"
    )
    lines = [title, head, "-" * len(head)]
    for key, row in sorted(rows.items(), key=lambda kv: (-kv[1].count, kv[0])):
        lat = sorted(row.latencies)
        cells = [_ms(percentile(lat, q)) for q in (50, 90, 99)] + [_ms(lat[-1])] if lat else ["-"] * 4
        lines.append(
            f"{key[:40]:<40} {row.count:>8} {row.oneway:>7} {row.answered:>8} {row.errors:>6} "
            + " ".join(f"{c:>9}" for c in cells)
        )
    return lines


def format_stats(stats: CaptureStats) -> str:
    lines = [
        f"connections {stats.connections}  closed {stats.closes}  frames {stats.frames}  "
        f"undecodable {stats.undecoded}  raw chunks {stats.raw_chunks}  bytes {stats.bytes}  "
        f"redacted {stats.redacted}  rewritten {stats.rewritten}",
        "",
    ]
    by_code = {f"{request_code_name(code)} ({code})": row for code, row in stats.by_code.items()}
    lines += _table("requests by code", "code", by_code)
    lines.append("")
    lines += _table("requests by topic", "topic", dict(stats.by_topic))
    lines.append("")
    lines.append("response codes")
    for code, n in sorted(stats.response_codes.items()):
        lines.append(f"  {response_code_name(code)} ({code}): {n}")
    return "\n".join(lines)


def format_record(rec: Record) -> str:
    """One line per record for ``rmqtwin capture show``."""
    when = dt.datetime.fromtimestamp(rec.wall_ns / 1e9, tz=dt.UTC).strftime("%H:%M:%S.%f")
    arrow = "->" if rec.direction == DIR_TO_SERVER else "<-"
    where = f"#{rec.conn_id} {rec.client} {arrow} {rec.server}"
    if rec.type == REC_OPEN:
        return f"{when} {where} OPEN {rec.data.decode(errors='replace')}"
    if rec.type == REC_CLOSE:
        return f"{when} {where} CLOSE {rec.data.decode(errors='replace')}"
    marks = "".join(
        m for m, f in (("R", FLAG_REWRITTEN), ("*", FLAG_REDACTED), ("~", FLAG_RAW)) if rec.flags & f
    )
    if rec.flags & FLAG_RAW:
        return f"{when} {where} RAW {len(rec.data)} bytes {marks}"
    if not rec.decoded:
        return f"{when} {where} UNDECODABLE {len(rec.data)} bytes"
    if rec.rpc_flag & 1:
        what = f"RESPONSE {response_code_name(rec.code)}({rec.code})"
    else:
        what = f"REQUEST {request_code_name(rec.code)}({rec.code})" + (" oneway" if rec.rpc_flag & 2 else "")
    peek = peek_header(rec.data)
    extra = ""
    if peek is not None:
        topic = next((peek.ext_fields[n] for n in TOPIC_FIELDS if peek.ext_fields.get(n)), None)
        if topic:
            extra += f" topic={topic}"
        if peek.remark:
            extra += f" remark={peek.remark[:60]!r}"
    ser = "JSON" if rec.serialize_type == 0 else "ROCKETMQ"
    return f"{when} {where} {what} opaque={rec.opaque} {ser} {len(rec.data)}B{extra} {marks}".rstrip()
