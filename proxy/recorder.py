"""Recording off the reactor thread: a bounded queue drained by one writer thread.

The reactor only timestamps and enqueues the frames it already split; header decoding, credential
masking, packing and disk writes happen on the writer thread. When the queue is full the recorder
tells the proxy to pause reading on every connection (``on_backpressure(True)``) and keeps the few
batches already read in an overflow list; once the writer has drained the queue below the low-water
mark it refills the queue from the overflow and lifts the pause. Memory stays bounded either way.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson

from rmqtwin.proxy.capture import (
    REC_CLOSE,
    REC_OPEN,
    CaptureWriter,
    Endpoint,
    event_record,
    frame_record,
    pack_record,
)

__all__ = ["Recorder", "RecorderStats"]


@dataclass(slots=True)
class RecorderStats:
    frames: int = 0
    bytes: int = 0
    pauses: int = 0
    write_seconds: float = 0.0
    extra: dict[str, int] = field(default_factory=dict)


_Item = tuple[int, int, int, int, Endpoint, Endpoint, object, int]
# (kind, mono_ns, wall_ns, conn_id, client, server, payload, direction_or_flags)

_KIND_OPEN = 0
_KIND_FRAMES = 1
_KIND_CLOSE = 2


def _call_directly(fn: Callable[[], None]) -> None:
    fn()


class Recorder:
    """Feeds a :class:`CaptureWriter` from the reactor thread without ever blocking it.

    ``call_in_reactor`` runs a callable on the reactor thread (``reactor.callFromThread``); tests pass
    their own. ``on_backpressure(paused)`` is called on the reactor thread when the queue fills up
    (``True``) and when it has drained (``False``).
    """

    def __init__(
        self,
        writer: CaptureWriter,
        *,
        redact: bool = True,
        max_pending: int = 4096,
        call_in_reactor: Callable[[Callable[[], None]], None] = _call_directly,
        mono_ns: Callable[[], int] = time.monotonic_ns,
        wall_ns: Callable[[], int] = time.time_ns,
        start: bool = True,
    ) -> None:
        self.writer = writer
        self.redact = redact
        self._queue: queue.Queue[_Item | None] = queue.Queue(maxsize=max_pending)
        self._low_water = max_pending // 4
        self._overflow: list[_Item] = []
        self._behind = False
        self._resume_scheduled = False
        self._lock = threading.Lock()
        self._call_in_reactor = call_in_reactor
        self.mono_ns = mono_ns
        self.wall_ns = wall_ns
        self.on_backpressure: Callable[[bool], None] | None = None
        self.stats = RecorderStats()
        self.error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="rmqtwin-capture-writer", daemon=True)
        if start:
            self._thread.start()

    @property
    def behind(self) -> bool:
        """True while the proxy should keep its connections paused."""
        return self._behind

    def start(self) -> None:
        self._thread.start()

    # -- reactor thread -------------------------------------------------------------------------

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
            item = (_KIND_FRAMES, self.mono_ns(), self.wall_ns(), conn_id, client, server, frames, direction)
            self._submit(item if not flags else (*item[:7], direction | (flags << 8)))

    def connection_closed(self, conn_id: int, client: Endpoint, server: Endpoint, reason: str) -> None:
        self._submit((_KIND_CLOSE, self.mono_ns(), self.wall_ns(), conn_id, client, server, reason, 0))

    def _submit(self, item: _Item) -> None:
        if self._closed:
            return
        if self._overflow:
            self._overflow.append(item)
            return
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self._overflow.append(item)
            if not self._behind:
                self._behind = True
                self.stats.pauses += 1
                if self.on_backpressure is not None:
                    self.on_backpressure(True)

    def _drain_overflow(self) -> None:
        """Reactor thread: move overflow into the queue; lift the pause once it is all in."""
        with self._lock:
            self._resume_scheduled = False
        while self._overflow:
            try:
                self._queue.put_nowait(self._overflow[0])
            except queue.Full:
                return
            del self._overflow[0]
        if self._behind:
            self._behind = False
            if self.on_backpressure is not None:
                self.on_backpressure(False)

    def close(self, timeout: float | None = 30.0) -> None:
        """Write everything still pending, fsync and close the capture (blocks until done)."""
        if self._closed:
            return
        for item in self._overflow:
            self._queue.put(item)
        self._overflow.clear()
        self._closed = True
        self._queue.put(None)
        if self._thread.is_alive():
            self._thread.join(timeout)
        else:
            self._run()
        self.writer.close()

    # -- writer thread --------------------------------------------------------------------------

    def _run(self) -> None:
        get = self._queue.get
        writer = self.writer
        stats = self.stats
        while True:
            item = get()
            if item is None:
                writer.flush()
                return
            started = time.perf_counter()
            try:
                self._write(item)
            except Exception as exc:  # keep forwarding even if the disk fails; report on close
                self.error = exc
            stats.write_seconds += time.perf_counter() - started
            if self._queue.empty():
                writer.flush()
            if self._behind and self._queue.qsize() <= self._low_water:
                with self._lock:
                    schedule = not self._resume_scheduled
                    self._resume_scheduled = True
                if schedule:
                    self._call_in_reactor(self._drain_overflow)

    def _write(self, item: _Item) -> None:
        kind, mono, wall, conn_id, client, server, payload, extra = item
        writer = self.writer
        if kind == _KIND_FRAMES:
            direction = extra & 0xFF
            flags = extra >> 8
            assert isinstance(payload, list)
            for frame in payload:
                rec = frame_record(
                    direction=direction,
                    mono_ns=mono,
                    wall_ns=wall,
                    conn_id=conn_id,
                    client=client,
                    server=server,
                    frame=frame,
                    flags=flags,
                    redact=self.redact,
                )
                writer.write_packed(pack_record(rec))
                self.stats.frames += 1
                self.stats.bytes += len(frame)
        else:
            if kind == _KIND_OPEN:
                rtype, data = REC_OPEN, orjson.dumps(payload)
            else:
                rtype, data = REC_CLOSE, str(payload).encode()
            rec = event_record(
                rtype, mono_ns=mono, wall_ns=wall, conn_id=conn_id, client=client, server=server, data=data
            )
            writer.write(rec)
