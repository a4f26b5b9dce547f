"""The store's own binary layouts: construct declarations (the readable spec) and the struct hot paths.

All integers are big-endian (Java ``ByteBuffer``). Sources: ``ConsumeQueue.putMessagePositionInfo``,
``index/IndexHeader``, ``index/IndexFile.putKey``, ``StoreCheckpoint``. Tests check that both agree.
"""

from __future__ import annotations

import struct

from construct import Bytes, Int32sb, Int64sb, Padding, Struct

# ---- consume queue entry (20 bytes): commitlog offset, record size, tags code
CQ_STORE_UNIT_SIZE = 20
ConsumeQueueEntry = Struct(
    "commit_log_offset" / Int64sb,
    "size" / Int32sb,
    "tags_code" / Int64sb,
)
CQ_ENTRY = struct.Struct(">qiq")

# ---- index file
INDEX_HEADER_SIZE = 40
INDEX_HASH_SLOT_SIZE = 4
INDEX_ENTRY_SIZE = 20
IndexHeader = Struct(
    "begin_timestamp" / Int64sb,
    "end_timestamp" / Int64sb,
    "begin_phy_offset" / Int64sb,
    "end_phy_offset" / Int64sb,
    "hash_slot_count" / Int32sb,
    "index_count" / Int32sb,
)
INDEX_HEADER = struct.Struct(">qqqqii")
IndexHashSlot = Struct("index" / Int32sb)
INDEX_SLOT = struct.Struct(">i")
IndexEntry = Struct(
    "key_hash" / Int32sb,
    "phy_offset" / Int64sb,
    "time_diff" / Int32sb,
    "prev_index" / Int32sb,
)
INDEX_ENTRY = struct.Struct(">iqii")

# ---- checkpoint: a 4 KiB file; 4.9.x uses the first three longs, 5.x the first five
CHECKPOINT_FILE_SIZE = 4096
Checkpoint = Struct(
    "physic_msg_timestamp" / Int64sb,
    "logics_msg_timestamp" / Int64sb,
    "index_msg_timestamp" / Int64sb,
    "master_flushed_offset" / Int64sb,
    "confirm_phy_offset" / Int64sb,
    Padding(CHECKPOINT_FILE_SIZE - 40),
)
CHECKPOINT = struct.Struct(">qqqqq")

# ---- the commitlog's end-of-file blank record (8 bytes)
BlankRecord = Struct("max_blank" / Int32sb, "magic" / Bytes(4))


def index_file_size(hash_slot_num: int, index_num: int) -> int:
    """Bytes of an index file with the given slot and entry counts (420,000,040 by default)."""
    return INDEX_HEADER_SIZE + hash_slot_num * INDEX_HASH_SLOT_SIZE + index_num * INDEX_ENTRY_SIZE
