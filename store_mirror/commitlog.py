"""``CommitLog``: the append-only record log in offset-named segments, and its recovery scans."""

from __future__ import annotations

import enum
import logging
import struct
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.java import in_java_hash_map_order
from rmqtwin.codec.message import (
    BLANK_MAGIC_CODE,
    END_FILE_MIN_BLANK_LENGTH,
    MESSAGE_MAGIC_CODE,
    MESSAGE_MAGIC_CODE_V2,
    Buffer,
    MessageConst,
    MessageSysFlag,
    create_offset_msg_id,
    encode_message_record,
    fill_append_fields,
    read_store_timestamp,
    string_to_properties,
)
from rmqtwin.store_mirror.mapped_file import COMMITLOG_WARM_CHUNK, MappedFile, MappedFileQueue
from rmqtwin.store_mirror.record import (
    SCHEDULE_TOPIC,
    DelayTimeFn,
    DispatchRequest,
    MessageExtBrokerInner,
    check_message_and_return_size,
    compute_tags_code,
    record_size,
    write_blank,
)

log = logging.getLogger(__name__)

_Q = struct.Struct(">q")
_MAX_TOPIC_LENGTH = 127
_MAX_PROPERTIES_LENGTH = 32767


class PutMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    CREATE_MAPEDFILE_FAILED = "CREATE_MAPEDFILE_FAILED"
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    OS_PAGECACHE_BUSY = "OS_PAGECACHE_BUSY"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class AppendMessageStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    END_OF_FILE = "END_OF_FILE"
    MESSAGE_SIZE_EXCEEDED = "MESSAGE_SIZE_EXCEEDED"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


@dataclass(slots=True)
class AppendMessageResult:
    status: AppendMessageStatus
    wrote_offset: int = 0
    wrote_bytes: int = 0
    msg_id: str = ""
    store_timestamp: int = 0
    logics_offset: int = 0
    msg_num: int = 1


@dataclass(slots=True)
class PutMessageResult:
    status: PutMessageStatus
    append: AppendMessageResult | None = None
    wait_store_msg_ok: bool = True

    def is_ok(self) -> bool:
        return self.append is not None and self.append.status is AppendMessageStatus.PUT_OK

    @property
    def end_offset(self) -> int:
        """Commitlog offset just past the written bytes (what SYNC_FLUSH waits for)."""
        if self.append is None:
            return 0
        return self.append.wrote_offset + self.append.wrote_bytes


class CommitLog:
    def __init__(
        self,
        store_path: str,
        mapped_file_size: int,
        *,
        max_message_size: int,
        delay: DelayTimeFn,
        handle_schedule_message: bool = True,
        read_only: bool = False,
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        self.mapped_file_queue = MappedFileQueue(
            store_path, mapped_file_size, read_only=read_only, warm_chunk=COMMITLOG_WARM_CHUNK
        )
        self.mapped_file_size = mapped_file_size
        self.max_message_size = max_message_size
        self.delay = delay
        self.handle_schedule_message = handle_schedule_message
        self.read_only = read_only
        self.topic_queue_table: dict[str, int] = {}
        self.put_lock = threading.Lock()
        self.begin_time_in_lock = 0
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))
        self.dispatcher: Callable[[DispatchRequest], None] | None = None

    # ---- loading and recovery

    def load(self) -> bool:
        return self.mapped_file_queue.load()

    def check_message(self, buf: Buffer, pos: int, limit: int, check_crc: bool) -> DispatchRequest:
        return check_message_and_return_size(buf, pos, limit, check_crc, self.delay)

    def _scan_from(
        self, index: int, check_crc: bool, dispatch: Callable[[DispatchRequest], None] | None
    ) -> int:
        """Walk valid records from file ``index``; return the offset where the first invalid one starts.
        Without ``dispatch`` (a clean restart) only each record's validity and size are read."""
        files = self.mapped_file_queue.mapped_files
        mf = files[index]
        process_offset = mf.file_from_offset
        pos = 0
        while True:
            if dispatch is None:
                size = record_size(mf.mm, pos, self.mapped_file_size, check_crc, self.delay)
            else:
                req = self.check_message(mf.mm, pos, self.mapped_file_size, check_crc)
                size = req.msg_size if req.success else -1
                if size > 0:
                    dispatch(req)
            if size > 0:
                pos += size
            elif size == 0:
                index += 1
                if index >= len(files):
                    break
                mf = files[index]
                process_offset = mf.file_from_offset
                pos = 0
            else:
                if pos < self.mapped_file_size and any(mf.mm[pos : min(pos + 8, self.mapped_file_size)]):
                    log.warning(
                        "commitlog %s: invalid record at %d (offset %d), truncating the tail",
                        mf.file_name,
                        pos,
                        process_offset + pos,
                    )
                break
        return process_offset + pos

    def recover_normally(self, check_crc: bool) -> int:
        """Clean shutdown: scan the last three files to the first invalid record; returns the end offset."""
        files = self.mapped_file_queue.mapped_files
        if not files:
            return 0
        end = self._scan_from(max(len(files) - 3, 0), check_crc, None)
        self._truncate(end)
        return end

    def recover_abnormally(
        self, check_crc: bool, min_timestamp: int, dispatch: Callable[[DispatchRequest], None] | None
    ) -> int:
        """After a crash: start at the newest file older than the checkpoint, re-dispatching records."""
        files = self.mapped_file_queue.mapped_files
        if not files:
            return 0
        index = 0
        for i in range(len(files) - 1, -1, -1):
            if self._is_mapped_file_matched_recover(files[i], min_timestamp):
                index = i
                break
        end = self._scan_from(index, check_crc, dispatch)
        self._truncate(end)
        return end

    def _is_mapped_file_matched_recover(self, mf: MappedFile, min_timestamp: int) -> bool:
        req = check_message_and_return_size(mf.mm, 0, 8, False)
        if not req.success and struct.unpack_from(">i", mf.mm, 4)[0] not in (
            MESSAGE_MAGIC_CODE,
            MESSAGE_MAGIC_CODE_V2,
        ):
            return False
        store_ts = read_store_timestamp(mf.mm, 0)
        return store_ts != 0 and store_ts <= min_timestamp

    def _truncate(self, end: int) -> None:
        mfq = self.mapped_file_queue
        mfq.truncate_dirty_files(end)
        mfq.flushed_where = end
        if not self.read_only:
            mf = mfq.find_mapped_file_by_offset(end)
            if mf is not None and mf.wrote_position < self.mapped_file_size:
                mf.zero_tail(mf.wrote_position)
        for mf in mfq.mapped_files:
            mf.flushed_position = mf.wrote_position

    # ---- append

    def _check(self, msg: MessageExtBrokerInner) -> PutMessageStatus | None:
        if len(msg.topic.encode()) > _MAX_TOPIC_LENGTH:
            return PutMessageStatus.MESSAGE_ILLEGAL
        if len(msg.get_properties_string()) > _MAX_PROPERTIES_LENGTH:
            return PutMessageStatus.MESSAGE_ILLEGAL
        if len(msg.body) > self.max_message_size:
            return PutMessageStatus.MESSAGE_ILLEGAL
        return None

    def _rewrite_schedule(self, msg: MessageExtBrokerInner) -> None:
        """4.9.8 ``asyncPutMessage``: a delayed message goes to SCHEDULE_TOPIC_XXXX, queue level-1."""
        if (
            msg.tran_type not in (MessageSysFlag.TRANSACTION_NOT_TYPE, MessageSysFlag.TRANSACTION_COMMIT_TYPE)
            or msg.topic == SCHEDULE_TOPIC
        ):
            return
        props = msg.properties if msg.properties else string_to_properties(msg.get_properties_string())
        level_text = props.get(MessageConst.PROPERTY_DELAY_TIME_LEVEL)
        if not level_text:
            return
        level = int(level_text)
        if level <= 0:
            return
        if level > self.delay.max_level:
            level = self.delay.max_level
            props[MessageConst.PROPERTY_DELAY_TIME_LEVEL] = str(level)
        props[MessageConst.PROPERTY_REAL_TOPIC] = msg.topic
        props[MessageConst.PROPERTY_REAL_QUEUE_ID] = str(msg.queue_id)
        msg.set_properties(in_java_hash_map_order(props))
        msg.topic = SCHEDULE_TOPIC
        msg.queue_id = level - 1

    def put_message(self, msg: MessageExtBrokerInner) -> PutMessageResult:
        return self.put_messages([msg])

    def put_messages(self, batch: Sequence[MessageExtBrokerInner]) -> PutMessageResult:
        """Append one message or a batch (one queue, consecutive queue offsets, never split over files)."""
        encoded = self._encode_batch(batch)
        if not isinstance(encoded, list):
            return PutMessageResult(encoded)
        total = sum(len(e) for e in encoded)
        with self.put_lock:
            now = self._now_ms()
            self.begin_time_in_lock = now
            try:
                mf = self._file_with_room(total)
                if mf is None:
                    return PutMessageResult(PutMessageStatus.CREATE_MAPEDFILE_FAILED)
                wrote_offset = mf.file_from_offset + mf.wrote_position
                first = batch[0]
                key = f"{first.topic}-{first.queue_id}"
                queue_offset = self.topic_queue_table.get(key, 0)
                tran = MessageSysFlag.get_transaction_value(first.sys_flag)
                advances = tran in (
                    MessageSysFlag.TRANSACTION_NOT_TYPE,
                    MessageSysFlag.TRANSACTION_COMMIT_TYPE,
                )
                msg_ids: list[str] = []
                requests: list[DispatchRequest] = []
                phy = wrote_offset
                qo = queue_offset if advances else 0
                for msg, data in zip(batch, encoded, strict=True):
                    fill_append_fields(data, queue_offset=qo, commitlog_offset=phy, store_timestamp=now)
                    msg.store_timestamp = now
                    msg.queue_offset = qo
                    msg.commitlog_offset = phy
                    msg.store_size = len(data)
                    msg_ids.append(create_offset_msg_id(msg.store_host, phy))
                    requests.append(self._dispatch_request(msg, phy, len(data), qo, now))
                    phy += len(data)
                    if advances:
                        qo += 1
                mf.append(encoded[0] if len(encoded) == 1 else b"".join(encoded))
                mf.store_timestamp = now
                if advances:
                    self.topic_queue_table[key] = queue_offset + len(batch)
                if self.dispatcher is not None:
                    for req in requests:
                        self.dispatcher(req)
            finally:
                self.begin_time_in_lock = 0
        result = AppendMessageResult(
            AppendMessageStatus.PUT_OK,
            wrote_offset,
            total,
            ",".join(msg_ids),
            now,
            queue_offset if advances else 0,
            len(batch),
        )
        return PutMessageResult(PutMessageStatus.PUT_OK, result)

    def _encode_batch(self, batch: Sequence[MessageExtBrokerInner]) -> list[bytearray] | PutMessageStatus:
        """The batch's records, checked and encoded outside the put lock; or why it is refused."""
        if self.read_only:
            return PutMessageStatus.SERVICE_NOT_AVAILABLE
        if not batch:
            return PutMessageStatus.MESSAGE_ILLEGAL
        if len(batch) > 1 and any(
            m.tran_type != MessageSysFlag.TRANSACTION_NOT_TYPE
            or (m.get_property(MessageConst.PROPERTY_DELAY_TIME_LEVEL) or "0") not in ("", "0")
            for m in batch
        ):
            # CommitLog.asyncPutMessages: batches may carry neither transactions nor delay levels
            return PutMessageStatus.MESSAGE_ILLEGAL
        for msg in batch:
            status = self._check(msg)
            if status is not None:
                return status
            if self.handle_schedule_message:
                self._rewrite_schedule(msg)
        try:
            encoded = [bytearray(encode_message_record(m)) for m in batch]
        except CodecError as exc:
            log.warning("message rejected by the encoder: %s", exc)
            return PutMessageStatus.MESSAGE_ILLEGAL
        total = sum(len(e) for e in encoded)
        if len(encoded) == 1 and len(encoded[0]) > self.max_message_size + 64 * 1024:
            return PutMessageStatus.MESSAGE_ILLEGAL
        if len(encoded) > 1 and total > self.max_message_size:
            # The batch encoder's limit: its records together, headers and properties included
            # (a 4.5 MiB batch of 0.9 MiB bodies is refused by 4.9.7 and 5.5.0 alike).
            return PutMessageStatus.MESSAGE_ILLEGAL
        if total + END_FILE_MIN_BLANK_LENGTH > self.mapped_file_size:
            return PutMessageStatus.MESSAGE_ILLEGAL
        return encoded

    def _file_with_room(self, size: int) -> MappedFile | None:
        """The last commitlog file, or a new one when ``size`` bytes do not fit in what the last has
        left (that rest is filled with the blank end-of-file record, as ``doAppend`` answers
        END_OF_FILE); None when no file could be created."""
        mf = self.mapped_file_queue.get_last_mapped_file(0, need_create=True)
        if mf is None:
            return None
        max_blank = self.mapped_file_size - mf.wrote_position
        if size + END_FILE_MIN_BLANK_LENGTH > max_blank:
            write_blank(mf.mm, mf.wrote_position, max_blank)
            mf.wrote_position = self.mapped_file_size
            mf = self.mapped_file_queue.get_last_mapped_file(0, need_create=True)
        return mf

    def append_data(self, start_offset: int, data: bytes) -> bool:
        """A slave appends what its master sent (``CommitLog.appendData``): raw commitlog bytes at
        ``start_offset``, which must be where this log ends; a transfer never crosses a file end."""
        if self.read_only:
            return False
        with self.put_lock:
            if self.get_max_offset() not in (start_offset, 0):
                return False
            mf = self.mapped_file_queue.get_last_mapped_file(start_offset, need_create=True)
            if mf is None:
                return False
            if not self.mapped_file_queue.mapped_files[1:] and mf.wrote_position == 0:
                mf.wrote_position = start_offset - mf.file_from_offset
            return mf.append(data)

    def complete_records(self, start: int, check_crc: bool = False) -> tuple[list[DispatchRequest], int]:
        """The whole records from ``start`` on and where the next begins: the one walk of the log
        (blank records skip to the next file; it stops at the end of data, inside a record still being
        written, as a slave's log may end while the master sends the rest, or at an invalid record)."""
        out: list[DispatchRequest] = []
        offset = start
        end = self.get_max_offset()
        while offset < end:
            mf = self.mapped_file_queue.find_mapped_file_by_offset(offset)
            if mf is None:
                break
            pos = offset % self.mapped_file_size
            if mf.wrote_position - pos < 8:
                break
            total, magic = struct.unpack_from(">ii", mf.mm, pos)
            if magic == BLANK_MAGIC_CODE:
                offset = self.roll_next_file(offset)
                continue
            if total <= 0 or pos + total > mf.wrote_position:
                break
            req = self.check_message(mf.mm, pos, mf.wrote_position, check_crc)
            if not req.success or req.msg_size <= 0:
                log.warning("commitlog: no valid record at %d, the walk stops there", offset)
                break
            out.append(req)
            offset += req.msg_size
        return out, offset

    def _dispatch_request(
        self, msg: MessageExtBrokerInner, phy: int, size: int, queue_offset: int, store_ts: int
    ) -> DispatchRequest:
        props = msg.properties if msg.properties else string_to_properties(msg.get_properties_string())
        return DispatchRequest(
            True,
            size,
            msg.topic,
            msg.queue_id,
            phy,
            compute_tags_code(msg.topic, props, store_ts, self.delay),
            store_ts,
            queue_offset,
            props.get(MessageConst.PROPERTY_KEYS, ""),
            props.get(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX),
            msg.sys_flag,
            msg.prepared_transaction_offset,
            props,
        )

    # ---- reads

    def get_min_offset(self) -> int:
        mf = self.mapped_file_queue.get_first_mapped_file()
        return mf.file_from_offset if mf is not None else -1

    def get_max_offset(self) -> int:
        return self.mapped_file_queue.get_max_offset()

    def get_message(self, offset: int, size: int) -> memoryview | None:
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset, return_first_on_not_found=offset == 0)
        if mf is None:
            return None
        return mf.select(offset % self.mapped_file_size, size)

    def get_data(self, offset: int) -> memoryview | None:
        mf = self.mapped_file_queue.find_mapped_file_by_offset(offset, return_first_on_not_found=offset == 0)
        if mf is None:
            return None
        return mf.select(offset % self.mapped_file_size)

    def roll_next_file(self, offset: int) -> int:
        return offset + self.mapped_file_size - offset % self.mapped_file_size

    def pickup_store_timestamp(self, offset: int, size: int) -> int:
        if offset < self.get_min_offset():
            return -1
        view = self.get_message(offset, size)
        if view is None:
            return -1
        return read_store_timestamp(view, 0)

    def iter_records(self, start: int, check_crc: bool = False) -> list[DispatchRequest]:
        """Every valid record from ``start`` (at least the log's first offset) to the end of data."""
        return self.complete_records(max(start, self.get_min_offset()), check_crc)[0]

    # ---- retention

    def delete_expired_file(
        self, expired_time_ms: int, now_ms: int, clean_immediately: bool, batch_max: int = 10
    ) -> int:
        """Delete leading segments (never the last) older than ``expired_time_ms``, or any when forced."""
        files = self.mapped_file_queue.mapped_files[:-1]
        doomed: list[MappedFile] = []
        for mf in files:
            if clean_immediately or now_ms >= int(mf.last_modified() * 1000) + expired_time_ms:
                doomed.append(mf)
                if len(doomed) >= batch_max:
                    break
            else:
                break
        if doomed:
            self.mapped_file_queue.delete_files(doomed)
        return len(doomed)

    def flush(self, least_pages: int = 0) -> None:
        self.mapped_file_queue.flush(least_pages)

    def shutdown(self) -> None:
        self.mapped_file_queue.close()
