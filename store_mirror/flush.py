"""The store's Twisted adapter: flush services on reactor time, fsync off the reactor thread.

The store itself knows no reactor (as Java's store knows no Netty): it is handed a
:class:`TwistedFlushDriver`, which runs ASYNC_FLUSH (periodic) or SYNC_FLUSH (group commit) for it,
fsyncs in a one-thread pool and answers ``wait_for_flush`` with a Deferred.

``GroupCommitService`` batches every waiting send into the next fsync: while one fsync runs, new requests
queue up and are all covered by the following one (Java swaps its request lists the same way). A send whose
fsync does not
complete within ``syncFlushTimeout`` is answered FLUSH_DISK_TIMEOUT, as ``FlushDiskWatcher`` does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol, cast

from twisted.internet import defer
from twisted.internet.interfaces import IDelayedCall, IReactorFromThreads, IReactorTime
from twisted.internet.task import LoopingCall
from twisted.python.failure import Failure
from twisted.python.threadpool import ThreadPool

from rmqtwin.store_mirror.commitlog import PutMessageResult, PutMessageStatus
from rmqtwin.store_mirror.store_config import FlushDiskType, MessageStoreConfig

log = logging.getLogger(__name__)

FlushJob = Callable[[], None]
"""An fsync (or a round of them) to run off the reactor thread."""

RunBlocking = Callable[[FlushJob], "defer.Deferred[None]"]


class FlushThread:
    """A dedicated one-thread pool for fsync calls; ``run`` returns a Deferred fired on the reactor."""

    def __init__(self, reactor: IReactorFromThreads, name: str = "FlushCommitLogService") -> None:
        self.reactor = reactor
        self.pool = ThreadPool(minthreads=1, maxthreads=1, name=name)
        self._started = False

    def start(self) -> None:
        if not self._started:
            self.pool.start()
            self._started = True

    def run(self, fn: FlushJob) -> defer.Deferred[None]:
        from twisted.internet.threads import deferToThreadPool

        self.start()
        return deferToThreadPool(self.reactor, self.pool, fn)

    def stop(self) -> None:
        if self._started:
            self.pool.stop()
            self._started = False


class GroupCommitService:
    """SYNC_FLUSH: acknowledge a send only once the commitlog is fsynced past its last byte."""

    def __init__(
        self,
        flush_all: Callable[[], None],
        flushed_where: Callable[[], int],
        run_blocking: RunBlocking,
        clock: IReactorTime,
        timeout_ms: int,
    ) -> None:
        self._flush_all = flush_all
        self._flushed_where = flushed_where
        self._run_blocking = run_blocking
        self._clock = clock
        self._timeout = timeout_ms / 1000.0
        self._pending: list[tuple[int, defer.Deferred[PutMessageStatus], IDelayedCall]] = []
        self._busy = False
        self._stopped = False

    def submit(self, end_offset: int) -> defer.Deferred[PutMessageStatus]:
        if end_offset <= self._flushed_where():
            return defer.succeed(PutMessageStatus.PUT_OK)
        d: defer.Deferred[PutMessageStatus] = defer.Deferred()

        def timed_out() -> None:
            self._pending = [p for p in self._pending if p[1] is not d]
            d.callback(PutMessageStatus.FLUSH_DISK_TIMEOUT)

        call = self._clock.callLater(self._timeout, timed_out)
        self._pending.append((end_offset, d, call))
        self.wakeup()
        return d

    def wakeup_for(self, end_offset: int) -> None:
        """A WAIT=false send: start a flush covering it without anyone waiting."""
        if end_offset > self._flushed_where() and not self._busy and not self._stopped:
            self._busy = True
            self._run_blocking(self._flush_all).addBoth(self._flushed)

    def wakeup(self) -> None:
        if self._busy or self._stopped or not self._pending:
            return
        self._busy = True
        d = self._run_blocking(self._flush_all)
        d.addCallbacks(self._flushed, self._failed)

    def _complete(self) -> None:
        flushed = self._flushed_where()
        still: list[tuple[int, defer.Deferred[PutMessageStatus], IDelayedCall]] = []
        for end, d, call in self._pending:
            if end <= flushed:
                if call.active():
                    call.cancel()
                d.callback(PutMessageStatus.PUT_OK)
            else:
                still.append((end, d, call))
        self._pending = still

    def _flushed(self, _: object) -> None:
        self._busy = False
        self._complete()
        self.wakeup()

    def _failed(self, failure: Failure) -> None:
        self._busy = False
        log.error("group commit flush failed: %s", failure.getErrorMessage())

    def stop(self) -> None:
        """Answer everything still waiting with what has been flushed so far."""
        self._stopped = True
        flushed = self._flushed_where()
        for end, d, call in self._pending:
            if call.active():
                call.cancel()
            d.callback(PutMessageStatus.PUT_OK if end <= flushed else PutMessageStatus.FLUSH_DISK_TIMEOUT)
        self._pending = []


class PeriodicFlushService:
    """Runs ``flush(thorough)`` every ``interval_ms`` on reactor time; thorough once per ``thorough_ms``."""

    def __init__(
        self,
        flush: Callable[[bool], None],
        run_blocking: RunBlocking,
        clock: IReactorTime,
        *,
        interval_ms: int,
        thorough_ms: int,
        name: str,
    ) -> None:
        self._flush = flush
        self._run_blocking = run_blocking
        self._clock = clock
        self._interval_ms = interval_ms
        self._thorough_ms = thorough_ms
        self._last_thorough = 0.0
        self._busy = False
        self.name = name
        self._loop = LoopingCall(self._tick)
        self._loop.clock = clock

    def start(self) -> None:
        self._last_thorough = self._clock.seconds()
        self._loop.start(self._interval_ms / 1000.0, now=False)

    def _tick(self) -> None:
        if self._busy:
            return
        now = self._clock.seconds()
        thorough = (now - self._last_thorough) * 1000 >= self._thorough_ms
        if thorough:
            self._last_thorough = now
        self._busy = True
        d = self._run_blocking(lambda: self._flush(thorough))
        d.addErrback(lambda f: log.error("%s failed: %s", self.name, f.getErrorMessage()))
        d.addBoth(self._done)

    def _done(self, _: object) -> None:
        self._busy = False

    def stop(self) -> None:
        if self._loop.running:
            self._loop.stop()


def run_inline(fn: FlushJob) -> defer.Deferred[None]:
    """``RunBlocking`` without a thread: the job runs at once (a ``Clock`` in unit tests has no threads)."""
    return defer.maybeDeferred(fn)


class FlushTarget(Protocol):
    """What the driver flushes: the store's side of the adapter."""

    config: MessageStoreConfig

    def flush_commit_log_all(self) -> None: ...

    def flush_commit_log_periodic(self, thorough: bool) -> None: ...

    def flush_consume_queues(self, thorough: bool) -> None: ...

    def flushed_where(self) -> int: ...

    def clean_files_periodically(self) -> int: ...


class TwistedFlushDriver:
    """Drives a store's flushing on ``clock``: the services Java's store runs as threads.

    ``run_blocking`` runs an fsync off the reactor thread (default: a one-thread pool when ``clock`` is a
    real reactor, inline for a bare ``Clock``).
    """

    def __init__(self, clock: IReactorTime, run_blocking: RunBlocking | None = None) -> None:
        self._clock = clock
        self._run_blocking_override = run_blocking
        self._thread: FlushThread | None = None
        self._runner: RunBlocking | None = None
        self._group_commit: GroupCommitService | None = None
        self._services: list[PeriodicFlushService] = []
        self._clean_loop: LoopingCall | None = None

    def _make_runner(self) -> RunBlocking:
        if self._run_blocking_override is not None:
            return self._run_blocking_override
        if not hasattr(self._clock, "callFromThread"):
            return run_inline
        self._thread = FlushThread(cast(IReactorFromThreads, self._clock))
        return self._thread.run

    def start(self, store: FlushTarget) -> None:
        """Start the flush services and the periodic clean-up for ``store``."""
        config = store.config
        run = self._runner = self._make_runner()
        if config.flush_disk_type is FlushDiskType.SYNC_FLUSH:
            self._group_commit = GroupCommitService(
                store.flush_commit_log_all, store.flushed_where, run, self._clock, config.sync_flush_timeout
            )
        else:
            self._services.append(
                PeriodicFlushService(
                    store.flush_commit_log_periodic,
                    run,
                    self._clock,
                    interval_ms=config.flush_interval_commit_log,
                    thorough_ms=config.flush_commit_log_thorough_interval,
                    name="FlushRealTimeService",
                )
            )
        self._services.append(
            PeriodicFlushService(
                store.flush_consume_queues,
                run,
                self._clock,
                interval_ms=config.flush_interval_consume_queue,
                thorough_ms=config.flush_consume_queue_thorough_interval,
                name="FlushConsumeQueueService",
            )
        )
        for svc in self._services:
            svc.start()
        self._clean_loop = LoopingCall(store.clean_files_periodically)
        self._clean_loop.clock = self._clock
        self._clean_loop.start(config.clean_resource_interval / 1000.0, now=False)

    def run(self, job: Callable[[], None]) -> bool:
        """Run a blocking ``job`` (an index file's fsync) off the reactor; False when not started."""
        if self._runner is None:
            return False
        self._runner(job)
        return True

    def wait_for_flush(self, result: PutMessageResult) -> defer.Deferred[PutMessageStatus]:
        """PUT_OK at once in ASYNC_FLUSH; in SYNC_FLUSH after the group commit fsynced past the record."""
        if not result.is_ok():
            return defer.succeed(result.status)
        if self._group_commit is None:
            return defer.succeed(PutMessageStatus.PUT_OK)
        if not result.wait_store_msg_ok:
            self._group_commit.wakeup_for(result.end_offset)
            return defer.succeed(PutMessageStatus.PUT_OK)
        return self._group_commit.submit(result.end_offset)

    def stop_services(self) -> None:
        """Stop the periodic services (the store then flushes everything itself)."""
        self._runner = None
        for svc in self._services:
            svc.stop()
        self._services = []
        if self._clean_loop is not None and self._clean_loop.running:
            self._clean_loop.stop()

    def stop(self) -> None:
        """Answer the sends still waiting (after the store's final flush) and stop the fsync thread."""
        if self._group_commit is not None:
            self._group_commit.stop()
            self._group_commit = None
        if self._thread is not None:
            self._thread.stop()
            self._thread = None
