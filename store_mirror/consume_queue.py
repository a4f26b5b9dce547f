"""``ConsumeQueue``: per (topic, queueId) index of 20-byte entries into the commitlog, in commitlog order."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator

from rmqtwin.store_mirror.layouts import CQ_ENTRY, CQ_STORE_UNIT_SIZE
from rmqtwin.store_mirror.mapped_file import MappedFile, MappedFileQueue

log = logging.getLogger(__name__)

_INT_MAX = 0x7FFFFFFF


class PathOutsideStoreError(ValueError):
    """A topic or queue name that would put a consume-queue directory outside the store's root."""


def queue_dir_inside(store_path: str, topic: str, queue_id: int) -> str:
    """``store_path/topic/queue_id``, refused unless it resolves to a directory strictly inside
    ``store_path`` at depth two: whatever the broker let through, the store writes only under its
    root (names such as ``..``, ``a/b`` or absolute paths never reach the file system)."""
    root = os.path.realpath(store_path)
    if "\0" in topic:  # no file name holds one (realpath raises ValueError)
        raise PathOutsideStoreError(f"consume queue {topic!r}/{queue_id} is no path")
    path = os.path.realpath(os.path.join(root, topic, str(queue_id)))
    if os.path.dirname(os.path.dirname(path)) != root or topic in ("", ".", ".."):
        raise PathOutsideStoreError(f"consume queue {topic!r}/{queue_id} resolves outside {root}")
    return os.path.join(store_path, topic, str(queue_id))


def queue_dirs(store_path: str) -> Iterator[tuple[str, int, str]]:
    """(topic, queue id, directory) of each consume queue under ``store_path``, in name order as
    ``loadConsumeQueue`` lists them; entries that are no topic directory or no queue id are passed over."""
    if not os.path.isdir(store_path):
        return
    for topic in sorted(os.listdir(store_path)):
        topic_dir = os.path.join(store_path, topic)
        if not os.path.isdir(topic_dir):
            continue
        for name in sorted(os.listdir(topic_dir)):
            try:
                queue_id = int(name)
            except ValueError:
                continue
            yield topic, queue_id, os.path.join(topic_dir, name)


class ConsumeQueue:
    def __init__(
        self, topic: str, queue_id: int, store_path: str, mapped_file_size: int, read_only: bool = False
    ) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.mapped_file_size = mapped_file_size - mapped_file_size % CQ_STORE_UNIT_SIZE
        self.queue_dir = queue_dir_inside(store_path, topic, queue_id)
        self.mapped_file_queue = MappedFileQueue(self.queue_dir, self.mapped_file_size, read_only=read_only)
        self.max_physic_offset = -1
        self.min_logic_offset = 0

    def load(self) -> bool:
        return self.mapped_file_queue.load()

    def recover(self) -> None:
        """Find the end of valid entries (offset >= 0 and size > 0) starting from the third-last file."""
        files = self.mapped_file_queue.mapped_files
        if not files:
            return
        index = max(len(files) - 3, 0)
        mf = files[index]
        process_offset = mf.file_from_offset
        mapped_file_offset = 0
        while True:
            mapped_file_offset = 0
            mm = mf.mm
            for i in range(0, self.mapped_file_size, CQ_STORE_UNIT_SIZE):
                offset, size, _tags = CQ_ENTRY.unpack_from(mm, i)
                if offset >= 0 and size > 0:
                    mapped_file_offset = i + CQ_STORE_UNIT_SIZE
                    self.max_physic_offset = offset + size
                else:
                    break
            if mapped_file_offset == self.mapped_file_size:
                index += 1
                if index >= len(files):
                    break
                mf = files[index]
                process_offset = mf.file_from_offset
            else:
                break
        process_offset += mapped_file_offset
        self.mapped_file_queue.flushed_where = process_offset
        self.mapped_file_queue.truncate_dirty_files(process_offset)
        for f in self.mapped_file_queue.mapped_files:
            f.flushed_position = f.wrote_position

    def get_last_offset(self) -> int:
        """Physical offset just past the last entry's record (``ConsumeQueue.getLastOffset``)."""
        mf = self.mapped_file_queue.mapped_files[-1] if self.mapped_file_queue.mapped_files else None
        if mf is None or mf.wrote_position == 0:
            return -1
        offset, size, _ = CQ_ENTRY.unpack_from(mf.mm, mf.wrote_position - CQ_STORE_UNIT_SIZE)
        return offset + size

    def truncate_dirty_logic_files(self, phy_offset: int) -> None:
        """Drop entries pointing at or past ``phy_offset`` (the commitlog end after recovery)."""
        self.max_physic_offset = phy_offset
        mfq = self.mapped_file_queue
        while mfq.mapped_files:
            mf = mfq.mapped_files[-1]
            mf.wrote_position = 0
            mf.flushed_position = 0
            for i in range(0, self.mapped_file_size, CQ_STORE_UNIT_SIZE):
                offset, size, _ = CQ_ENTRY.unpack_from(mf.mm, i)
                if i == 0:
                    if offset >= phy_offset:
                        mfq.delete_files([mf])
                        break
                    mf.wrote_position = mf.flushed_position = CQ_STORE_UNIT_SIZE
                    self.max_physic_offset = offset + size
                elif offset >= 0 and size > 0:
                    if offset >= phy_offset:
                        self._zero_after(mf)
                        return
                    pos = i + CQ_STORE_UNIT_SIZE
                    mf.wrote_position = mf.flushed_position = pos
                    self.max_physic_offset = offset + size
                    if pos == self.mapped_file_size:
                        return
                else:
                    return
            else:
                return

    def _zero_after(self, mf: MappedFile) -> None:
        """Clear truncated entries so a later recovery does not resurrect them."""
        if not mf.read_only:
            mf.zero_tail(mf.wrote_position)

    def put_message_position_info(self, offset: int, size: int, tags_code: int, cq_offset: int) -> bool:
        """Append one entry; duplicates are ignored, and a first file at cq_offset != 0 is pre-blanked."""
        if offset + size <= self.max_physic_offset:
            return True
        expect_logic_offset = cq_offset * CQ_STORE_UNIT_SIZE
        mfq = self.mapped_file_queue
        mf = mfq.get_last_mapped_file(expect_logic_offset, need_create=True)
        if mf is None:
            return False
        if mf.first_create_in_queue and cq_offset != 0 and mf.wrote_position == 0:
            self.min_logic_offset = expect_logic_offset
            mfq.flushed_where = expect_logic_offset
            self._fill_pre_blank(mf, expect_logic_offset)
        if cq_offset != 0:
            current = mf.wrote_position + mf.file_from_offset
            if expect_logic_offset < current:
                return True
            if expect_logic_offset != current:
                log.error(
                    "[BUG]logic queue order maybe wrong, expectLogicOffset: %d currentLogicOffset: %d "
                    "topic: %s qid: %d",
                    expect_logic_offset,
                    current,
                    self.topic,
                    self.queue_id,
                )
        self.max_physic_offset = offset + size
        return mf.append(CQ_ENTRY.pack(offset, size, tags_code))

    def _fill_pre_blank(self, mf: MappedFile, until_where: int) -> None:
        blank = CQ_ENTRY.pack(0, _INT_MAX, 0)
        for _ in range(0, until_where % self.mapped_file_size, CQ_STORE_UNIT_SIZE):
            mf.append(blank)

    def get_index_buffer(self, start_index: int) -> memoryview | None:
        """Entries from ``start_index`` to the end of the file that holds it (as ``getIndexBuffer``)."""
        offset = start_index * CQ_STORE_UNIT_SIZE
        if offset < self.min_logic_offset:
            return None
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        return mf.select(offset % self.mapped_file_size)

    def get_entry(self, index: int) -> tuple[int, int, int] | None:
        offset = index * CQ_STORE_UNIT_SIZE
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
        if mf is None:
            return None
        pos = offset % self.mapped_file_size
        if pos + CQ_STORE_UNIT_SIZE > mf.wrote_position:
            return None
        entry: tuple[int, int, int] = CQ_ENTRY.unpack_from(mf.mm, pos)
        return entry

    def roll_next_file(self, index: int) -> int:
        total_units = self.mapped_file_size // CQ_STORE_UNIT_SIZE
        return index + total_units - index % total_units

    def get_min_offset_in_queue(self) -> int:
        return self.min_logic_offset // CQ_STORE_UNIT_SIZE

    def get_max_offset_in_queue(self) -> int:
        return self.mapped_file_queue.get_max_offset() // CQ_STORE_UNIT_SIZE

    def correct_min_offset(self, phy_min_offset: int) -> None:
        """The first entry pointing at or after the commitlog's min offset becomes the min."""
        mf = self.mapped_file_queue.get_first_mapped_file()
        if mf is None:
            return
        for i in range(0, mf.wrote_position, CQ_STORE_UNIT_SIZE):
            offset_py, _size, _tags = CQ_ENTRY.unpack_from(mf.mm, i)
            if offset_py >= phy_min_offset:
                self.min_logic_offset = mf.file_from_offset + i
                return

    def delete_expired_file(self, min_phy_offset: int) -> int:
        """Delete leading files whose last entry is below the commitlog min offset (never the last)."""
        mfq = self.mapped_file_queue
        doomed: list[MappedFile] = []
        for mf in mfq.mapped_files[:-1]:
            last = mf.wrote_position - CQ_STORE_UNIT_SIZE
            if last < 0:
                break
            offset, _size, _ = CQ_ENTRY.unpack_from(mf.mm, last)
            if offset < min_phy_offset:
                doomed.append(mf)
            else:
                break
        if doomed:
            mfq.delete_files(doomed)
        self.correct_min_offset(min_phy_offset)
        return len(doomed)

    def get_offset_in_queue_by_time(
        self, timestamp: int, pickup_store_timestamp: Callable[[int, int], int]
    ) -> int:
        """Binary search on store times (``getOffsetInQueueByTime``): exact match, else nearer neighbour."""
        low = self.get_min_offset_in_queue()
        high = self.get_max_offset_in_queue() - 1
        left = right = -1
        left_value = right_value = -1
        while high >= low:
            mid = (low + high) // 2
            entry = self.get_entry(mid)
            if entry is None:
                return 0
            store_time = pickup_store_timestamp(entry[0], entry[1])
            if store_time < 0:
                return 0
            if store_time == timestamp:
                return mid
            if store_time > timestamp:
                high = mid - 1
                right, right_value = mid, store_time
            else:
                low = mid + 1
                left, left_value = mid, store_time
        if left_value == -1:
            return max(right, 0)
        if right_value == -1:
            return left
        return right if abs(timestamp - left_value) > abs(timestamp - right_value) else left

    def flush(self, least_pages: int = 0) -> None:
        self.mapped_file_queue.flush(least_pages)

    def destroy(self) -> None:
        self.mapped_file_queue.destroy()
        with contextlib.suppress(OSError):
            os.rmdir(os.path.dirname(self.queue_dir))
