"""``IndexFile`` and ``IndexService``: the hash index from ``topic#key`` to commitlog offsets."""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from rmqtwin.codec.java import java_string_hash
from rmqtwin.codec.message import MessageSysFlag
from rmqtwin.store_mirror.layouts import (
    INDEX_ENTRY,
    INDEX_ENTRY_SIZE,
    INDEX_HASH_SLOT_SIZE,
    INDEX_HEADER,
    INDEX_HEADER_SIZE,
    INDEX_SLOT,
    index_file_size,
)
from rmqtwin.store_mirror.record import (
    DispatchRequest,
)

log = logging.getLogger(__name__)

_INT_MAX = 0x7FFFFFFF


def index_key_hash(key: str) -> int:
    """``IndexFile.indexKeyHashMethod``: abs of the Java hash, Integer.MIN_VALUE mapped to 0."""
    h = abs(java_string_hash(key))
    return 0 if h > _INT_MAX else h


def build_key(topic: str, key: str) -> str:
    return f"{topic}#{key}"


def time_millis_to_file_name(ms: int) -> str:
    """``UtilAll.timeMillisToHumanString``: local time as yyyyMMddHHmmssSSS."""
    t = time.localtime(ms / 1000)
    return time.strftime("%Y%m%d%H%M%S", t) + f"{ms % 1000:03d}"


class IndexFile:
    def __init__(
        self,
        path: str,
        hash_slot_num: int,
        index_num: int,
        *,
        end_phy_offset: int = 0,
        end_timestamp: int = 0,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.file_size = index_file_size(hash_slot_num, index_num)
        self.read_only = read_only
        exists = os.path.exists(path)
        if read_only:
            self.fd = os.open(path, os.O_RDONLY)
        else:
            self.fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            if not exists:
                os.ftruncate(self.fd, self.file_size)
        size = os.fstat(self.fd).st_size
        if size != self.file_size:
            os.close(self.fd)
            raise ValueError(f"index file {path} has length {size}, expected {self.file_size}")
        self.mm = mmap.mmap(
            self.fd, self.file_size, access=mmap.ACCESS_READ if read_only else mmap.ACCESS_WRITE
        )
        (
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        ) = INDEX_HEADER.unpack_from(self.mm, 0)
        if self.index_count <= 0:
            self.index_count = 1
        if not exists:
            if end_phy_offset > 0:
                self.begin_phy_offset = self.end_phy_offset = end_phy_offset
            if end_timestamp > 0:
                self.begin_timestamp = self.end_timestamp = end_timestamp
            self._write_header()
        self._entries_base = INDEX_HEADER_SIZE + hash_slot_num * INDEX_HASH_SLOT_SIZE

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)

    def _write_header(self) -> None:
        INDEX_HEADER.pack_into(
            self.mm,
            0,
            self.begin_timestamp,
            self.end_timestamp,
            self.begin_phy_offset,
            self.end_phy_offset,
            self.hash_slot_count,
            self.index_count,
        )

    def is_write_full(self) -> bool:
        return self.index_count >= self.index_num

    def put_key(self, key: str, phy_offset: int, store_timestamp: int) -> bool:
        if self.index_count >= self.index_num:
            return False
        key_hash = index_key_hash(key)
        abs_slot_pos = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * INDEX_HASH_SLOT_SIZE
        slot_value = INDEX_SLOT.unpack_from(self.mm, abs_slot_pos)[0]
        if slot_value <= 0 or slot_value > self.index_count:
            slot_value = 0
        if self.begin_timestamp <= 0:
            time_diff = 0
        else:
            time_diff = int((store_timestamp - self.begin_timestamp) / 1000)
            time_diff = min(max(time_diff, 0), _INT_MAX)
        abs_index_pos = self._entries_base + self.index_count * INDEX_ENTRY_SIZE
        INDEX_ENTRY.pack_into(self.mm, abs_index_pos, key_hash, phy_offset, time_diff, slot_value)
        INDEX_SLOT.pack_into(self.mm, abs_slot_pos, self.index_count)
        if self.index_count <= 1:
            self.begin_phy_offset = phy_offset
            self.begin_timestamp = store_timestamp
        if slot_value == 0:
            self.hash_slot_count += 1
        self.index_count += 1
        self.end_phy_offset = phy_offset
        self.end_timestamp = store_timestamp
        self._write_header()
        return True

    def is_time_matched(self, begin: int, end: int) -> bool:
        return (
            (begin < self.begin_timestamp and end > self.end_timestamp)
            or self.begin_timestamp <= begin <= self.end_timestamp
            or self.begin_timestamp <= end <= self.end_timestamp
        )

    def select_phy_offset(self, phy_offsets: list[int], key: str, max_num: int, begin: int, end: int) -> None:
        key_hash = index_key_hash(key)
        abs_slot_pos = INDEX_HEADER_SIZE + (key_hash % self.hash_slot_num) * INDEX_HASH_SLOT_SIZE
        slot_value = INDEX_SLOT.unpack_from(self.mm, abs_slot_pos)[0]
        if slot_value <= 0 or slot_value > self.index_count or self.index_count <= 1:
            return
        next_index = slot_value
        while len(phy_offsets) < max_num:
            h, phy, time_diff, prev = INDEX_ENTRY.unpack_from(
                self.mm, self._entries_base + next_index * INDEX_ENTRY_SIZE
            )
            if time_diff < 0:
                break
            time_read = self.begin_timestamp + time_diff * 1000
            if h == key_hash and begin <= time_read <= end:
                phy_offsets.append(phy)
            if prev <= 0 or prev > self.index_count or prev == next_index or time_read < begin:
                break
            next_index = prev

    def flush(self) -> None:
        if not self.read_only:
            os.fdatasync(self.fd)

    def close(self) -> None:
        self.mm.close()
        os.close(self.fd)

    def destroy(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


@dataclass(slots=True)
class QueryOffsetResult:
    phy_offsets: list[int]
    index_last_update_timestamp: int
    index_last_update_phyoffset: int


class IndexService:
    """Index files under ``<store>/index``, rolled when full, queried newest first."""

    def __init__(
        self,
        store_path: str,
        hash_slot_num: int,
        index_num: int,
        *,
        max_msgs_num_batch: int = 64,
        read_only: bool = False,
        now_ms: Callable[[], int] | None = None,
        on_roll: Callable[[IndexFile], None] | None = None,
    ) -> None:
        self.store_path = store_path
        self.hash_slot_num = hash_slot_num
        self.index_num = index_num
        self.max_msgs_num_batch = max_msgs_num_batch
        self.read_only = read_only
        self.index_file_list: list[IndexFile] = []
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))
        self._on_roll = on_roll

    def load(self, last_exit_ok: bool, index_msg_timestamp: int) -> bool:
        if not os.path.isdir(self.store_path):
            return True
        for name in sorted(os.listdir(self.store_path)):
            path = os.path.join(self.store_path, name)
            if not name.isdigit() or not os.path.isfile(path):
                continue
            try:
                f = IndexFile(path, self.hash_slot_num, self.index_num, read_only=self.read_only)
            except ValueError as exc:
                log.error("load index file %s error: %s", path, exc)
                return False
            if not last_exit_ok and f.end_timestamp > index_msg_timestamp and not self.read_only:
                f.destroy()
                continue
            self.index_file_list.append(f)
        return True

    def get_and_create_last_index_file(self) -> IndexFile | None:
        prev: IndexFile | None = None
        end_phy = end_ts = 0
        if self.index_file_list:
            last = self.index_file_list[-1]
            if not last.is_write_full():
                return last
            prev = last
            end_phy, end_ts = last.end_phy_offset, last.end_timestamp
        if self.read_only:
            return None
        os.makedirs(self.store_path, exist_ok=True)
        now = self._now_ms()
        name = time_millis_to_file_name(now)
        while os.path.exists(os.path.join(self.store_path, name)) or (
            self.index_file_list and name <= self.index_file_list[-1].file_name
        ):
            now += 1
            name = time_millis_to_file_name(now)
        f = IndexFile(
            os.path.join(self.store_path, name),
            self.hash_slot_num,
            self.index_num,
            end_phy_offset=end_phy,
            end_timestamp=end_ts,
        )
        self.index_file_list.append(f)
        if prev is not None:
            if self._on_roll is not None:
                self._on_roll(prev)  # flushes it (off the reactor) and records it in the checkpoint
            else:
                prev.flush()
        return f

    def build_index(self, req: DispatchRequest) -> None:
        f = self.get_and_create_last_index_file()
        if f is None:
            return
        if req.commit_log_offset < f.end_phy_offset:
            return
        if MessageSysFlag.get_transaction_value(req.sys_flag) == MessageSysFlag.TRANSACTION_ROLLBACK_TYPE:
            return
        keys: list[str] = []
        if req.uniq_key is not None:
            keys.append(req.uniq_key)
        if req.keys:
            keys.extend(k for k in req.keys.split(" ") if k)
        for key in keys:
            full = build_key(req.topic, key)
            while not f.put_key(full, req.commit_log_offset, req.store_timestamp):
                nf = self.get_and_create_last_index_file()
                if nf is None or nf is f:
                    log.error("putKey error commitlog %d key %s", req.commit_log_offset, key)
                    return
                f = nf

    def query_offset(self, topic: str, key: str, max_num: int, begin: int, end: int) -> QueryOffsetResult:
        offsets: list[int] = []
        last_ts = last_phy = 0
        max_num = min(max_num, self.max_msgs_num_batch)
        full = build_key(topic, key)
        for i in range(len(self.index_file_list), 0, -1):
            f = self.index_file_list[i - 1]
            if i == len(self.index_file_list):
                last_ts, last_phy = f.end_timestamp, f.end_phy_offset
            if f.is_time_matched(begin, end):
                f.select_phy_offset(offsets, full, max_num, begin, end)
            if f.begin_timestamp < begin or len(offsets) >= max_num:
                break
        return QueryOffsetResult(offsets, last_ts, last_phy)

    def delete_expired_file(self, min_phy_offset: int) -> None:
        """Drop files wholly before the commitlog min offset (never the last one)."""
        doomed = [f for f in self.index_file_list[:-1] if f.end_phy_offset < min_phy_offset]
        for f in doomed:
            f.destroy()
        self.index_file_list = [f for f in self.index_file_list if f not in doomed]

    def flush(self) -> None:
        if self.index_file_list:
            self.index_file_list[-1].flush()

    def shutdown(self) -> None:
        for f in self.index_file_list:
            f.close()
        self.index_file_list = []

    def destroy(self) -> None:
        for f in self.index_file_list:
            f.destroy()
        self.index_file_list = []
