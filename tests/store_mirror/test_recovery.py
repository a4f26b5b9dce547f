"""Recovery: torn tails and garbage are cut off (with a log line), never served; queues rebuilt, trimmed."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys

import pytest

from rmqtwin.codec.message import decode_message_record
from rmqtwin.store_mirror.message_store import _LOCKED_IN_PROCESS, DefaultMessageStore, GetMessageStatus

from .conftest import StoreFactory, make_msg, small_config


def crash(store: DefaultMessageStore) -> None:
    """Drop the store as a killed process would: nothing flushed or cleaned, ``abort`` left behind."""
    store._close_files()
    os.close(store._lock_fd)
    store._lock_fd = -1
    _LOCKED_IN_PROCESS.discard(store._lock_path)
    store.shutdown_flag = True


def segment_path(stores: StoreFactory, offset: int = 0) -> str:
    return os.path.join(stores.root, "commitlog", f"{offset:020d}")


def fill(store: DefaultMessageStore, n: int, **kw: object) -> list[tuple[int, int]]:
    out = []
    for i in range(n):
        r = store.put_message(make_msg(body=b"m%03d" % i, keys=f"k{i}", **kw))  # type: ignore[arg-type]
        assert r.append is not None
        out.append((r.append.wrote_offset, r.append.wrote_bytes))
    return out


def bodies(store: DefaultMessageStore, topic: str = "TopicTest", queue_id: int = 0) -> list[bytes]:
    res = store.get_message("g", topic, queue_id, 0, 1000)
    return [decode_message_record(b)[0].body for b in res.message_buffers]


@pytest.mark.parametrize("damage", ["zeroed-tail", "garbage", "bad-crc"])
def test_torn_last_record_is_cut_and_never_served(
    stores: StoreFactory, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    store = stores.open()
    written = fill(store, 5)
    crash(store)
    stores.opened.remove(store)
    last_off, last_len = written[-1]
    with open(segment_path(stores), "r+b") as f:
        if damage == "zeroed-tail":
            f.seek(last_off + last_len // 2)
            f.write(bytes(last_len - last_len // 2))
        elif damage == "garbage":
            f.seek(last_off + last_len)
            f.write(os.urandom(300))
            f.seek(last_off + 40)
            f.write(b"\xff" * 8)  # the born timestamp changes nothing structural; also corrupt the length
            f.seek(last_off)
            f.write((last_len + 17).to_bytes(4, "big"))
        else:
            f.seek(last_off + 88)  # the first body byte: the CRC no longer matches
            f.write(b"X")
    with caplog.at_level(logging.WARNING, logger="rmqtwin.store_mirror"):
        reopened = stores.open()
    assert any("truncating the tail" in r.getMessage() for r in caplog.records)
    assert bodies(reopened) == [b"m%03d" % i for i in range(4)]
    assert reopened.get_max_phy_offset() == last_off
    assert reopened.get_max_offset_in_queue("TopicTest", 0) == 4
    assert reopened.select_one_message_by_offset(last_off) is None
    # the next message takes the cut-off record's place and its queue offset
    r = reopened.put_message(make_msg(body=b"after"))
    assert r.append is not None
    assert (r.append.wrote_offset, r.append.logics_offset) == (last_off, 4)
    assert bodies(reopened)[-1] == b"after"


def test_garbage_after_last_record_is_not_served(stores: StoreFactory) -> None:
    store = stores.open()
    written = fill(store, 3)
    crash(store)
    stores.opened.remove(store)
    end = written[-1][0] + written[-1][1]
    with open(segment_path(stores), "r+b") as f:
        f.seek(end)
        f.write(b"\x00\x00\x01\x00" + os.urandom(252))
    reopened = stores.open()
    assert reopened.get_max_phy_offset() == end
    assert bodies(reopened) == [b"m000", b"m001", b"m002"]
    with open(segment_path(stores), "rb") as f:
        f.seek(end)
        assert f.read(256) == bytes(256)  # stale bytes are cleared so they cannot come back


def test_consume_queue_entries_past_commitlog_end_are_dropped(stores: StoreFactory) -> None:
    store = stores.open()
    written = fill(store, 6)
    crash(store)
    stores.opened.remove(store)
    # the last two records never reached the commitlog, but their consume-queue entries did
    with open(segment_path(stores), "r+b") as f:
        f.seek(written[4][0])
        f.write(bytes(written[5][0] + written[5][1] - written[4][0]))
    reopened = stores.open()
    assert reopened.get_max_offset_in_queue("TopicTest", 0) == 4
    res = reopened.get_message("g", "TopicTest", 0, 4, 32)
    assert res.status is GetMessageStatus.OFFSET_OVERFLOW_ONE
    assert reopened.put_message(make_msg()).append.logics_offset == 4  # type: ignore[union-attr]


def test_consume_queues_and_index_rebuilt_after_deletion(stores: StoreFactory) -> None:
    store = stores.open()
    for i in range(40):
        store.put_message(make_msg(topic=f"T{i % 3}", queue_id=i % 2, body=b"%d" % i, keys=f"key{i}"))
    expected = {(t, q): bodies(store, t, q) for t in ("T0", "T1", "T2") for q in (0, 1)}
    store.shutdown()
    stores.opened.remove(store)
    shutil.rmtree(os.path.join(stores.root, "consumequeue"))
    shutil.rmtree(os.path.join(stores.root, "index"))
    reopened = stores.open()
    assert {(t, q): bodies(reopened, t, q) for t, q in expected} == expected
    hit = reopened.query_message("T1", "key7", 10, 0, 2**62)
    assert [decode_message_record(b)[0].body for b in hit.message_buffers] == [b"7"]


def test_clean_restart_keeps_everything(stores: StoreFactory) -> None:
    store = stores.open()
    fill(store, 10)
    store.shutdown()
    stores.opened.remove(store)
    assert not os.path.exists(os.path.join(stores.root, "abort"))
    reopened = stores.open()
    assert reopened.last_exit_ok
    assert bodies(reopened) == [b"m%03d" % i for i in range(10)]
    assert reopened.put_message(make_msg()).append.logics_offset == 10  # type: ignore[union-attr]


def test_short_segment_fails_the_load_like_java(stores: StoreFactory) -> None:
    store = stores.open()
    fill(store, 2)
    store.shutdown()
    stores.opened.remove(store)
    with open(segment_path(stores), "r+b") as f:
        f.truncate(1000)
    s = DefaultMessageStore(stores.root, small_config())
    assert s.load() is False


def test_second_store_on_same_directory_is_refused(stores: StoreFactory) -> None:
    stores.open()
    other = DefaultMessageStore(stores.root, small_config())
    assert other.load()
    with pytest.raises(RuntimeError, match="already started"):
        other.start()
    other.shutdown()
    # another process sees the lock too (fcntl record lock on byte 0, as Java's FileChannel.tryLock)
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, 0)\nexcept OSError:\n    sys.exit(3)\n"
    )
    rc = subprocess.run(
        [sys.executable, "-c", probe, os.path.join(stores.root, "lock")], check=False
    ).returncode
    assert rc == 3
    with open(os.path.join(stores.root, "lock"), "rb") as f:
        assert f.read(4) == b"lock"


def test_abnormal_recovery_without_any_consume_queue_rebuilds_them_all(stores: StoreFactory) -> None:
    store = stores.open()
    for i in range(60):
        stores.now += 10_000  # the checkpoint then points into the last segment
        store.put_message(make_msg(queue_id=i % 2, body=b"z" * 600 + b"%d" % i))
    expected = [bodies(store, "TopicTest", q) for q in (0, 1)]
    store.shutdown()
    stores.opened.remove(store)
    assert len(os.listdir(os.path.join(stores.root, "commitlog"))) >= 3
    shutil.rmtree(os.path.join(stores.root, "consumequeue"))
    with open(os.path.join(stores.root, "abort"), "wb"):
        pass
    reopened = stores.open()
    assert not reopened.last_exit_ok
    assert [bodies(reopened, "TopicTest", q) for q in (0, 1)] == expected
