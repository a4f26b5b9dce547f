"""``MessageStoreConfig``: the store settings that matter for layout and behaviour, with Java's defaults."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass


class FlushDiskType(enum.Enum):
    ASYNC_FLUSH = "ASYNC_FLUSH"
    SYNC_FLUSH = "SYNC_FLUSH"


@dataclass(slots=True)
class MessageStoreConfig:
    """Field names follow ``MessageStoreConfig.java`` in snake_case; defaults are 4.9.8's."""

    store_path_root_dir: str = os.path.join(os.path.expanduser("~"), "store")
    mapped_file_size_commit_log: int = 1024 * 1024 * 1024
    mapped_file_size_consume_queue: int = 300000 * 20
    flush_interval_commit_log: int = 500
    flush_commit_log_least_pages: int = 4
    flush_commit_log_thorough_interval: int = 10_000
    flush_interval_consume_queue: int = 1000
    flush_consume_queue_least_pages: int = 2
    flush_consume_queue_thorough_interval: int = 60_000
    clean_resource_interval: int = 10_000
    delete_when: str = "04"
    file_reserved_time: int = 72  # hours
    max_message_size: int = 1024 * 1024 * 4
    check_crc_on_recover: bool = True
    max_transfer_bytes_on_message_in_memory: int = 1024 * 256
    max_transfer_count_on_message_in_memory: int = 32
    max_transfer_bytes_on_message_in_disk: int = 1024 * 64
    max_transfer_count_on_message_in_disk: int = 8
    access_message_in_memory_max_ratio: int = 40
    message_index_enable: bool = True
    max_hash_slot_num: int = 5_000_000
    max_index_num: int = 5_000_000 * 4
    max_msgs_num_batch: int = 64
    message_index_safe: bool = False
    flush_disk_type: FlushDiskType = FlushDiskType.ASYNC_FLUSH
    sync_flush_timeout: int = 5000
    message_delay_level: str = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    default_query_max_num: int = 32
    broker_role: str = "ASYNC_MASTER"
    """``brokerRole``: a SLAVE's store refuses puts (``checkStoreStatus``); only replication appends."""
    # 4.9.8 rewrites delayed messages to SCHEDULE_TOPIC_XXXX inside CommitLog.putMessage; 5.x does it in the
    # broker (HookUtils.handleScheduleMessage) before calling the store. True gives the 4.9.8 split.
    handle_schedule_message: bool = True
    # The 5.x checkpoint carries masterFlushedOffset and confirmPhyOffset after the three 4.x timestamps.
    checkpoint_5x_fields: bool = True

    @property
    def store_path_commit_log(self) -> str:
        return os.path.join(self.store_path_root_dir, "commitlog")
