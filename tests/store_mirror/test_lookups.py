"""Offset and time lookups, IPv6 hosts, and consume queues rebuilt after old segments were deleted."""

from __future__ import annotations

import os
import shutil

from rmqtwin.codec.message import decode_message_record
from rmqtwin.store_mirror.layouts import CQ_ENTRY
from rmqtwin.store_mirror.message_store import GetMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner

from .conftest import StoreFactory, make_msg
from .test_recovery import crash


def test_time_and_offset_lookups(stores: StoreFactory) -> None:
    store = stores.open()
    times = []
    for i in range(10):
        stores.now += 1000
        r = store.put_message(make_msg(body=b"%d" % i))
        assert r.append is not None
        times.append((stores.now, r.append.wrote_offset))
    assert store.get_earliest_message_time("TopicTest", 0) == times[0][0]
    assert store.get_earliest_message_time_all() == times[0][0]
    assert store.get_message_store_timestamp("TopicTest", 0, 4) == times[4][0]
    assert store.get_commitlog_offset_in_queue("TopicTest", 0, 7) == times[7][1]
    assert store.get_offset_in_queue_by_time("TopicTest", 0, times[6][0]) == 6  # exact
    assert store.get_offset_in_queue_by_time("TopicTest", 0, times[6][0] + 300) == 6  # nearer to 6 than to 7
    assert store.get_offset_in_queue_by_time("TopicTest", 0, times[6][0] + 700) == 7
    assert store.get_offset_in_queue_by_time("TopicTest", 0, 0) == 0
    assert store.get_message_store_timestamp("TopicTest", 0, 99) == -1
    assert store.look_message_by_offset(times[3][1]).body == b"3"  # type: ignore[union-attr]
    assert store.look_message_by_offset(times[3][1] + 1) is None


def test_ipv6_hosts_round_trip_through_recovery(stores: StoreFactory) -> None:
    store = stores.open()
    for i in range(3):
        stores.now += 1000
        msg = MessageExtBrokerInner(
            topic="V6",
            body=b"six%d" % i,
            properties={"TAGS": "T"},
            born_host=("2001:db8::7", 4000),
            store_host=("2001:db8::1", 10911),
        )
        r = store.put_message(msg)
        assert r.append is not None and len(r.append.msg_id) == 56
    crash(store)
    stores.opened.remove(store)
    reopened = stores.open()
    res = reopened.get_message("g", "V6", 0, 0, 10)
    msgs = [decode_message_record(b, check_crc=True)[0] for b in res.message_buffers]
    assert [m.body for m in msgs] == [b"six0", b"six1", b"six2"]
    assert msgs[0].store_host == ("2001:db8::1", 10911) and msgs[0].sys_flag & 0x30 == 0x30
    assert reopened.get_message_store_timestamp("V6", 0, 2) == stores.now


def test_queues_rebuilt_after_retention_start_with_pre_blank_entries(stores: StoreFactory) -> None:
    store = stores.open()
    for i in range(60):
        store.put_message(make_msg(body=b"p" * 900 + b"%d" % i))
    assert store.delete_expired_files(force=True) > 0
    min_phy = store.get_min_phy_offset()
    min_q = store.get_min_offset_in_queue("TopicTest", 0)
    expected = store.get_message("g", "TopicTest", 0, min_q, 100)
    store.shutdown()
    stores.opened.remove(store)
    shutil.rmtree(os.path.join(stores.root, "consumequeue"))
    reopened = stores.open()
    assert reopened.get_min_offset_in_queue("TopicTest", 0) == min_q
    again = reopened.get_message("g", "TopicTest", 0, min_q, 100)
    assert again.message_buffers == expected.message_buffers
    assert reopened.get_message("g", "TopicTest", 0, 0, 1).status is GetMessageStatus.OFFSET_TOO_SMALL
    # the first file is named by its own start and padded with (0, Integer.MAX_VALUE, 0) before min_q
    entries_per_file = reopened.config.mapped_file_size_consume_queue // 20
    assert min_q % entries_per_file > 0  # so there is something to pad
    first_file = (min_q // entries_per_file) * entries_per_file * 20
    qdir = os.path.join(stores.root, "consumequeue", "TopicTest", "0")
    assert sorted(os.listdir(qdir))[0] == f"{first_file:020d}"
    with open(os.path.join(qdir, f"{first_file:020d}"), "rb") as f:
        raw = f.read()
    for k in range(min_q % entries_per_file):
        assert CQ_ENTRY.unpack_from(raw, k * 20) == (0, 0x7FFFFFFF, 0)
    assert CQ_ENTRY.unpack_from(raw, (min_q % entries_per_file) * 20)[0] >= min_phy
