"""Index queries, binary layouts against construct, config files with .bak, flush modes and retention."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from twisted.internet import defer

from rmqtwin.codec.message import decode_message_record
from rmqtwin.store_mirror.checkpoint import StoreCheckpoint
from rmqtwin.store_mirror.commitlog import PutMessageStatus
from rmqtwin.store_mirror.config import (
    ConsumerOffsetManager,
    ScheduleOffsets,
    SubscriptionGroupManager,
    TopicConfig,
    TopicConfigManager,
    to_pretty_json,
)
from rmqtwin.store_mirror.index import IndexFile, index_key_hash
from rmqtwin.store_mirror.layouts import (
    CHECKPOINT,
    INDEX_ENTRY,
    INDEX_HEADER,
    INDEX_SLOT,
    Checkpoint,
    IndexEntry,
    IndexHashSlot,
    IndexHeader,
    index_file_size,
)
from rmqtwin.store_mirror.message_store import GetMessageStatus
from rmqtwin.store_mirror.store_config import FlushDiskType

from .conftest import StoreFactory, make_msg, small_config

# ---------------------------------------------------------------- index


def test_query_by_key_and_uniq_key_within_time_range(stores: StoreFactory) -> None:
    store = stores.open()
    times = {}
    for i in range(12):
        stores.now += 2000
        r = store.put_message(
            make_msg(topic="TopicA" if i % 2 else "TopicB", keys=f"order{i % 4} extra{i}", uniq=f"U{i}")
        )
        assert r.append is not None
        times[i] = stores.now
    hits = store.query_message("TopicA", "order1", 64, 0, 2**62)
    got = sorted(decode_message_record(b)[0].properties["UNIQ_KEY"] for b in hits.message_buffers)
    assert got == ["U1", "U5", "U9"]
    # time window: only messages stored between the 5th and 9th put
    window = store.query_message("TopicA", "order1", 64, times[5], times[9] - 1)
    assert [decode_message_record(b)[0].properties["UNIQ_KEY"] for b in window.message_buffers] == ["U5"]
    uniq = store.query_message("TopicB", "U4", 32, 0, 2**62)
    assert [decode_message_record(b)[0].properties["UNIQ_KEY"] for b in uniq.message_buffers] == ["U4"]
    assert (
        store.query_message("TopicA", "order2", 64, 0, 2**62).message_buffers == []
    )  # order2 went to TopicB
    assert hits.index_last_update_timestamp == times[11]


def test_index_rolls_to_a_new_file_when_full(stores: StoreFactory) -> None:
    store = stores.open(small_config(max_index_num=10, max_hash_slot_num=8))
    for i in range(20):
        stores.now += 1000
        store.put_message(make_msg(keys=f"k{i}"))  # 1 entry per message
    files = sorted(os.listdir(os.path.join(stores.root, "index")))
    assert len(files) >= 2 and all(len(f) == 17 and f.isdigit() for f in files)
    assert all(
        os.path.getsize(os.path.join(stores.root, "index", f)) == index_file_size(8, 10) for f in files
    )
    for i in (0, 9, 19):
        res = store.query_message("TopicTest", f"k{i}", 4, 0, 2**62)
        assert [decode_message_record(b)[0].properties["KEYS"] for b in res.message_buffers] == [f"k{i}"]
    assert store.checkpoint is not None and store.checkpoint.index_msg_timestamp > 0


def test_index_file_bytes_agree_with_construct(tmp_path: Any) -> None:
    path = str(tmp_path / "20240101000000000")
    f = IndexFile(path, 16, 8)
    assert f.put_key("T#a", 100, 1_700_000_000_000)
    assert f.put_key("T#b", 200, 1_700_000_003_500)
    assert f.put_key("T#a", 300, 1_700_000_009_999)
    f.close()
    raw = Path(path).read_bytes()
    header = IndexHeader.parse(raw[:40])
    names = [str(sc.name) for sc in IndexHeader.subcons]
    assert INDEX_HEADER.unpack(raw[:40]) == tuple(header[k] for k in names)
    assert IndexHeader.build(dict(zip(names, INDEX_HEADER.unpack(raw[:40]), strict=True))) == raw[:40]
    assert (header.begin_timestamp, header.end_timestamp) == (1_700_000_000_000, 1_700_000_009_999)
    assert (header.begin_phy_offset, header.end_phy_offset, header.index_count, header.hash_slot_count) == (
        100,
        300,
        4,
        2,
    )
    h = index_key_hash("T#a")
    slot_bytes = raw[40 + (h % 16) * 4 : 44 + (h % 16) * 4]
    assert IndexHashSlot.parse(slot_bytes).index == INDEX_SLOT.unpack(slot_bytes)[0] == 3
    base = 40 + 16 * 4
    third = IndexEntry.parse(raw[base + 3 * 20 : base + 4 * 20])
    assert (third.key_hash, third.phy_offset, third.time_diff, third.prev_index) == (h, 300, 9, 1)
    assert INDEX_ENTRY.unpack(raw[base + 3 * 20 : base + 4 * 20]) == (h, 300, 9, 1)
    assert raw[base : base + 20] == bytes(20)  # position 0 is never used


def test_checkpoint_layout(tmp_path: Any) -> None:
    cp = StoreCheckpoint(str(tmp_path / "checkpoint"))
    cp.physic_msg_timestamp, cp.logics_msg_timestamp, cp.index_msg_timestamp = 11, 22, 33
    cp.shutdown()
    raw = Path(tmp_path / "checkpoint").read_bytes()
    assert len(raw) == 4096
    parsed = Checkpoint.parse(raw)
    assert (parsed.physic_msg_timestamp, parsed.logics_msg_timestamp, parsed.index_msg_timestamp) == (
        11,
        22,
        33,
    )
    assert CHECKPOINT.unpack(raw[:40])[:3] == (11, 22, 33)
    again = StoreCheckpoint(str(tmp_path / "checkpoint"), read_only=True)
    assert again.get_min_timestamp() == 0  # min(11, 22) - 3000, floored at 0


# ---------------------------------------------------------------- config files


def test_consumer_offsets_round_trip_with_bak(tmp_path: Any) -> None:
    root = str(tmp_path)
    m = ConsumerOffsetManager(root)
    m.commit_offset("g", "TopicTest", 0, 120)
    m.commit_offset("g", "TopicTest", 1, 118)
    m.persist()
    first = Path(m.config_file_path).read_text()
    assert first == '{\n\t"offsetTable":{\n\t\t"TopicTest@g":{0:120,1:118\n\t\t}\n\t}\n}'
    m.commit_offset("g", "TopicTest", 1, 119)
    m.persist()
    assert Path(m.config_file_path + ".bak").read_text() == first
    loaded = ConsumerOffsetManager(root)
    assert loaded.load() and loaded.query_offset("g", "TopicTest", 1) == 119
    assert loaded.query_offset("g", "TopicTest", 7) == -1
    # a broken main file falls back to .bak; a broken .bak too fails the load
    with open(m.config_file_path, "w") as f:
        f.write("{not json")
    fallback = ConsumerOffsetManager(root)
    assert fallback.load() and fallback.query_offset("g", "TopicTest", 1) == 118
    with open(m.config_file_path + ".bak", "w") as f:
        f.write("{also broken")
    assert ConsumerOffsetManager(root).load() is False
    # nothing at all is an empty config, not a failure
    assert ConsumerOffsetManager(str(tmp_path / "empty")).load()


def test_topics_groups_and_delay_offsets_files(tmp_path: Any) -> None:
    root = str(tmp_path)
    topics = TopicConfigManager(root)
    topics.update_topic_config(TopicConfig("TopicTest", 4, 4))
    assert topics.data_version.counter == 1
    text = Path(topics.config_file_path).read_text()
    assert '\t\t"TopicTest":{\n\t\t\t"order":false,\n\t\t\t"perm":6,\n\t\t\t"readQueueNums":4,' in text
    again = TopicConfigManager(root)
    assert again.load() and again.select_topic_config("TopicTest") == TopicConfig("TopicTest", 4, 4)
    groups = SubscriptionGroupManager(root)
    groups.persist()
    loaded = SubscriptionGroupManager(root, built_ins=False)
    assert loaded.load() and "TOOLS_CONSUMER" in loaded.subscription_group_table
    delay = ScheduleOffsets(root)
    delay.update_offset(1, 5)
    delay.update_offset(3, 17)
    delay.persist()
    assert Path(delay.config_file_path).read_text() == '{\n\t"offsetTable":{1:5,3:17\n\t}\n}'
    d2 = ScheduleOffsets(root)
    assert d2.load() and d2.offset_table == {1: 5, 3: 17}


def test_pretty_json_empty_maps() -> None:
    assert to_pretty_json({"offsetTable": {}}) == '{\n\t"offsetTable":{}\n}'


# ---------------------------------------------------------------- flush modes


def test_async_flush_acknowledges_at_once_and_flushes_on_the_clock(stores: StoreFactory) -> None:
    store = stores.open()
    r = store.put_message(make_msg(body=b"x" * 5000))
    d = store.wait_for_flush(r)
    assert d.result is PutMessageStatus.PUT_OK
    assert store.commit_log.mapped_file_queue.flushed_where == 0
    stores.clock.advance(0.5)  # below flushCommitLogLeastPages (4 pages): not yet
    assert store.commit_log.mapped_file_queue.flushed_where == 0
    stores.clock.advance(10)  # the thorough flush takes everything
    assert store.commit_log.mapped_file_queue.flushed_where == r.end_offset


class ControlledFlush:
    """run_blocking that runs the fsync at once (as the flush thread would) but reports completion only
    when the test releases it."""

    def __init__(self) -> None:
        self.pending: list[tuple[Any, defer.Deferred[Any]]] = []

    def __call__(self, fn: Any) -> defer.Deferred[Any]:
        d: defer.Deferred[Any] = defer.Deferred()
        self.pending.append((fn(), d))
        return d

    def release(self) -> None:
        value, d = self.pending.pop(0)
        d.callback(value)


def test_sync_flush_group_commit(stores: StoreFactory) -> None:
    flusher = ControlledFlush()
    store = stores.open(small_config(flush_disk_type=FlushDiskType.SYNC_FLUSH), run_blocking=flusher)
    r1 = store.put_message(make_msg(body=b"one"))
    d1 = store.wait_for_flush(r1)
    assert not d1.called and len(flusher.pending) == 1
    r2 = store.put_message(make_msg(body=b"two"))
    r3 = store.put_message(make_msg(body=b"three"))
    d2, d3 = store.wait_for_flush(r2), store.wait_for_flush(r3)
    assert len(flusher.pending) == 1  # one fsync in flight; the others wait for the next
    flusher.release()
    assert d1.result is PutMessageStatus.PUT_OK
    assert not d2.called and len(flusher.pending) == 1
    flusher.release()  # one fsync covers both
    assert d2.result is PutMessageStatus.PUT_OK and d3.result is PutMessageStatus.PUT_OK
    assert store.commit_log.mapped_file_queue.flushed_where == r3.end_offset


def test_sync_flush_timeout(stores: StoreFactory) -> None:
    flusher = ControlledFlush()
    store = stores.open(small_config(flush_disk_type=FlushDiskType.SYNC_FLUSH), run_blocking=flusher)
    d = store.wait_for_flush(store.put_message(make_msg()))
    stores.clock.advance(4.9)
    assert not d.called
    stores.clock.advance(0.2)
    assert d.result is PutMessageStatus.FLUSH_DISK_TIMEOUT
    flusher.release()  # a late fsync does not fire it twice


def test_sync_flush_wait_false_does_not_wait(stores: StoreFactory) -> None:
    flusher = ControlledFlush()
    store = stores.open(small_config(flush_disk_type=FlushDiskType.SYNC_FLUSH), run_blocking=flusher)
    r = store.put_message(make_msg(extra={"WAIT": "false"}))
    d = store.wait_for_flush(r)
    assert d.result is PutMessageStatus.PUT_OK
    assert len(flusher.pending) == 1  # but the flusher was woken


# ---------------------------------------------------------------- retention


def test_expired_segments_deleted_and_queues_cut(stores: StoreFactory) -> None:
    store = stores.open()
    for i in range(60):
        store.put_message(make_msg(body=b"y" * 900, keys=f"k{i}"))
    segments = sorted(os.listdir(os.path.join(stores.root, "commitlog")))
    assert len(segments) >= 4
    assert store.delete_expired_files(force=False) == 0  # younger than fileReservedTime
    newest_mtime = max(os.path.getmtime(os.path.join(stores.root, "commitlog", s)) for s in segments)
    deleted = store.delete_expired_files(force=False, now_ms=int(newest_mtime * 1000) + 73 * 3600 * 1000)
    assert deleted == len(segments) - 1
    assert sorted(os.listdir(os.path.join(stores.root, "commitlog"))) == segments[-1:]
    min_phy = store.get_min_phy_offset()
    assert min_phy == int(segments[-1])
    min_q = store.get_min_offset_in_queue("TopicTest", 0)
    assert min_q > 0
    assert store.get_commitlog_offset_in_queue("TopicTest", 0, min_q) >= min_phy
    too_small = store.get_message("g", "TopicTest", 0, 0, 8)
    assert (too_small.status, too_small.next_begin_offset) == (GetMessageStatus.OFFSET_TOO_SMALL, min_q)
    ok = store.get_message("g", "TopicTest", 0, min_q, 8)
    assert ok.status is GetMessageStatus.FOUND
    assert store.query_message("TopicTest", "k0", 4, 0, 2**62).message_buffers == []


def test_delete_when_hour(stores: StoreFactory) -> None:
    import time as _time

    store = stores.open(small_config(delete_when="04;05"))
    at4 = int(_time.mktime((2024, 5, 1, 4, 30, 0, 0, 0, -1)) * 1000)
    at6 = int(_time.mktime((2024, 5, 1, 6, 30, 0, 0, 0, -1)) * 1000)
    assert store.is_time_to_delete(at4) and not store.is_time_to_delete(at6)


@pytest.mark.parametrize("topic", ["TopicTest"])
def test_delete_topics_removes_queues(stores: StoreFactory, topic: str) -> None:
    store = stores.open()
    store.put_message(make_msg(topic=topic))
    assert store.delete_topics([topic]) == 1
    assert not os.path.exists(os.path.join(stores.root, "consumequeue", topic))
    assert store.get_max_offset_in_queue(topic, 0) == 0


def test_persist_skips_a_table_already_settled_in_file_and_bak(tmp_path: Any, monkeypatch: Any) -> None:
    """An unchanged table is written until the file and its .bak both hold it, then not again (Java would
    rewrite the same bytes); a change is written at once."""
    from rmqtwin.store_mirror import config

    writes: list[str] = []
    real_write = config._write_synced

    def counting(path: str, text: str) -> None:
        writes.append(os.path.basename(path))
        real_write(path, text)

    monkeypatch.setattr(config, "_write_synced", counting)
    m = ConsumerOffsetManager(str(tmp_path))
    m.commit_offset("g", "TopicTest", 0, 1)
    m.persist()  # .tmp only: no previous file
    m.persist()  # .tmp and .bak: file and .bak now hold the same text
    assert writes == ["consumerOffset.json.tmp", "consumerOffset.json.tmp", "consumerOffset.json.bak"]
    m.persist()
    assert len(writes) == 3
    text = Path(m.config_file_path).read_text()
    assert Path(m.config_file_path + ".bak").read_text() == text
    m.commit_offset("g", "TopicTest", 0, 2)
    m.persist()
    assert len(writes) == 5
    assert Path(m.config_file_path + ".bak").read_text() == text
    assert ConsumerOffsetManager(str(tmp_path)).load()
