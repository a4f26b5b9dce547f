"""Recording off the reactor thread: a bounded backlog drained in batches by one writer thread.

The reactor only timestamps and appends what it already split to a deque (no lock, no wake-up per
read); header peeking, credential masking, packing and disk writes happen on the writer thread,
which drains the whole backlog every few milliseconds. Waking it per read would cost two thread
switches and GIL hand-overs per forwarded frame, more than the recording itself.

When the backlog reaches ``max_pending`` batches the recorder tells the proxy to pause reading on
every connection (``on_backpressure(True)``); once the writer has brought it under a quarter of that,
it asks the reactor thread to lift the pause (``on_backpressure(False)``). Memory stays bounded: a
paused connection adds at most the read in progress.
"""

from __future__ import annotations

import threading
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
    pack_frame_record,
)

__all__ = ["Recorder", "RecorderStats"]


@dataclass(slots=True)
class RecorderStats:
    frames: int = 0
    bytes: int = 0
    pauses: int = 0
    batches: int = 0
    write_seconds: float = 0.0


_Item = tuple[int, int, int, int, Endpoint, Endpoint, object, int]
# (kind, mono_ns, wall_ns, conn_id, client, server, payload, direction | flags << 8)

_KIND_OPEN = 0
_KIND_FRAMES = 1
_KIND_CLOSE = 2


def _call_directly(fn: Callable[[], None]) -> None:
    fn()


class Recorder:
    """Feeds a :class:`CaptureWriter` from the reactor thread without ever blocking it.

    ``call_in_reactor`` runs a callable on the reactor thread (``reactor.callFromThread``); tests pass
    their own. ``on_backpressure(paused)`` is called on the reactor thread when the backlog is full
    (``True``) and when it has drained (``False``). ``interval`` is how long the idle writer sleeps
    between looks at the backlog (it is woken at once when the backlog fills up or on close).
    """

    def __init__(
        self,
        writer: CaptureWriter,
        *,
        redact: bool = True,
        max_pending: int = 4096,
        interval: float = 0.005,
        call_in_reactor: Callable[[Callable[[], None]], None] = _call_directly,
        mono_ns: Callable[[], int] = time.monotonic_ns,
        wall_ns: Callable[[], int] = time.time_ns,
        start: bool = True,
    ) -> None:
        self.writer = writer
        self.redact = redact
        self.max_pending = max_pending
        self._low_water = max_pending // 4
        self.interval = interval
        self._pending: deque[_Item] = deque()
        self._wake = threading.Event()
        self._behind = False
        self._resume_scheduled = False
        self._stopping = False
        self._closed = False
        self._call_in_reactor = call_in_reactor
        self.mono_ns = mono_ns
        self.wall_ns = wall_ns
        self.on_backpressure: Callable[[bool], None] | None = None
        self.stats = RecorderStats()
        self.error: BaseException | None = None
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
        if len(pending) >= self.max_pending and not self._behind:
            self._behind = True
            self.stats.pauses += 1
            self._wake.set()
            if self.on_backpressure is not None:
                self.on_backpressure(True)

    def _lift_pause(self) -> None:
        """Reactor thread: the writer caught up; let the connections read again."""
        self._resume_scheduled = False
        if self._behind and len(self._pending) <= self._low_water:
            self._behind = False
            if self.on_backpressure is not None:
                self.on_backpressure(False)

    def close(self, timeout: float | None = 30.0) -> None:
        """Write everything still pending, fsync and close the capture (blocks until done)."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)
        else:
            self._run()
        self.writer.close()

    # -- writer thread --------------------------------------------------------------------------

    def _run(self) -> None:
        pending = self._pending
        while True:
            if not pending:
                if self._stopping:
                    self.writer.flush()
                    return
                self._wake.wait(self.interval)
                self._wake.clear()
                continue
            self.drain()

    def drain(self) -> None:
        """Write the whole backlog (the writer thread's loop body; callable from a timer instead)."""
        pending = self._pending
        if not pending:
            return
        stats = self.stats
        started = time.perf_counter()
        stats.batches += 1
        for _ in range(len(pending)):
            try:
                self._write(pending.popleft())
            except Exception as exc:  # keep forwarding even if the disk fails; report on close
                self.error = exc
        if not pending:
            self.writer.flush()
        stats.write_seconds += time.perf_counter() - started
        if self._behind and not self._resume_scheduled and len(pending) <= self._low_water:
            self._resume_scheduled = True
            self._call_in_reactor(self._lift_pause)

    def _write(self, item: _Item) -> None:
        kind, mono, wall, conn_id, client, server, payload, extra = item
        writer = self.writer
        if kind == _KIND_FRAMES:
            direction = extra & 0xFF
            flags = extra >> 8
            redact = self.redact
            assert isinstance(payload, list)
            for frame in payload:
                head, data = pack_frame_record(
                    direction, mono, wall, conn_id, client, server, frame, flags, redact
                )
                writer.write_packed(head, data)
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
