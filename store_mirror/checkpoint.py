"""``StoreCheckpoint``: the 4 KiB file holding the timestamps recovery starts from."""

from __future__ import annotations

import mmap
import os

from rmqtwin.store_mirror.layouts import CHECKPOINT, CHECKPOINT_FILE_SIZE


class StoreCheckpoint:
    """Three timestamps (4.x) plus masterFlushedOffset and confirmPhyOffset (5.x), at fixed positions."""

    def __init__(self, path: str, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        self.physic_msg_timestamp = 0
        self.logics_msg_timestamp = 0
        self.index_msg_timestamp = 0
        self.master_flushed_offset = 0
        self.confirm_phy_offset = 0
        self._fd = -1
        self._mm: mmap.mmap | None = None
        exists = os.path.exists(path)
        if read_only:
            if exists:
                with open(path, "rb") as f:
                    data = f.read(CHECKPOINT.size)
                if len(data) == CHECKPOINT.size:
                    self._set(CHECKPOINT.unpack(data))
            return
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size < CHECKPOINT_FILE_SIZE:
            os.ftruncate(self._fd, CHECKPOINT_FILE_SIZE)
        self._mm = mmap.mmap(self._fd, CHECKPOINT_FILE_SIZE)
        if exists:
            self._set(CHECKPOINT.unpack_from(self._mm, 0))

    def _set(self, values: tuple[int, ...]) -> None:
        (
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.master_flushed_offset,
            self.confirm_phy_offset,
        ) = values

    def get_min_timestamp(self) -> int:
        """min(physic, logics) - 3 s, floored at 0 (the abnormal-recovery starting point)."""
        return max(min(self.physic_msg_timestamp, self.logics_msg_timestamp) - 3000, 0)

    def get_min_timestamp_index(self) -> int:
        return min(self.get_min_timestamp(), self.index_msg_timestamp)

    def flush(self) -> None:
        if self._mm is None:
            return
        CHECKPOINT.pack_into(
            self._mm,
            0,
            self.physic_msg_timestamp,
            self.logics_msg_timestamp,
            self.index_msg_timestamp,
            self.master_flushed_offset,
            self.confirm_phy_offset,
        )
        os.fdatasync(self._fd)

    def shutdown(self) -> None:
        if self._mm is None:
            return
        self.flush()
        self._mm.close()
        os.close(self._fd)
        self._mm = None
