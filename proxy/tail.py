"""``rmqtwin capture tail [--follow] FILE``: decoded frames of a capture as they are recorded.

The proxy writes a capture in batches (every few milliseconds) and rotates it into ``FILE.1``,
``FILE.2``, ...; :class:`CaptureFollower` reads what was appended since its last poll, only whole
records (a batch half-written is read on the next poll), and moves on to the next segment once
the proxy opened it. Each frame prints as ``capture show`` prints it plus the group; filters pick
frames by request code, topic, group or connection, and an answer is shown when its request was.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rmqtwin.codec.codes import RequestCode
from rmqtwin.proxy.capture import REC_FRAME, CaptureFormatError, CaptureReader, Record, segment_paths
from rmqtwin.proxy.faults import FrameFacts
from rmqtwin.proxy.stats import format_record
from rmqtwin.proxy.wire import peek_header

__all__ = ["CaptureFollower", "FrameFilter", "tail"]

_LEN_SIZE = 4


class CaptureFollower:
    """Records appended to a capture, segment after segment, read as they become whole."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._segment: Path | None = None
        self._reader: CaptureReader | None = None
        self._pos = 0

    def poll(self) -> list[Record]:
        """Every whole record written since the last poll (none when nothing new is there yet)."""
        out: list[Record] = []
        while True:
            if self._reader is None and not self._open_next():
                return out
            assert self._reader is not None and self._segment is not None
            with open(self._segment, "rb") as f:
                f.seek(self._pos)
                data = f.read()
            end = _whole_records_end(data)
            if end:
                out += self._reader.records_in(data[:end])
                self._pos += end
            if not self._newer_segment():
                return out
            # the proxy moved on to a newer segment: this one is finished once read to its end
            if end == len(data):
                self._reader = None

    def _open_next(self) -> bool:
        segments = segment_paths(self.path)
        if self._segment is not None:
            segments = [s for s in segments if _index(s) > _index(self._segment)]
        if not segments:
            return False
        try:
            reader = CaptureReader(segments[0])
        except (CaptureFormatError, OSError):
            return False  # its header is not written yet
        self._segment, self._reader, self._pos = segments[0], reader, reader.data_start
        return True

    def _newer_segment(self) -> bool:
        assert self._segment is not None
        return any(_index(s) > _index(self._segment) for s in segment_paths(self.path))


def _index(segment: Path) -> int:
    suffix = segment.name.rpartition(".")[2]
    return int(suffix) if suffix.isdigit() else 0


def _whole_records_end(data: bytes) -> int:
    """Where the last whole record in ``data`` ends (each: a little-endian 4-byte length, then that many)."""
    pos = 0
    while len(data) - pos >= _LEN_SIZE:
        length = int.from_bytes(data[pos : pos + _LEN_SIZE], "little")
        if pos + _LEN_SIZE + length > len(data):
            break
        pos += _LEN_SIZE + length
    return pos


@dataclass
class FrameFilter:
    """Which frames to show: by request code, topic, group, connection; answers follow their request."""

    codes: frozenset[int] | None = None
    topic: str | None = None
    group: str | None = None
    conn_id: int | None = None
    frames_only: bool = False
    shown: set[tuple[int, int, int]] = field(default_factory=set)
    """(connection, direction of the request, opaque) of requests shown, whose answers will be too."""

    @classmethod
    def of(
        cls,
        codes: Sequence[str] = (),
        topic: str | None = None,
        group: str | None = None,
        conn_id: int | None = None,
    ) -> FrameFilter:
        parsed = frozenset(int(c) if c.lstrip("-").isdigit() else int(RequestCode[c]) for c in codes)
        return cls(parsed or None, topic, group, conn_id, frames_only=bool(parsed or topic or group))

    def wants(self, rec: Record) -> tuple[bool, FrameFacts | None]:
        """Whether to show ``rec``, and what its request names (code, topic, group) when it is one."""
        if self.conn_id is not None and rec.conn_id != self.conn_id:
            return False, None
        if rec.type != REC_FRAME or not rec.decoded:
            return not self.frames_only, None
        peek = peek_header(bytes(rec.data))
        if peek is None:
            return not self.frames_only, None
        if peek.is_response:
            key = (rec.conn_id, rec.direction ^ 1, peek.opaque)
            if not self.frames_only:
                return True, None
            if key in self.shown:
                self.shown.discard(key)
                return True, None
            return False, None
        facts = FrameFacts.of(peek.code, peek.ext_fields)
        ok = (
            (self.codes is None or facts.code in self.codes)
            and (self.topic is None or facts.topic == self.topic)
            and (self.group is None or facts.group == self.group)
        )
        if ok and self.frames_only and not peek.is_oneway:
            self.shown.add((rec.conn_id, rec.direction, peek.opaque))
        return ok, facts


def format_line(rec: Record, facts: FrameFacts | None) -> str:
    line = format_record(rec)
    if facts is not None and facts.group:
        line += f" group={facts.group}"
    return line


def tail(
    path: str | os.PathLike[str],
    frame_filter: FrameFilter,
    *,
    follow: bool,
    interval: float = 0.2,
    emit: Callable[[str], None] = print,
    keep_going: Callable[[], bool] = lambda: True,
) -> int:
    """Print the capture's records (then, with ``follow``, those still to come); returns how many."""
    follower = CaptureFollower(path)
    shown = 0
    for rec in _records(follower, follow, interval, keep_going):
        wanted, facts = frame_filter.wants(rec)
        if wanted:
            emit(format_line(rec, facts))
            shown += 1
    return shown


def _records(
    follower: CaptureFollower, follow: bool, interval: float, keep_going: Callable[[], bool]
) -> Iterator[Record]:
    while True:
        batch = follower.poll()
        yield from batch
        if not follow or not keep_going():
            if not batch:
                return
            continue
        if not batch:
            time.sleep(interval)
