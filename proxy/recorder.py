"""Recording in batches on the reactor thread: records wait in a bounded backlog and are written every
few milliseconds.

The reactor only timestamps what it already split and appends it to a deque; header peeking,
credential masking, packing and the (buffered) write happen once per ``interval`` for the whole
backlog, so a busy proxy pays one timer and one flush per batch rather than per frame. When the
backlog reaches ``max_pending`` batches it is written at once, so memory stays bounded.

The work stays on the reactor thread on purpose. A writer thread would have to take the GIL from
the reactor: on a machine with more runnable threads than cores the OS may preempt the writer while
it holds the GIL, and the reactor then waits for the writer's next time slice, tens to hundreds of
milliseconds. Measured with the Java benchmark producer on a loaded 2-core machine, that convoy
added about 100 ms to the median send; batching on the reactor adds the batch's own CPU time only.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import orjson

from rmqtwin.proxy.capture import (
    REC_CLOSE,
    REC_OPEN,
    CaptureWriter,
    Endpoint,
    event_record,
    pack_frame_records,
)

__all__ = ["Recorder", "RecorderStats"]


@dataclass(slots=True)
class RecorderStats:
    frames: int = 0
    bytes: int = 0
    full_backlogs: int = 0
    """Times the backlog reached ``max_pending`` and was written before its batch was due."""
    batches: int = 0
    write_seconds: float = 0.0


_Item = tuple[int, int, int, int, Endpoint, Endpoint, object, int]
# (kind, mono_ns, wall_ns, conn_id, client, server, payload, direction | flags << 8)

_KIND_OPEN = 0
_KIND_FRAMES = 1
_KIND_CLOSE = 2


class Recorder:
    """Feeds a :class:`CaptureWriter` in batches, on the reactor thread.

    ``call_later(delay, fn)`` schedules the next batch (``reactor.callLater``; a test passes a
    ``Clock``'s); without it records are written only when the backlog is full and on :meth:`close`.
    ``interval`` is how long records wait for their batch.
    """

    def __init__(
        self,
        writer: CaptureWriter,
        *,
        redact: bool = True,
        max_pending: int = 4096,
        interval: float = 0.005,
        call_later: Callable[[float, Callable[[], None]], object] | None = None,
        mono_ns: Callable[[], int] = time.monotonic_ns,
        wall_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.writer = writer
        self.redact = redact
        self.max_pending = max_pending
        self.interval = interval
        self._call_later = call_later
        self._pending: deque[_Item] = deque()
        self._scheduled = False
        self._closed = False
        self.mono_ns = mono_ns
        self.wall_ns = wall_ns
        self.stats = RecorderStats()
        self.error: BaseException | None = None

    def connection_opened(
        self, conn_id: int, client: Endpoint, server: Endpoint, meta: dict[str, object]
    ) -> None:
        self._submit((_KIND_OPEN, self.mono_ns(), self.wall_ns(), conn_id, client, server, meta, 0))

    def frames(  # noqa: PLR0917 - hot path keeps positional arguments
        self,
        conn_id: int,
        client: Endpoint,
        server: Endpoint,
        direction: int,
        frames: list[bytes],
        flags: int = 0,
    ) -> None:
        """Record frames that arrived together (one read); ``flags`` may carry FLAG_REWRITTEN or FLAG_RAW."""
        if frames:
            extra = direction | (flags << 8)
            self._submit(
                (_KIND_FRAMES, self.mono_ns(), self.wall_ns(), conn_id, client, server, frames, extra)
            )

    def connection_closed(self, conn_id: int, client: Endpoint, server: Endpoint, reason: str) -> None:
        self._submit((_KIND_CLOSE, self.mono_ns(), self.wall_ns(), conn_id, client, server, reason, 0))

    def _submit(self, item: _Item) -> None:
        if self._closed:
            return
        pending = self._pending
        pending.append(item)
        if len(pending) >= self.max_pending:
            self.stats.full_backlogs += 1
            self.drain()
        elif not self._scheduled and self._call_later is not None:
            self._scheduled = True
            self._call_later(self.interval, self._batch_due)

    def _batch_due(self) -> None:
        self._scheduled = False
        self.drain()

    def close(self) -> None:
        """Write everything still pending, fsync and close the capture."""
        if self._closed:
            return
        self._closed = True
        self.drain()
        self.writer.close()

    def drain(self) -> None:
        """Write the whole backlog and flush it to the file."""
        pending = self._pending
        if not pending:
            return
        stats = self.stats
        started = time.perf_counter()
        stats.batches += 1
        while pending:
            try:
                self._write(pending.popleft())
            except Exception as exc:  # keep forwarding even if the disk fails; report on close
                self.error = exc
        try:
            self.writer.flush()
        except Exception as exc:
            self.error = exc
        stats.write_seconds += time.perf_counter() - started

    def _write(self, item: _Item) -> None:
        kind, mono, wall, conn_id, client, server, payload, extra = item
        writer = self.writer
        if kind == _KIND_FRAMES:
            assert isinstance(payload, list)
            parts = pack_frame_records(
                extra & 0xFF, mono, wall, conn_id, client, server, payload, extra >> 8, self.redact
            )
            write = writer.write_packed
            for i in range(0, len(parts), 2):
                write(parts[i], parts[i + 1])
            stats = self.stats
            stats.frames += len(payload)
            stats.bytes += sum(map(len, payload))
        else:
            if kind == _KIND_OPEN:
                rtype, data = REC_OPEN, orjson.dumps(payload)
            else:
                rtype, data = REC_CLOSE, str(payload).encode()
            rec = event_record(
                rtype, mono_ns=mono, wall_ns=wall, conn_id=conn_id, client=client, server=server, data=data
            )
            writer.write(rec)
