"""``DefaultMessageStore``: commitlog, consume queues, index, checkpoint, recovery and flushing as one store.

Mirrors Java's ``MessageStore`` interface in snake_case (see docs/ARCHITECTURE.md). Differences that matter:
dispatch to consume queues and the index happens synchronously inside ``put_message`` (strict commitlog order,
no reput thread), and ``load()`` also performs the start-up reput for records the consume queues do not cover.
"""

from __future__ import annotations

import bisect
import contextlib
import enum
import fcntl
import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.message import MessageConst, MessageExt, MessageSysFlag, decode_message_record
from rmqtwin.store_mirror.checkpoint import StoreCheckpoint
from rmqtwin.store_mirror.commitlog import (
    AppendMessageResult,
    AppendMessageStatus,
    CommitLog,
    PutMessageResult,
    PutMessageStatus,
)
from rmqtwin.store_mirror.consume_queue import ConsumeQueue, PathOutsideStoreError, queue_dirs
from rmqtwin.store_mirror.index import IndexFile, IndexService
from rmqtwin.store_mirror.layouts import CQ_ENTRY, CQ_STORE_UNIT_SIZE
from rmqtwin.store_mirror.record import (
    SCHEDULE_TOPIC,
    DelayTimeFn,
    DispatchRequest,
    MessageExtBrokerInner,
    parse_delay_levels,
)
from rmqtwin.store_mirror.store_config import FlushDiskType, MessageStoreConfig

if TYPE_CHECKING:
    from twisted.internet.defer import Deferred

log = logging.getLogger(__name__)

__all__ = [
    "AppendMessageResult",
    "AppendMessageStatus",
    "DefaultMessageStore",
    "FlushDiskType",
    "FlushDriver",
    "GetMessageResult",
    "GetMessageStatus",
    "MessageExtBrokerInner",
    "MessageFilter",
    "MessageStore",
    "MessageStoreConfig",
    "PutMessageResult",
    "PutMessageStatus",
    "QueryMessageResult",
]


class GetMessageStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class MessageFilter(Protocol):
    """Java's ``MessageFilter``: tag-code check on the consume queue, then (optionally) on the record."""

    def is_matched_by_consume_queue(self, tags_code: int | None, cq_ext_unit: object | None) -> bool: ...

    def is_matched_by_commit_log(self, msg_buffer: bytes, properties: dict[str, str] | None) -> bool: ...


@dataclass(slots=True)
class GetMessageResult:
    status: GetMessageStatus
    next_begin_offset: int
    min_offset: int
    max_offset: int
    message_buffers: list[bytes] = field(default_factory=list)
    message_queue_offsets: list[int] = field(default_factory=list)
    suggest_pulling_from_slave: bool = False

    @property
    def message_count(self) -> int:
        return len(self.message_buffers)

    @property
    def buffer_total_size(self) -> int:
        return sum(len(b) for b in self.message_buffers)


@dataclass(slots=True)
class QueryMessageResult:
    message_buffers: list[bytes] = field(default_factory=list)
    phy_offsets: list[int] = field(default_factory=list)
    index_last_update_timestamp: int = 0
    index_last_update_phyoffset: int = 0


FLUSH_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class FlushLatency:
    """How long commitlog flushes took, as a histogram's buckets (counts per upper bound, the last one
    unbounded) and sum. Plain numbers written by whichever thread flushes, read when metrics are
    scraped: the store knows nothing of Prometheus."""

    def __init__(self, bounds: tuple[float, ...] = FLUSH_LATENCY_BUCKETS) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)
        self.total_seconds = 0.0

    def observe(self, seconds: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, seconds)] += 1
        self.total_seconds += seconds

    def cumulative(self) -> list[tuple[float, int]]:
        """(upper bound, flushes that took at most that long), ``inf`` last."""
        out = []
        running = 0
        for bound, count in zip((*self.bounds, math.inf), self.counts, strict=True):
            running += count
            out.append((bound, running))
        return out


class MessageStore(Protocol):
    """Java's ``MessageStore`` interface as far as the broker uses it: what ``BrokerController`` depends on.

    Statuses are the enums ``PutMessageStatus`` and ``GetMessageStatus``; compare them by identity.
    """

    flush_latency: FlushLatency
    config: MessageStoreConfig
    """Java's ``getMessageStoreConfig()``: the broker changes some keys at run time (updateBrokerConfig)."""
    on_replicated: Callable[[str, int], None] | None
    """Told (topic, 1) of each record a slave's reput dispatches (Java's reput counts them in the store
    stats of a SLAVE)."""

    def load(self) -> bool: ...

    def start(self) -> None: ...

    def shutdown(self) -> None: ...

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult: ...

    def put_messages(self, batch: Sequence[MessageExtBrokerInner]) -> PutMessageResult: ...

    def wait_for_flush(self, result: PutMessageResult) -> Deferred[PutMessageStatus]: ...

    def get_message(  # noqa: PLR0917 - mirrors MessageStore.getMessage
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
    ) -> GetMessageResult: ...

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int: ...

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int: ...

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int: ...

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int: ...

    def get_earliest_message_time_all(self) -> int: ...

    def select_one_message_by_offset(
        self, commit_log_offset: int, size: int | None = None
    ) -> bytes | None: ...

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None: ...

    def query_message(
        self, topic: str, key: str, max_num: int, begin: int, end: int
    ) -> QueryMessageResult: ...

    def get_min_phy_offset(self) -> int: ...

    def get_max_phy_offset(self) -> int: ...

    def get_commit_log_data(self, offset: int) -> memoryview | None: ...

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool: ...

    def get_queue_ids(self, topic: str) -> list[int]: ...

    def delete_topics(self, topics: Iterable[str]) -> int: ...

    def get_topics(self) -> list[str]: ...

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None: ...

    def delete_expired_files(self, force: bool = False, now_ms: int | None = None) -> int: ...

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]: ...


class FlushDriver(Protocol):
    """Runs a writable store's flushing (``store_mirror.flush.TwistedFlushDriver`` on a reactor).

    The store hands itself to :meth:`start` and asks :meth:`run` for blocking jobs; it never schedules
    anything itself, so it needs no reactor and none is looked up behind the caller's back.
    """

    def start(self, store: DefaultMessageStore) -> None: ...

    def run(self, job: Callable[[], None]) -> bool: ...

    def wait_for_flush(self, result: PutMessageResult) -> Deferred[PutMessageStatus]: ...

    def stop_services(self) -> None: ...

    def stop(self) -> None: ...


def _total_physical_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return 16 * 1024**3


TOTAL_PHYSICAL_MEMORY_SIZE = _total_physical_memory()
_LOCKED_IN_PROCESS: set[str] = set()


class DefaultMessageStore:
    def __init__(
        self,
        store_dir: str,
        config: MessageStoreConfig | None = None,
        *,
        read_only: bool = False,
        flush: FlushDriver | None = None,
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        self.config = config if config is not None else MessageStoreConfig()
        self.on_replicated: Callable[[str, int], None] | None = None
        self.config.store_path_root_dir = store_dir
        self.store_dir = store_dir
        self.read_only = read_only
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))
        self._flush = flush
        self.flush_latency = FlushLatency()
        """Seconds of each commitlog flush that fsynced something (the twin's flush-latency metric)."""
        self.delay = DelayTimeFn(parse_delay_levels(self.config.message_delay_level))
        self.commit_log = CommitLog(
            os.path.join(store_dir, "commitlog"),
            self.config.mapped_file_size_commit_log,
            max_message_size=self.config.max_message_size,
            delay=self.delay,
            handle_schedule_message=self.config.handle_schedule_message,
            read_only=read_only,
            now_ms=self._now_ms,
        )
        self.commit_log.dispatcher = self._dispatch
        self.consume_queue_table: dict[str, dict[int, ConsumeQueue]] = {}
        self.checkpoint: StoreCheckpoint | None = None
        self.index_service = IndexService(
            os.path.join(store_dir, "index"),
            self.config.max_hash_slot_num,
            self.config.max_index_num,
            max_msgs_num_batch=self.config.max_msgs_num_batch,
            read_only=read_only,
            now_ms=self._now_ms,
            on_roll=self._on_index_roll,
        )
        self.last_exit_ok = True
        self.shutdown_flag = True
        self._reput_from = -1
        """Where a slave's next record to dispatch begins (-1: at the first byte it appends)."""
        self._lock_fd = -1
        self._lock_path = ""

    # ---- paths

    @property
    def consume_queue_dir(self) -> str:
        return os.path.join(self.store_dir, "consumequeue")

    @property
    def abort_file(self) -> str:
        return os.path.join(self.store_dir, "abort")

    @property
    def lock_file(self) -> str:
        return os.path.join(self.store_dir, "lock")

    # ---- lifecycle

    def load(self) -> bool:
        """Map every file and recover (abnormally when ``abort`` exists); False if the store is unusable."""
        self.last_exit_ok = not os.path.exists(self.abort_file)
        if not self.commit_log.load():
            return False
        if not self._load_consume_queue():
            return False
        self.checkpoint = StoreCheckpoint(
            os.path.join(self.store_dir, "checkpoint"), read_only=self.read_only
        )
        if self.config.message_index_enable and not self.index_service.load(
            self.last_exit_ok, self.checkpoint.index_msg_timestamp
        ):
            return False
        self._recover(self.last_exit_ok)
        return True

    def _load_consume_queue(self) -> bool:
        for topic, qid, _ in queue_dirs(self.consume_queue_dir):
            cq = self._new_cq(topic, qid)
            if not cq.load():
                return False
            self.consume_queue_table.setdefault(topic, {})[qid] = cq
        return True

    def _new_cq(self, topic: str, queue_id: int) -> ConsumeQueue:
        return ConsumeQueue(
            topic,
            queue_id,
            self.consume_queue_dir,
            self.config.mapped_file_size_consume_queue,
            self.read_only,
        )

    def _recover(self, last_exit_ok: bool) -> None:
        max_phy_cq = -1
        for cq in self._all_cqs():
            cq.recover()
            max_phy_cq = max(max_phy_cq, cq.max_physic_offset)
        crc = self.config.check_crc_on_recover
        if last_exit_ok or self.read_only:
            end = self.commit_log.recover_normally(crc)
        else:
            assert self.checkpoint is not None
            min_ts = (
                self.checkpoint.get_min_timestamp_index()
                if self.config.message_index_enable and self.config.message_index_safe
                else self.checkpoint.get_min_timestamp()
            )
            if not self.consume_queue_table:
                # No consume queue survived: re-dispatch from the first segment. (Java would start at the
                # checkpoint's segment and leave the queues without the older messages.)
                min_ts = 0
            end = self.commit_log.recover_abnormally(crc, min_ts, self._dispatch)
        if not self.commit_log.mapped_file_queue.mapped_files and not self.read_only:
            for cq in self._all_cqs():
                cq.destroy()
            self.consume_queue_table.clear()
        if max_phy_cq >= end:
            if max_phy_cq > end:
                log.warning("consume queues point past the commitlog end %d, truncating them", end)
            for cq in self._all_cqs():
                cq.truncate_dirty_logic_files(end)
        if not self.read_only:
            reput_from = max(
                [self.commit_log.get_min_offset(), *(cq.max_physic_offset for cq in self._all_cqs())]
            )
            for req in self.commit_log.iter_records(reput_from):
                self._dispatch(req)
        self._recover_topic_queue_table()
        self._reput_from = end

    def _recover_topic_queue_table(self) -> None:
        table: dict[str, int] = {}
        min_phy = self.commit_log.get_min_offset()
        for cq in self._all_cqs():
            table[f"{cq.topic}-{cq.queue_id}"] = cq.get_max_offset_in_queue()
            cq.correct_min_offset(min_phy)
        self.commit_log.topic_queue_table = table

    def _all_cqs(self) -> list[ConsumeQueue]:
        """A snapshot (``list()`` copies atomically under the GIL): the flush thread iterates it while the
        reactor thread may add queues."""
        return [cq for queues in list(self.consume_queue_table.values()) for cq in list(queues.values())]

    def start(self) -> None:
        """Take the lock, create ``abort`` and start the flush driver's services.

        Without a driver nothing flushes in the background (tools, tests): the store flushes on shutdown.
        """
        if self.read_only:
            self.shutdown_flag = False
            return
        os.makedirs(self.store_dir, exist_ok=True)
        lock_path = os.path.realpath(self.lock_file)
        if lock_path in _LOCKED_IN_PROCESS:  # fcntl locks do not exclude the same process; Java's do
            raise RuntimeError("Lock failed,MQ already started")
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)
        except OSError as exc:
            os.close(fd)
            raise RuntimeError("Lock failed,MQ already started") from exc
        _LOCKED_IN_PROCESS.add(lock_path)
        self._lock_path = lock_path
        os.pwrite(fd, b"lock", 0)
        os.fsync(fd)
        self._lock_fd = fd
        with open(self.abort_file, "wb"):
            pass
        self.shutdown_flag = False
        if self._flush is not None:
            self._flush.start(self)

    def shutdown(self) -> None:
        """Flush everything, write the checkpoint, remove ``abort`` and release the lock."""
        if self.shutdown_flag and self._lock_fd < 0:
            self._close_files()
            return
        self.shutdown_flag = True
        if self._flush is not None:
            self._flush.stop_services()
        if not self.read_only:
            self.flush_commit_log_all()
            self.flush_consume_queues(True)
        if self._flush is not None:
            self._flush.stop()
        if not self.read_only and self.checkpoint is not None:
            self.checkpoint.flush()
        self._close_files()
        if self._lock_fd >= 0:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.abort_file)
            os.close(self._lock_fd)
            self._lock_fd = -1
            _LOCKED_IN_PROCESS.discard(self._lock_path)

    def _close_files(self) -> None:
        self.commit_log.shutdown()
        for cq in self._all_cqs():
            cq.mapped_file_queue.close()
        self.index_service.shutdown()
        if self.checkpoint is not None:
            self.checkpoint.shutdown()

    # ---- flushing

    def flushed_where(self) -> int:
        """How far the commitlog is fsynced."""
        return self.commit_log.mapped_file_queue.flushed_where

    def flush_commit_log_all(self) -> None:
        before, started = self.flushed_where(), time.perf_counter()
        self.commit_log.mapped_file_queue.flush_all()
        self._note_flush(before, started)

    def flush_commit_log_periodic(self, thorough: bool) -> None:
        least = 0 if thorough else self.config.flush_commit_log_least_pages
        before, started = self.flushed_where(), time.perf_counter()
        self.commit_log.flush(least)
        self._note_flush(before, started)

    def _note_flush(self, before: int, started: float) -> None:
        if self.flushed_where() > before:  # an fsync ran
            self.flush_latency.observe(time.perf_counter() - started)
        self._note_physic_timestamp()

    def _note_physic_timestamp(self) -> None:
        ts = self.commit_log.mapped_file_queue.store_timestamp
        if ts and self.checkpoint is not None:
            self.checkpoint.physic_msg_timestamp = ts

    def flush_consume_queues(self, thorough: bool) -> None:
        least = 0 if thorough else self.config.flush_consume_queue_least_pages
        for cq in self._all_cqs():
            cq.flush(least)
        self.index_service.flush()
        if thorough and self.checkpoint is not None:
            self.checkpoint.flush()

    def _on_index_roll(self, full: IndexFile) -> None:
        """A full index file: fsync it, then note its end in the checkpoint (Java's FlushIndexFileThread)."""

        def flush() -> None:
            full.flush()
            if self.checkpoint is not None:
                self.checkpoint.index_msg_timestamp = full.end_timestamp
                self.checkpoint.flush()

        if self._flush is None or not self._flush.run(flush):
            flush()

    # ---- dispatch

    def _dispatch(self, req: DispatchRequest) -> None:
        tran = MessageSysFlag.get_transaction_value(req.sys_flag)
        if tran in (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE):
            cq = self.find_consume_queue(req.topic, req.queue_id)
            cq.put_message_position_info(
                req.commit_log_offset, req.msg_size, req.tags_code, req.consume_queue_offset
            )
        if self.config.message_index_enable:
            self.index_service.build_index(req)
        if self.checkpoint is not None:
            self.checkpoint.logics_msg_timestamp = req.store_timestamp

    def get_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """The queue if it exists (``getConsumeQueue``; ``find_consume_queue`` creates it)."""
        return self.consume_queue_table.get(topic, {}).get(queue_id)

    def find_consume_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        queues = self.consume_queue_table.setdefault(topic, {})
        cq = queues.get(queue_id)
        if cq is None:
            cq = self._new_cq(topic, queue_id)
            queues[queue_id] = cq
        return cq

    # ---- writes

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        return self.put_messages([msg])

    def put_messages(self, batch: Sequence[MessageExtBrokerInner]) -> PutMessageResult:
        if self.shutdown_flag or self.read_only or self.config.broker_role == "SLAVE":
            return PutMessageResult(PutMessageStatus.SERVICE_NOT_AVAILABLE)
        result = self.commit_log.put_messages(batch)
        if result.is_ok():
            result.wait_store_msg_ok = (
                batch[0].get_property(MessageConst.PROPERTY_WAIT_STORE_MSG_OK) != "false"
            )
        return result

    def append_to_commit_log(self, start_offset: int, data: bytes) -> bool:
        """A slave's store takes the master's commitlog bytes (``appendToCommitLog``) and dispatches the
        records they complete to the consume queues and the index (the slave's reput)."""
        if self.shutdown_flag or not self.commit_log.append_data(start_offset, data):
            return False
        self._reput_from = max(self._reput_from, self.commit_log.get_min_offset())
        requests, self._reput_from = self.commit_log.complete_records(self._reput_from)
        for req in requests:
            self._dispatch(req)
            if self.on_replicated is not None:
                self.on_replicated(req.topic, 1)
        return True

    def wait_for_flush(self, result: PutMessageResult) -> Deferred[PutMessageStatus]:
        """PUT_OK at once in ASYNC_FLUSH; in SYNC_FLUSH after the group commit fsynced past the record."""
        if self._flush is None:
            raise ValueError("a store without a flush driver cannot wait for flushes")
        return self._flush.wait_for_flush(result)

    # ---- reads

    def get_message(  # noqa: PLR0917 - mirrors MessageStore.getMessage
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        max_msg_nums: int,
        message_filter: MessageFilter | None = None,
    ) -> GetMessageResult:
        cfg = self.config
        max_offset_py = self.commit_log.get_max_offset()
        cq = self._queue_to_read(topic, queue_id)
        if cq is None:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, 0, 0)
        min_offset = cq.get_min_offset_in_queue()
        max_offset = cq.get_max_offset_in_queue()
        if max_offset == 0:
            return GetMessageResult(GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0, min_offset, max_offset)
        if offset < min_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_TOO_SMALL, min_offset, min_offset, max_offset)
        if offset == max_offset:
            return GetMessageResult(GetMessageStatus.OFFSET_OVERFLOW_ONE, offset, min_offset, max_offset)
        if offset > max_offset:
            return GetMessageResult(
                GetMessageStatus.OFFSET_OVERFLOW_BADLY, max_offset, min_offset, max_offset
            )
        buf = cq.get_index_buffer(offset)
        if buf is None:
            return GetMessageResult(
                GetMessageStatus.OFFSET_FOUND_NULL, cq.roll_next_file(offset), min_offset, max_offset
            )
        result = GetMessageResult(GetMessageStatus.NO_MATCHED_MESSAGE, offset, min_offset, max_offset)
        memory = TOTAL_PHYSICAL_MEMORY_SIZE * cfg.access_message_in_memory_max_ratio // 100
        max_filter = max(16000, max_msg_nums * CQ_STORE_UNIT_SIZE)
        next_phy_file_start = None
        max_phy_pulling = 0
        total_bytes = 0
        size = len(buf)
        i = 0
        while i < size and i < max_filter:
            offset_py, size_py, tags_code = CQ_ENTRY.unpack_from(buf, i)
            max_phy_pulling = offset_py
            if next_phy_file_start is not None and offset_py < next_phy_file_start:
                i += CQ_STORE_UNIT_SIZE
                continue
            count = len(result.message_buffers)
            if total_bytes and count:
                in_disk = max_offset_py - offset_py > memory
                if self._is_the_batch_full(size_py, max_msg_nums, total_bytes, count, in_disk):
                    break
            if message_filter is not None and not message_filter.is_matched_by_consume_queue(tags_code, None):
                i += CQ_STORE_UNIT_SIZE
                continue
            view = self.commit_log.get_message(offset_py, size_py)
            if view is None:
                if total_bytes == 0:
                    result.status = GetMessageStatus.MESSAGE_WAS_REMOVING
                next_phy_file_start = self.commit_log.roll_next_file(offset_py)
                i += CQ_STORE_UNIT_SIZE
                continue
            data = bytes(view)
            del view
            if message_filter is not None and not message_filter.is_matched_by_commit_log(data, None):
                i += CQ_STORE_UNIT_SIZE
                continue
            result.message_buffers.append(data)
            result.message_queue_offsets.append(offset + i // CQ_STORE_UNIT_SIZE)
            total_bytes += len(data)
            result.status = GetMessageStatus.FOUND
            next_phy_file_start = None
            i += CQ_STORE_UNIT_SIZE
        del buf
        result.next_begin_offset = offset + i // CQ_STORE_UNIT_SIZE
        result.suggest_pulling_from_slave = max_offset_py - max_phy_pulling > memory
        return result

    def _is_the_batch_full(  # DefaultMessageStore.isTheBatchFull
        self, size_py: int, max_msg_nums: int, total_bytes: int, count: int, in_disk: bool
    ) -> bool:
        """Whether the next message of ``size_py`` bytes stays out of a pull that has ``count`` messages
        of ``total_bytes``: the pull's own maximum, then the transfer limits for messages still in
        memory or (older than the memory ratio) on disk."""
        cfg = self.config
        if max_msg_nums <= count:
            return True
        if in_disk:
            return (
                total_bytes + size_py > cfg.max_transfer_bytes_on_message_in_disk
                or count > cfg.max_transfer_count_on_message_in_disk - 1
            )
        return (
            total_bytes + size_py > cfg.max_transfer_bytes_on_message_in_memory
            or count > cfg.max_transfer_count_on_message_in_memory - 1
        )

    def _queue_to_read(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        """``findConsumeQueue`` for a query: Java makes an empty queue object for any name, touching no
        file; a name that could not be a directory of this store (``""``, ``../x``) is such an empty
        queue here too (None), instead of the store's refusal."""
        try:
            return self.find_consume_queue(topic, queue_id)
        except PathOutsideStoreError:
            return None

    def get_max_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self._queue_to_read(topic, queue_id)
        return cq.get_max_offset_in_queue() if cq is not None else 0

    def get_min_offset_in_queue(self, topic: str, queue_id: int) -> int:
        cq = self._queue_to_read(topic, queue_id)
        return cq.get_min_offset_in_queue() if cq is not None else 0

    def get_commitlog_offset_in_queue(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self._queue_to_read(topic, queue_id)
        entry = cq.get_entry(consume_queue_offset) if cq is not None else None
        return entry[0] if entry is not None else 0

    def get_offset_in_queue_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        cq = self._queue_to_read(topic, queue_id)
        if cq is None:
            return 0
        return cq.get_offset_in_queue_by_time(timestamp, self._pickup_store_timestamp)

    def _pickup_store_timestamp(self, offset: int, size: int) -> int:
        return self.commit_log.pickup_store_timestamp(offset, size)

    def get_message_store_timestamp(self, topic: str, queue_id: int, consume_queue_offset: int) -> int:
        cq = self._queue_to_read(topic, queue_id)
        entry = cq.get_entry(consume_queue_offset) if cq is not None else None
        if entry is None:
            return -1
        return self.commit_log.pickup_store_timestamp(entry[0], entry[1])

    def get_earliest_message_time(self, topic: str, queue_id: int) -> int:
        first = self.get_min_offset_in_queue(topic, queue_id)
        return self.get_message_store_timestamp(topic, queue_id, first)

    def get_earliest_message_time_all(self) -> int:
        """Store time of the oldest commitlog record (Java's ``getEarliestMessageTime()``), -1 if none."""
        min_phy = self.commit_log.get_min_offset()
        if min_phy < 0 or self.commit_log.get_max_offset() <= min_phy:
            return -1
        data = self.select_one_message_by_offset(min_phy)
        if data is None:
            return -1
        return self.commit_log.pickup_store_timestamp(min_phy, len(data))

    def select_one_message_by_offset(self, commit_log_offset: int, size: int | None = None) -> bytes | None:
        """The stored record at ``commit_log_offset`` (size read from the record when not given)."""
        if commit_log_offset < self.commit_log.get_min_offset():
            return None
        if size is None:
            head = self.commit_log.get_message(commit_log_offset, 4)
            if head is None:
                return None
            size = int.from_bytes(head, "big", signed=True)
            del head
            if size <= 0:
                return None
        view = self.commit_log.get_message(commit_log_offset, size)
        if view is None:
            return None
        data = bytes(view)
        del view
        return data

    def look_message_by_offset(self, commit_log_offset: int) -> MessageExt | None:
        """The decoded message at ``commit_log_offset``, or None when nothing valid is there."""
        data = self.select_one_message_by_offset(commit_log_offset)
        if data is None:
            return None
        try:  # the body as stored (MessageDecoder.decode(buf, readBody=true, deCompressBody=false))
            msg, _size = decode_message_record(data, 0, decompress=False)
        except CodecError:
            return None
        return msg

    def query_message(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryMessageResult:
        """Records indexed under ``topic#key`` stored within [begin, end], retried like ``queryMessage``."""
        result = QueryMessageResult()
        last_query_msg_time = end
        for _ in range(3):
            qr = self.index_service.query_offset(topic, key, max_num, begin, last_query_msg_time)
            result.index_last_update_timestamp = qr.index_last_update_timestamp
            result.index_last_update_phyoffset = qr.index_last_update_phyoffset
            offsets = sorted(qr.phy_offsets)
            for m, off in enumerate(offsets):
                data = self.select_one_message_by_offset(off)
                if data is None or off in result.phy_offsets:
                    continue
                if m == 0:
                    last_query_msg_time = self.commit_log.pickup_store_timestamp(off, len(data))
                result.message_buffers.append(data)
                result.phy_offsets.append(off)
            if result.message_buffers:
                break
            if last_query_msg_time < begin:
                break
        return result

    def get_min_phy_offset(self) -> int:
        return self.commit_log.get_min_offset()

    def get_commit_log_data(self, offset: int) -> memoryview | None:
        """From ``offset`` to the end of what its file holds (``getCommitLogData``, what HA sends)."""
        return self.commit_log.get_data(offset)

    def get_max_phy_offset(self) -> int:
        return self.commit_log.get_max_offset()

    def get_topics(self) -> list[str]:
        return sorted(self.consume_queue_table)

    def get_queue_ids(self, topic: str) -> list[int]:
        return sorted(self.consume_queue_table.get(topic, {}))

    def delete_topics(self, topics: Iterable[str]) -> int:
        count = 0
        for topic in topics:
            queues = self.consume_queue_table.pop(topic, None)
            if not queues:
                continue
            for qid, cq in queues.items():
                cq.destroy()
                self.commit_log.topic_queue_table.pop(f"{topic}-{qid}", None)
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(self.consume_queue_dir, topic))
            count += 1
        return count

    def clean_expired_consume_queues(self) -> list[tuple[str, int]]:
        """``cleanExpiredConsumerQueue``: a consume queue whose last entry points below the commitlog's
        min offset is destroyed (all but the schedule topic's), a topic left without queues goes; the
        ``(topic, queueId)`` destroyed. An empty queue (last offset -1) stays, as in Java."""
        min_phy = self.commit_log.get_min_offset()
        destroyed = []
        for topic, queues in list(self.consume_queue_table.items()):
            if topic == SCHEDULE_TOPIC:
                continue
            for qid, cq in list(queues.items()):
                last = cq.get_last_offset()
                if last != -1 and last < min_phy:
                    self.commit_log.topic_queue_table.pop(f"{topic}-{qid}", None)
                    cq.destroy()
                    del queues[qid]
                    destroyed.append((topic, qid))
            if not queues:
                del self.consume_queue_table[topic]
        return destroyed

    # ---- retention

    def delete_expired_files(self, force: bool = False, now_ms: int | None = None) -> int:
        """Delete commitlog segments older than ``fileReservedTime`` (all but the last when ``force``),
        then cut consume queues and index files that point below the new commitlog min offset."""
        if self.read_only:
            return 0
        now = self._now_ms() if now_ms is None else now_ms
        deleted = self.commit_log.delete_expired_file(
            self.config.file_reserved_time * 3600 * 1000, now, force
        )
        min_phy = self.commit_log.get_min_offset()
        if deleted and min_phy >= 0:
            for cq in self._all_cqs():
                cq.delete_expired_file(min_phy)
            self.index_service.delete_expired_file(min_phy)
        return deleted

    def is_time_to_delete(self, now_ms: int | None = None) -> bool:
        """``deleteWhen``: local hours (``"04"``, or ``"04;05"``) at which expired files are removed."""
        now = self._now_ms() if now_ms is None else now_ms
        hour = time.localtime(now / 1000).tm_hour
        return any(h.strip() and int(h) == hour for h in self.config.delete_when.split(";"))

    def clean_files_periodically(self) -> int:
        return self.delete_expired_files(force=False) if self.is_time_to_delete() else 0
