"""Append and read: records, rolling with the blank record, queue offsets, msgIds, get_message rules."""

from __future__ import annotations

import os
import struct

from rmqtwin.codec.java import java_string_hash
from rmqtwin.codec.message import (
    MessageSysFlag,
    create_offset_msg_id,
    decode_message_record,
)
from rmqtwin.store_mirror.commitlog import PutMessageStatus
from rmqtwin.store_mirror.layouts import CQ_ENTRY, BlankRecord, ConsumeQueueEntry
from rmqtwin.store_mirror.message_store import GetMessageStatus

from .conftest import STORE_HOST, StoreFactory, make_msg, small_config


def test_record_fields_queue_offsets_and_msg_ids(stores: StoreFactory) -> None:
    store = stores.open()
    results = [store.put_message(make_msg(queue_id=i % 2, body=b"body-%d" % i)) for i in range(6)]
    assert all(r.status is PutMessageStatus.PUT_OK for r in results)
    phy = 0
    for i, r in enumerate(results):
        a = r.append
        assert a is not None
        assert a.wrote_offset == phy
        assert a.logics_offset == i // 2
        assert a.msg_id == create_offset_msg_id(STORE_HOST, phy)
        assert a.store_timestamp == stores.now
        raw = store.select_one_message_by_offset(phy)
        assert raw is not None and len(raw) == a.wrote_bytes
        msg, end = decode_message_record(raw, 0, check_crc=True)
        assert end == len(raw)
        assert (msg.topic, msg.queue_id, msg.queue_offset, msg.commitlog_offset) == (
            "TopicTest",
            i % 2,
            i // 2,
            phy,
        )
        assert msg.body == b"body-%d" % i
        assert msg.store_host == STORE_HOST and msg.store_timestamp == stores.now
        phy += a.wrote_bytes
    assert store.get_max_phy_offset() == phy
    assert store.get_max_offset_in_queue("TopicTest", 0) == 3
    assert store.get_max_offset_in_queue("TopicTest", 1) == 3


def test_rolls_to_next_segment_with_blank_record(stores: StoreFactory) -> None:
    cfg = small_config()
    store = stores.open(cfg)
    size = cfg.mapped_file_size_commit_log
    body = b"x" * 1000
    offsets = []
    while True:
        r = store.put_message(make_msg(body=body))
        assert r.append is not None
        offsets.append(r.append.wrote_offset)
        if r.append.wrote_offset >= size:
            break
    commitlog = os.path.join(stores.root, "commitlog")
    names = sorted(os.listdir(commitlog))
    assert names == [f"{0:020d}", f"{size:020d}"]
    assert all(os.path.getsize(os.path.join(commitlog, n)) == size for n in names)
    # the record before the roll ends where the blank starts; the blank says how much was left
    last_in_first = offsets[-2]
    record_len = offsets[-2] - offsets[-3]
    blank_pos = last_in_first + record_len
    with open(os.path.join(commitlog, names[0]), "rb") as f:
        f.seek(blank_pos)
        raw_blank = f.read(8)
    max_blank, magic = struct.unpack(">ii", raw_blank)
    assert max_blank == size - blank_pos
    assert magic == -875286124
    parsed = BlankRecord.parse(raw_blank)
    assert (parsed.max_blank, parsed.magic) == (max_blank, bytes.fromhex("CBD43194"))
    assert blank_pos + record_len + 8 > size  # it really did not fit
    assert offsets[-1] == size
    # reading across the roll returns every message in order
    got = store.get_message("g", "TopicTest", 0, 0, 1000)
    assert [decode_message_record(b)[0].commitlog_offset for b in got.message_buffers][
        : len(offsets)
    ] == offsets[: len(got.message_buffers)]


def test_consume_queue_entries_match_construct_layout(stores: StoreFactory) -> None:
    store = stores.open()
    r = store.put_message(make_msg(tags="TagA"))
    assert r.append is not None
    path = os.path.join(stores.root, "consumequeue", "TopicTest", "0", f"{0:020d}")
    with open(path, "rb") as f:
        raw = f.read(20)
    parsed = ConsumeQueueEntry.parse(raw)
    assert (parsed.commit_log_offset, parsed.size, parsed.tags_code) == (0, r.append.wrote_bytes, 2598919)
    assert CQ_ENTRY.unpack(raw) == (0, r.append.wrote_bytes, java_string_hash("TagA"))
    assert os.path.getsize(path) == small_config().mapped_file_size_consume_queue


def test_get_message_statuses(stores: StoreFactory) -> None:
    store = stores.open()
    empty = store.get_message("g", "TopicTest", 0, 0, 32)
    assert (empty.status, empty.next_begin_offset) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0)
    for i in range(5):
        store.put_message(make_msg(body=b"%d" % i))
    found = store.get_message("g", "TopicTest", 0, 1, 2)
    assert found.status is GetMessageStatus.FOUND
    assert found.next_begin_offset == 3
    assert [decode_message_record(b)[0].queue_offset for b in found.message_buffers] == [1, 2]
    one = store.get_message("g", "TopicTest", 0, 5, 32)
    assert (one.status, one.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 5)
    badly = store.get_message("g", "TopicTest", 0, 9, 32)
    assert (badly.status, badly.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 5)


class _TagFilter:
    def __init__(self, tag: str) -> None:
        self.code = java_string_hash(tag)

    def is_matched_by_consume_queue(self, tags_code: int | None, cq_ext_unit: object | None) -> bool:
        return tags_code == self.code

    def is_matched_by_commit_log(self, msg_buffer: bytes, properties: dict[str, str] | None) -> bool:
        return True


def test_get_message_filters_on_tags_code(stores: StoreFactory) -> None:
    store = stores.open()
    for i in range(6):
        store.put_message(make_msg(tags="TagA" if i % 3 == 0 else "TagB"))
    res = store.get_message("g", "TopicTest", 0, 0, 32, _TagFilter("TagA"))
    assert res.status is GetMessageStatus.FOUND
    assert [decode_message_record(b)[0].queue_offset for b in res.message_buffers] == [0, 3]
    assert res.next_begin_offset == 6
    none = store.get_message("g", "TopicTest", 0, 4, 32, _TagFilter("TagA"))
    assert (none.status, none.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 6)


def test_prepared_messages_take_no_queue_offset_and_skip_the_queue(stores: StoreFactory) -> None:
    store = stores.open()
    half = store.put_message(
        make_msg(topic="RMQ_SYS_TRANS_HALF_TOPIC", sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE)
    )
    assert half.append is not None and half.append.logics_offset == 0
    raw = store.select_one_message_by_offset(half.append.wrote_offset)
    assert raw is not None and decode_message_record(raw)[0].queue_offset == 0
    assert store.get_max_offset_in_queue("RMQ_SYS_TRANS_HALF_TOPIC", 0) == 0


def test_delay_message_goes_to_schedule_topic_with_delivery_time(stores: StoreFactory) -> None:
    store = stores.open()
    r = store.put_message(make_msg(topic="T", queue_id=3, extra={"DELAY": "3"}))
    assert r.append is not None
    raw = store.select_one_message_by_offset(r.append.wrote_offset)
    assert raw is not None
    msg = decode_message_record(raw)[0]
    assert (msg.topic, msg.queue_id) == ("SCHEDULE_TOPIC_XXXX", 2)
    assert msg.properties["REAL_TOPIC"] == "T" and msg.properties["REAL_QID"] == "3"
    entry = store.find_consume_queue("SCHEDULE_TOPIC_XXXX", 2).get_entry(0)
    assert entry is not None and entry[2] == stores.now + 10_000  # level 3 = 10s
    assert store.get_max_offset_in_queue("T", 3) == 0


def test_batch_gets_consecutive_offsets_and_joined_msg_ids(stores: StoreFactory) -> None:
    store = stores.open()
    store.put_message(make_msg())
    r = store.put_messages([make_msg(body=b"a"), make_msg(body=b"bb"), make_msg(body=b"ccc")])
    assert r.append is not None
    assert r.append.logics_offset == 1 and r.append.msg_num == 3
    ids = r.append.msg_id.split(",")
    assert len(ids) == 3
    got = store.get_message("g", "TopicTest", 0, 1, 32)
    msgs = [decode_message_record(b)[0] for b in got.message_buffers]
    assert [m.queue_offset for m in msgs] == [1, 2, 3]
    assert [m.offset_msg_id for m in msgs] == ids


def test_illegal_messages_are_rejected(stores: StoreFactory) -> None:
    store = stores.open(small_config(max_message_size=100))
    assert store.put_message(make_msg(body=b"x" * 101)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(make_msg(topic="T" * 128)).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(make_msg(body=b"x" * 100)).status is PutMessageStatus.PUT_OK


def test_a_batch_whose_records_together_exceed_max_message_size_is_illegal(stores: StoreFactory) -> None:
    # A single message is judged by its body (100 B fits a 100 B limit); a batch by its records,
    # headers and properties included, added up (what real 4.9.7 answers a 4.5 MiB batch).
    store = stores.open(small_config(max_message_size=1000))
    over = store.put_messages([make_msg(body=b"x" * 400), make_msg(body=b"x" * 400)])
    assert over.status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.get_max_phy_offset() == 0
    fits = store.put_messages([make_msg(body=b"x" * 200), make_msg(body=b"x" * 200)])
    assert fits.status is PutMessageStatus.PUT_OK


def test_batches_with_delay_or_transactions_are_illegal(stores: StoreFactory) -> None:
    store = stores.open()
    delayed = store.put_messages([make_msg(), make_msg(extra={"DELAY": "2"})])
    assert delayed.status is PutMessageStatus.MESSAGE_ILLEGAL
    prepared = store.put_messages([make_msg(sys_flag=MessageSysFlag.TRANSACTION_PREPARED_TYPE), make_msg()])
    assert prepared.status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.get_max_phy_offset() == 0
