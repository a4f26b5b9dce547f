"""Both directions against real Apache RocketMQ (4.9.7 and 5.5.0 brokers, real Java clients).

One real broker per version, started on a copy of a store rmqtwin wrote:

(a) rmqtwin writes a store (two topics, six queues, tags, keys, several commitlog and consume-queue files,
committed consumer offsets, topics.json); the real broker must deliver every message to the Java push
consumer with the same bodies, properties, queue offsets, commitlog offsets and msgIds, and answer consumer
offsets, max offsets and query-by-key over the remoting protocol.

(b) The Java producer then writes more through that broker (and the push consumer's committed offsets are
persisted by it); rmqtwin opens a copy of the broker's store and must serve every message at the queue
offset and with the msgIds the producer was told, answer query-by-key, read the committed offsets, and
recover the same store after a torn last record.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.codec.message import create_offset_msg_id, decode_message_record, iter_message_records
from rmqtwin.probe import invoke_sync
from rmqtwin.store_mirror.config import ConsumerOffsetManager, TopicConfig, TopicConfigManager
from rmqtwin.store_mirror.message_store import DefaultMessageStore, GetMessageStatus, MessageStoreConfig
from rmqtwin.store_mirror.record import MessageExtBrokerInner
from tests.fakes.helpers import wait_until

pytestmark = [pytest.mark.java, pytest.mark.real]

SEGMENT = 256 * 1024
CQ_FILE = 20 * 100  # 100 entries per consume queue file: several files per queue
SIZES = {"mappedFileSizeCommitLog": SEGMENT, "mappedFileSizeConsumeQueue": CQ_FILE}
STORE_HOST = ("127.0.0.1", 10911)
OUR_MESSAGES = 420
JAVA_MESSAGES = 300
CLIENT_ONLY_PROPERTIES = {"MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME"}


def store_config(**kw: Any) -> MessageStoreConfig:
    return MessageStoreConfig(
        mapped_file_size_commit_log=SEGMENT, mapped_file_size_consume_queue=CQ_FILE, **kw
    )


def remoting_call(addr: str, code: int, ext: dict[str, str]) -> RemotingCommand:
    """One request with rmqtwin.codec (what mqadmin or a client would send)."""
    return invoke_sync(addr, create_request(code, ext), timeout=30)


def driver_body(size: int) -> bytes:
    """The body the Java producer driver builds for ``bodySize``."""
    return bytes(ord("a") + k % 26 for k in range(size))


def write_rmqtwin_store(root: Path) -> list[dict[str, Any]]:
    store = DefaultMessageStore(str(root), store_config())
    assert store.load()
    store.start()
    written: list[dict[str, Any]] = []
    try:
        for i in range(OUR_MESSAGES):
            topic, queues = ("InteropOursA", 4) if i % 3 else ("InteropOursB", 2)
            body = bytes((i * 7 + k) % 251 for k in range(700 + (i % 4) * 250))
            props = {"TAGS": f"Tag{'XYZ'[i % 3]}", "KEYS": f"key-{i} group-{i % 5}", "UNIQ_KEY": f"{i:032X}"}
            props["seq"] = str(i)
            msg = MessageExtBrokerInner(
                topic=topic,
                body=body,
                queue_id=i % queues,
                properties=props,
                born_timestamp=1_700_000_000_000 + i,
                born_host=("127.0.0.1", 40000 + i % 7),
                store_host=STORE_HOST,
            )
            r = store.put_message(msg)
            assert r.append is not None
            written.append(
                {
                    "topic": topic,
                    "queueId": i % queues,
                    "queueOffset": r.append.logics_offset,
                    "commitLogOffset": r.append.wrote_offset,
                    "msgId": r.append.msg_id,
                    "uniq": props["UNIQ_KEY"],
                    "props": dict(props),
                    "sha": hashlib.sha256(body).hexdigest(),
                }
            )
    finally:
        store.shutdown()
    topics = TopicConfigManager(str(root))
    topics.update_topic_config(TopicConfig("InteropOursA", 4, 4))
    topics.update_topic_config(TopicConfig("InteropOursB", 2, 2))
    offsets = ConsumerOffsetManager(str(root))
    for q in range(4):
        offsets.commit_offset("committed_group", "InteropOursA", q, 5 + q)
    offsets.persist()
    return written


def _persisted_offsets(
    store: Path, group: str, wanted: dict[tuple[str, int], int]
) -> dict[tuple[str, int], int]:
    offsets = ConsumerOffsetManager(str(store))
    if not offsets.load():  # being rewritten just now
        return {}
    return {(topic, q): offsets.query_offset(group, topic, q) for topic, q in wanted}


def run_round_trip(version: str, root: Path) -> dict[str, Any]:
    """rmqtwin store -> real broker (consume, query, produce) -> copy of the broker's store."""
    from rmqtwin.codec.codes import RequestCode
    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ

    written = write_rmqtwin_store(root / "ours")
    assert len(os.listdir(root / "ours" / "commitlog")) >= 2
    shutil.copytree(root / "ours", root / "broker")
    client = JavaClient(version)
    java_messages = [
        {
            "topic": "StoreInteropA" if i % 4 else "StoreInteropB",
            "bodySize": 900 + (i % 5) * 300,
            "tags": f"Tag{'ABC'[i % 3]}",
            "keys": [f"key-{i}", f"order-{i % 7}"],
            "properties": {"seq": str(i)},
            **({"delayLevel": 1 + (i // 25) % 3} if i % 25 == 24 else {}),
        }
        for i in range(JAVA_MESSAGES)
    ]
    remote: dict[str, Any] = {}
    with RealRocketMQ(
        version, store_dir=root / "broker", broker_conf_overrides=SIZES, start_timeout=300
    ) as rmq:
        remote["received"] = (
            client.push_consumer(
                rmq.namesrv_addr,
                "InteropOursA",
                group="fresh_group",
                subscriptions=[
                    {"topic": "InteropOursA", "expression": "*"},
                    {"topic": "InteropOursB", "expression": "*"},
                ],
                expect=len(written),
                timeoutMs=90_000,
            )
            .check()
            .received
        )
        # The consumer's last offsets reach consumerOffset.json only with the broker's periodic flush (every
        # 5 s) or its shutdown hook, which under Java 17 may die first (see below): wait for the file itself.
        consumed: dict[tuple[str, int], int] = {}
        for w in written:
            key = (w["topic"], w["queueId"])
            consumed[key] = max(consumed.get(key, 0), w["queueOffset"] + 1)
        wait_until(
            lambda: _persisted_offsets(root / "broker", "fresh_group", consumed) == consumed,
            "fresh_group's consumed offsets in the real broker's consumerOffset.json",
        )
        remote["committed"] = {
            q: remoting_call(
                rmq.broker_addr,
                RequestCode.QUERY_CONSUMER_OFFSET,
                {"consumerGroup": "committed_group", "topic": "InteropOursA", "queueId": str(q)},
            )
            for q in range(4)
        }
        remote["max"] = {
            q: remoting_call(
                rmq.broker_addr, RequestCode.GET_MAX_OFFSET, {"topic": "InteropOursA", "queueId": str(q)}
            )
            for q in range(4)
        }
        remote["query"] = remoting_call(
            rmq.broker_addr,
            RequestCode.QUERY_MESSAGE,
            {
                "topic": "InteropOursB",
                "key": "key-33",
                "maxNum": "32",
                "beginTimestamp": "0",
                "endTimestamp": str(2**62),
            },
        )
        remote["sent"] = (
            client.producer(rmq.namesrv_addr, "StoreInteropA", mode="sync", messages=java_messages)
            .check()
            .sent
        )
    shutil.copytree(root / "broker", root / "copy")
    return {
        "version": version,
        "written": written,
        "java_messages": java_messages,
        "copy": root / "copy",
        **remote,
    }


@pytest.fixture(scope="module", params=["4.9", "5"], ids=["real-4.9", "real-5"])
def round_trip(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One version's round trip. The ``real-<line>`` ids put it on that line's pytest-xdist worker
    (``make test``), so the two versions run at once there."""
    from rmqtwin.conformance.launcher import java_available

    reason = java_available()
    if reason is not None:
        pytest.skip(reason)
    version = str(request.param)
    return run_round_trip(version, tmp_path_factory.mktemp(f"interop-{version}"))


# ----------------------------------------------------------------------------- (a) rmqtwin writes


def test_real_broker_delivers_every_rmqtwin_message(round_trip: dict[str, Any]) -> None:
    written = round_trip["written"]
    by_uniq = {e["uniqKey"]: e for e in round_trip["received"]}
    assert len(by_uniq) == len(written)
    for w in written:
        e = by_uniq[w["uniq"]]
        assert (e["topic"], e["queueId"], e["queueOffset"]) == (w["topic"], w["queueId"], w["queueOffset"])
        assert e["commitLogOffset"] == w["commitLogOffset"]
        assert e["offsetMsgId"] == w["msgId"] == create_offset_msg_id(STORE_HOST, w["commitLogOffset"])
        assert e["bodySha256"] == w["sha"]
        assert {k: v for k, v in e["properties"].items() if k not in CLIENT_ONLY_PROPERTIES} == w["props"]


def test_real_broker_answers_offsets_and_queries_on_an_rmqtwin_store(round_trip: dict[str, Any]) -> None:
    written = round_trip["written"]
    for q in range(4):
        committed, mx = round_trip["committed"][q], round_trip["max"][q]
        assert committed.code == 0 and committed.ext("offset") == str(5 + q)
        expected = sum(1 for w in written if w["topic"] == "InteropOursA" and w["queueId"] == q)
        assert mx.code == 0 and int(mx.ext("offset") or -1) == expected
    found = round_trip["query"]
    assert found.code == 0 and found.body
    assert f"{33:032X}" in {m.properties["UNIQ_KEY"] for m in iter_message_records(found.body)}


# ----------------------------------------------------------------------------- (b) real broker writes


def test_rmqtwin_serves_the_real_brokers_store(round_trip: dict[str, Any]) -> None:
    copy, sent, specs = round_trip["copy"], round_trip["sent"], round_trip["java_messages"]
    assert len(os.listdir(copy / "commitlog")) >= 3
    # Under Java 17 the launched broker's shutdown hook may die before removing ``abort``; then this is
    # abnormal recovery, where Java drops index files newer than the checkpoint and re-indexes only from
    # the checkpoint on unless messageIndexSafe is set. Set it, so query-by-key covers every message.
    store = DefaultMessageStore(str(copy), store_config(message_index_safe=True))
    assert store.load()
    try:
        assert len(sent) == JAVA_MESSAGES
        for event in sent:
            assert event["status"] == "SEND_OK"
            spec = specs[event["index"]]
            level = spec.get("delayLevel", 0)
            # a delayed message is stored in SCHEDULE_TOPIC_XXXX queue level-1; the send result's queue
            # offset is its offset there
            topic, queue_id = (
                ("SCHEDULE_TOPIC_XXXX", level - 1) if level else (event["topic"], event["queueId"])
            )
            res = store.get_message("g", topic, queue_id, event["queueOffset"], 1)
            assert res.status is GetMessageStatus.FOUND, event
            msg = decode_message_record(res.message_buffers[0], check_crc=True)[0]
            assert msg.properties["UNIQ_KEY"] == event["msgId"]
            assert msg.offset_msg_id == event["offsetMsgId"]
            assert msg.queue_offset == event["queueOffset"]
            if level:
                assert msg.properties["REAL_TOPIC"] == spec["topic"] == event["topic"]
                assert msg.properties["REAL_QID"] == str(event["queueId"])
                assert msg.properties["DELAY"] == str(level)
                msg.topic = spec["topic"]
            assert (msg.topic, msg.tags, msg.keys) == (spec["topic"], spec["tags"], " ".join(spec["keys"]))
            assert msg.body == driver_body(spec["bodySize"])
            assert msg.properties["seq"] == str(event["index"])
        for w in round_trip["written"]:  # and what rmqtwin wrote before is still served unchanged
            res = store.get_message("g", w["topic"], w["queueId"], w["queueOffset"], 1)
            assert decode_message_record(res.message_buffers[0])[0].properties["UNIQ_KEY"] == w["uniq"]
        hits = store.query_message("StoreInteropA", "key-17", 32, 0, 2**62)
        uniq = {decode_message_record(b)[0].properties["UNIQ_KEY"] for b in hits.message_buffers}
        assert next(e["msgId"] for e in sent if e["index"] == 17) in uniq
        offsets = ConsumerOffsetManager(str(copy))
        assert offsets.load()
        for topic in ("InteropOursA", "InteropOursB"):
            committed = offsets.query_offsets("fresh_group", topic)
            assert committed == {
                q: store.get_max_offset_in_queue(topic, q) for q in store.get_queue_ids(topic)
            }
        assert offsets.query_offsets("committed_group", "InteropOursA") == {q: 5 + q for q in range(4)}
    finally:
        store.shutdown()


def test_rmqtwin_recovers_the_real_store_after_a_torn_record(
    round_trip: dict[str, Any], tmp_path: Path
) -> None:
    """The same store with ``abort`` present and a corrupt last record: abnormal recovery cuts only that."""
    copy, sent = round_trip["copy"], round_trip["sent"]
    crashed = tmp_path / "crashed"
    shutil.copytree(copy, crashed)
    (crashed / "abort").write_bytes(b"")
    plain = DefaultMessageStore(str(copy), store_config(), read_only=True)
    assert plain.load()
    end = plain.get_max_phy_offset()
    last = plain.commit_log.iter_records(plain.get_min_phy_offset())[-1]
    plain.shutdown()
    assert last.commit_log_offset + last.msg_size == end
    with open(
        crashed / "commitlog" / f"{last.commit_log_offset - last.commit_log_offset % SEGMENT:020d}", "r+b"
    ) as f:
        f.seek(last.commit_log_offset % SEGMENT + 88)  # first body byte (IPv4 hosts): CRC mismatch
        first = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([first[0] ^ 0xFF]))
    store = DefaultMessageStore(str(crashed), store_config())
    assert store.load()
    try:
        assert not store.last_exit_ok
        assert store.get_max_phy_offset() == last.commit_log_offset
        assert store.get_max_offset_in_queue(last.topic, last.queue_id) == last.consume_queue_offset
        for event in sent:
            same_queue = (event["topic"], event["queueId"]) == (last.topic, last.queue_id)
            if same_queue and event["queueOffset"] >= last.consume_queue_offset:
                continue
            res = store.get_message("g", event["topic"], event["queueId"], event["queueOffset"], 1)
            assert res.status is GetMessageStatus.FOUND
    finally:
        store.shutdown()


def test_rmqtwin_rebuilds_the_real_brokers_consume_queues_byte_for_byte(
    round_trip: dict[str, Any], tmp_path: Path
) -> None:
    """Consume queues deleted, rebuilt by rmqtwin from the commitlog: the same bytes the real broker wrote
    (offsets, sizes, tags hashes, delivery times in SCHEDULE_TOPIC_XXXX, file names and sizes)."""
    copy = round_trip["copy"]
    rebuilt = tmp_path / "rebuilt"
    shutil.copytree(copy, rebuilt)
    shutil.rmtree(rebuilt / "consumequeue")
    store = DefaultMessageStore(str(rebuilt), store_config())
    assert store.load()
    store.shutdown()
    real_files = sorted(
        p.relative_to(copy / "consumequeue") for p in (copy / "consumequeue").rglob("*") if p.is_file()
    )
    ours = sorted(
        p.relative_to(rebuilt / "consumequeue") for p in (rebuilt / "consumequeue").rglob("*") if p.is_file()
    )
    assert ours == real_files
    assert any(str(p).startswith("SCHEDULE_TOPIC_XXXX") for p in real_files)
    for rel in real_files:
        assert (rebuilt / "consumequeue" / rel).read_bytes() == (copy / "consumequeue" / rel).read_bytes(), (
            rel
        )
