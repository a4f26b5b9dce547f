"""Fixed-size, offset-named, memory-mapped segment files (Java's ``MappedFile`` and ``MappedFileQueue``).

Segments are pre-allocated at full size because a Java broker refuses to load a store with a short file.
Writes go through the mapping; durability comes from ``fdatasync`` on the file descriptor, which releases
the GIL (unlike
``mmap.flush``), so flush threads never stall the reactor.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
import sys
import threading
from collections.abc import Iterator
from typing import ClassVar

log = logging.getLogger(__name__)

OS_PAGE_SIZE = 4096

COMMITLOG_WARM_CHUNK = 1 << 20
"""How far ahead of the commitlog's write position :meth:`MappedFile.append` faults pages in (see
``MappedFile._warm``). Consume queues append 20 bytes at a time and are not warmed: a chunk per queue
would allocate a MiB of disk for every queue that ever got a message."""

_MADV_POPULATE_WRITE = getattr(mmap, "MADV_POPULATE_WRITE", 23)  # Linux 5.14+; Python 3.11 lacks the name


def offset_to_file_name(offset: int) -> str:
    """``UtilAll.offset2FileName``: 20-digit zero-padded decimal."""
    return f"{offset:020d}"


class MappedFile:
    """One segment: a file of ``file_size`` bytes starting at logical offset ``file_from_offset``."""

    can_populate: ClassVar[bool] = sys.platform == "linux"
    """Whether ``MADV_POPULATE_WRITE`` works here (cleared at its first failure)."""

    def __init__(
        self, path: str, file_size: int, read_only: bool = False, create: bool = False, warm_chunk: int = 0
    ) -> None:
        self.path = path
        self.file_size = file_size
        self.read_only = read_only
        self.file_from_offset = int(os.path.basename(path))
        if create:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, file_size)
            except BaseException:
                os.close(fd)
                raise
        else:
            fd = os.open(path, os.O_RDONLY if read_only else os.O_RDWR)
        self.fd = fd
        size = os.fstat(fd).st_size
        if size != file_size:
            os.close(fd)
            raise ValueError(f"{path} has length {size}, expected {file_size}")
        access = mmap.ACCESS_READ if read_only else mmap.ACCESS_WRITE
        self.mm = mmap.mmap(fd, file_size, access=access)
        self.view = memoryview(self.mm)
        self.wrote_position = 0
        self.flushed_position = 0
        self.store_timestamp = 0  # store time of the last message appended (checkpoint physicMsgTimestamp)
        self.first_create_in_queue = False
        self._closed = False
        self.warm_chunk = warm_chunk
        # pages before this were faulted in writable by ``_warm`` (never, without a chunk)
        self._warm_end = 0 if warm_chunk else file_size

    @property
    def file_name(self) -> str:
        return os.path.basename(self.path)

    def is_full(self) -> bool:
        return self.wrote_position >= self.file_size

    def append(self, data: bytes | bytearray | memoryview) -> bool:
        pos = self.wrote_position
        end = pos + len(data)
        if end > self.file_size:
            return False
        if end > self._warm_end:
            self._warm(pos, end)
        self.mm[pos:end] = data
        self.wrote_position = end
        return True

    def _warm(self, pos: int, end: int) -> None:
        """Fault the pages from ``pos`` to one chunk past ``end`` in writable, in one call.

        Java's ``warmMappedFile`` writes zeros over a new file for the same reason: a first write to
        each page of a sparse mapping is a page fault that allocates the block, and 1 KiB appends paid
        one every few records (bench_store: 52 against 58-71 µs of CPU per append with it, under load).
        ``MADV_POPULATE_WRITE`` faults a whole chunk in one system call without changing a byte; where
        the kernel lacks it (before Linux 5.14) appends fault page by page as before.
        """
        start = max(self._warm_end, pos)
        start -= start % OS_PAGE_SIZE
        stop = min(self.file_size, end + self.warm_chunk - end % OS_PAGE_SIZE)
        self._warm_end = stop
        if MappedFile.can_populate and stop > start:
            try:
                self.mm.madvise(_MADV_POPULATE_WRITE, start, stop - start)
            except OSError:
                MappedFile.can_populate = False

    def select(self, pos: int, size: int | None = None) -> memoryview | None:
        """A view of ``[pos, pos+size)`` (or up to the write position) inside the readable region."""
        readable = self.wrote_position
        if size is None:
            if pos < 0 or pos >= readable:
                return None
            return self.view[pos:readable]
        if pos < 0 or pos + size > readable:
            return None
        return self.view[pos : pos + size]

    def flush(self, least_pages: int = 0) -> int:
        """fsync the file if at least ``least_pages`` dirty pages are pending; returns the flushed position.

        Safe to call from a worker thread while the reactor thread appends.
        """
        if self._closed or self.read_only:
            return self.flushed_position
        target = self.wrote_position
        if target <= self.flushed_position:
            return self.flushed_position
        if least_pages > 0 and (target // OS_PAGE_SIZE - self.flushed_position // OS_PAGE_SIZE) < least_pages:
            return self.flushed_position
        os.fdatasync(self.fd)
        self.flushed_position = max(self.flushed_position, target)
        return self.flushed_position

    def zero_tail(self, pos: int, chunk: int = 65536) -> None:
        """Zero leftover bytes after ``pos`` up to the first all-zero chunk, so stale data never reappears."""
        if self.read_only:
            return
        zeros = bytes(chunk)
        p = pos
        while p < self.file_size:
            end = min(p + chunk, self.file_size)
            if self.mm[p:end] == zeros[: end - p]:
                break
            self.mm[p:end] = zeros[: end - p]
            p = end

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.view.release()
            self.mm.close()
        except BufferError:  # a reader still holds a view; the mapping goes when it is collected
            log.debug("%s still referenced at close", self.path)
        os.close(self.fd)

    def destroy(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def last_modified(self) -> float:
        return os.stat(self.path).st_mtime


class MappedFileQueue:
    """The ordered segments of one directory (the commitlog, or one consume queue)."""

    def __init__(
        self, store_path: str, mapped_file_size: int, read_only: bool = False, warm_chunk: int = 0
    ) -> None:
        self.store_path = store_path
        self.mapped_file_size = mapped_file_size
        self.read_only = read_only
        self.warm_chunk = warm_chunk
        self.mapped_files: list[MappedFile] = []
        self.flushed_where = 0
        self.store_timestamp = 0
        self._lock = threading.Lock()

    def load(self) -> bool:
        """Map every segment; a segment of the wrong size fails the load, as in Java."""
        if not os.path.isdir(self.store_path):
            return True
        names = sorted(
            n for n in os.listdir(self.store_path) if not os.path.isdir(os.path.join(self.store_path, n))
        )
        for name in names:
            path = os.path.join(self.store_path, name)
            size = os.path.getsize(path)
            if size != self.mapped_file_size:
                log.warning(
                    "%s length %d not matched configured size %d, please check it",
                    path,
                    size,
                    self.mapped_file_size,
                )
                return False
            try:
                mf = MappedFile(
                    path, self.mapped_file_size, read_only=self.read_only, warm_chunk=self.warm_chunk
                )
            except ValueError:
                return False
            mf.wrote_position = self.mapped_file_size
            mf.flushed_position = self.mapped_file_size
            self.mapped_files.append(mf)
        return True

    def __iter__(self) -> Iterator[MappedFile]:
        return iter(list(self.mapped_files))

    def get_first_mapped_file(self) -> MappedFile | None:
        return self.mapped_files[0] if self.mapped_files else None

    def get_last_mapped_file(
        self, start_offset: int | None = None, need_create: bool = False
    ) -> MappedFile | None:
        last = self.mapped_files[-1] if self.mapped_files else None
        create_offset = -1
        if last is None and start_offset is not None:
            create_offset = start_offset - start_offset % self.mapped_file_size
        if last is not None and last.is_full():
            create_offset = last.file_from_offset + self.mapped_file_size
        if create_offset != -1 and need_create and not self.read_only:
            os.makedirs(self.store_path, exist_ok=True)
            path = os.path.join(self.store_path, offset_to_file_name(create_offset))
            mf = MappedFile(path, self.mapped_file_size, create=True, warm_chunk=self.warm_chunk)
            if not self.mapped_files:
                mf.first_create_in_queue = True
            with self._lock:
                self.mapped_files.append(mf)
            return mf
        return last

    def find_mapped_file_by_offset(
        self, offset: int, return_first_on_not_found: bool = False
    ) -> MappedFile | None:
        files = self.mapped_files
        if not files:
            return None
        first = files[0]
        index = offset // self.mapped_file_size - first.file_from_offset // self.mapped_file_size
        if 0 <= index < len(files):
            mf = files[index]
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        for mf in files:
            if mf.file_from_offset <= offset < mf.file_from_offset + self.mapped_file_size:
                return mf
        return first if return_first_on_not_found else None

    def get_min_offset(self) -> int:
        return self.mapped_files[0].file_from_offset if self.mapped_files else -1

    def get_max_offset(self) -> int:
        if not self.mapped_files:
            return 0
        last = self.mapped_files[-1]
        return last.file_from_offset + last.wrote_position

    def get_max_wrote_position(self) -> int:
        return self.get_max_offset()

    def flush(self, least_pages: int = 0) -> bool:
        """Flush the segment holding the flushed position; True when nothing was left to flush."""
        mf = self.find_mapped_file_by_offset(
            self.flushed_where, return_first_on_not_found=self.flushed_where == 0
        )
        if mf is None:
            return True
        ts = mf.store_timestamp
        pos = mf.flush(least_pages)
        where = mf.file_from_offset + pos
        result = where == self.flushed_where
        self.flushed_where = where
        if ts:
            self.store_timestamp = ts
        return result

    def flush_all(self) -> None:
        """Flush until the flushed position reaches the write position (crossing segment ends)."""
        for _ in range(len(self.mapped_files) + 1):
            before = self.flushed_where
            self.flush(0)
            if self.flushed_where >= self.get_max_offset() or self.flushed_where == before:
                break

    def truncate_dirty_files(self, offset: int) -> None:
        """Cut everything at and after ``offset``: later segments deleted, the containing one repositioned."""
        remove: list[MappedFile] = []
        for mf in self.mapped_files:
            tail = mf.file_from_offset + self.mapped_file_size
            if tail > offset:
                if offset >= mf.file_from_offset:
                    pos = offset % self.mapped_file_size
                    mf.wrote_position = pos
                    mf.flushed_position = min(mf.flushed_position, pos)
                else:
                    remove.append(mf)
        for mf in remove:
            if self.read_only:
                mf.close()
            else:
                mf.destroy()
        with self._lock:
            self.mapped_files = [mf for mf in self.mapped_files if mf not in remove]
        self.flushed_where = min(self.flushed_where, offset)

    def delete_files(self, files: list[MappedFile]) -> None:
        with self._lock:
            self.mapped_files = [mf for mf in self.mapped_files if mf not in files]
        for mf in files:
            if self.read_only:
                mf.close()
            else:
                mf.destroy()

    def destroy(self) -> None:
        for mf in self.mapped_files:
            mf.destroy()
        self.mapped_files = []
        self.flushed_where = 0
        with contextlib.suppress(OSError):
            os.rmdir(self.store_path)

    def close(self) -> None:
        for mf in self.mapped_files:
            mf.close()
