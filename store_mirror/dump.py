"""Read-only inspection of a store (rmqtwin's or a real broker's): ``rmqtwin store dump`` and ``stats``.

Everything is opened read-only: no ``abort`` or ``lock`` file is created, recovery never truncates or
rewrites anything, and file sizes are taken from the files themselves so any broker's store can be read.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.message import MessageExt, decode_message_record
from rmqtwin.store_mirror.checkpoint import StoreCheckpoint
from rmqtwin.store_mirror.config import ConsumerOffsetManager, TopicConfigManager
from rmqtwin.store_mirror.consume_queue import queue_dirs
from rmqtwin.store_mirror.layouts import INDEX_ENTRY_SIZE, INDEX_HASH_SLOT_SIZE, INDEX_HEADER_SIZE
from rmqtwin.store_mirror.message_store import DefaultMessageStore, MessageStoreConfig


def _first_file_size(directory: str) -> int | None:
    if not os.path.isdir(directory):
        return None
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return os.path.getsize(path)
    return None


def _first_cq_file_size(root: str) -> int | None:
    for _, _, queue_dir in queue_dirs(root):
        size = _first_file_size(queue_dir)
        if size:
            return size
    return None


def detect_config(store_dir: str) -> MessageStoreConfig:
    """File sizes as the store's own files have them (index: slots x 4 entries, Java's ratio)."""
    cfg = MessageStoreConfig()
    size = _first_file_size(os.path.join(store_dir, "commitlog"))
    if size:
        cfg.mapped_file_size_commit_log = size
    cq = _first_cq_file_size(os.path.join(store_dir, "consumequeue"))
    if cq:
        cfg.mapped_file_size_consume_queue = cq
    index = _first_file_size(os.path.join(store_dir, "index"))
    per_slot = INDEX_HASH_SLOT_SIZE + 4 * INDEX_ENTRY_SIZE
    if index and index != INDEX_HEADER_SIZE + cfg.max_hash_slot_num * per_slot:
        if (index - INDEX_HEADER_SIZE) % per_slot == 0:
            cfg.max_hash_slot_num = (index - INDEX_HEADER_SIZE) // per_slot
            cfg.max_index_num = 4 * cfg.max_hash_slot_num
        else:
            cfg.message_index_enable = False
    return cfg


def open_read_only(store_dir: str) -> DefaultMessageStore:
    if not os.path.isdir(store_dir):
        raise FileNotFoundError(store_dir)
    cfg = detect_config(store_dir)  # an index of unknown layout is skipped (stats then lists none)
    store = DefaultMessageStore(store_dir, cfg, read_only=True)
    if not store.load():
        store.shutdown()
        raise ValueError(f"{store_dir}: files of unexpected size; not a loadable store")
    return store


@dataclass(slots=True)
class DumpedMessage:
    msg: MessageExt
    size: int


def iter_messages(store: DefaultMessageStore, topic: str | None = None) -> Iterator[DumpedMessage]:
    """Every valid record in commitlog order (including half messages, which no queue lists)."""
    for req in store.commit_log.iter_records(store.get_min_phy_offset()):
        if topic is not None and req.topic != topic:
            continue
        data = store.select_one_message_by_offset(req.commit_log_offset, req.msg_size)
        if data is None:
            continue
        try:
            msg, _ = decode_message_record(data, 0, decompress=False)
        except CodecError:
            continue
        yield DumpedMessage(msg, req.msg_size)


def _body_field(body: bytes) -> dict[str, Any]:
    try:
        return {"body": body.decode("utf-8")}
    except UnicodeDecodeError:
        return {"bodyBase64": base64.b64encode(body).decode("ascii")}


def message_json(d: DumpedMessage) -> dict[str, Any]:
    m = d.msg
    out: dict[str, Any] = {
        "commitLogOffset": m.commitlog_offset,
        "storeSize": d.size,
        "topic": m.topic,
        "queueId": m.queue_id,
        "queueOffset": m.queue_offset,
        "msgId": m.msg_id,
        "uniqKey": m.uniq_key,
        "tags": m.tags,
        "keys": m.keys,
        "sysFlag": m.sys_flag,
        "flag": m.flag,
        "bornTimestamp": m.born_timestamp,
        "bornHost": f"{m.born_host[0]}:{m.born_host[1]}",
        "storeTimestamp": m.store_timestamp,
        "storeHost": f"{m.store_host[0]}:{m.store_host[1]}",
        "bodyCRC": m.body_crc,
        "reconsumeTimes": m.reconsume_times,
        "preparedTransactionOffset": m.prepared_transaction_offset,
        "properties": m.properties,
        "bodyLength": len(m.body),
    }
    out.update(_body_field(m.body))
    return out


def queue_table(store: DefaultMessageStore) -> list[dict[str, Any]]:
    rows = []
    for topic in store.get_topics():
        for q in store.get_queue_ids(topic):
            rows.append(
                {
                    "topic": topic,
                    "queueId": q,
                    "minOffset": store.get_min_offset_in_queue(topic, q),
                    "maxOffset": store.get_max_offset_in_queue(topic, q),
                }
            )
    return rows


def dump(store_dir: str, out: TextIO, *, as_json: bool = False, topic: str | None = None) -> int:
    store = open_read_only(store_dir)
    try:
        if as_json:
            for d in iter_messages(store, topic):
                out.write(json.dumps(message_json(d), ensure_ascii=False) + "\n")
            return 0
        out.write(f"store {store_dir}\n")
        out.write(f"commitlog [{store.get_min_phy_offset()}, {store.get_max_phy_offset()})\n\n")
        out.write(f"{'topic':<40} {'queue':>5} {'min':>10} {'max':>10}\n")
        for row in queue_table(store):
            if topic is None or row["topic"] == topic:
                out.write(
                    f"{row['topic']:<40} {row['queueId']:>5} {row['minOffset']:>10} {row['maxOffset']:>10}\n"
                )
        out.write("\n")
        out.write(
            f"{'phyOffset':>12} {'size':>6} {'topic':<28} {'q':>3} {'qOffset':>8} {'storeTime':>14} "
            f"{'tags':<12} {'keys':<20} {'uniqKey':<34} body\n"
        )
        for d in iter_messages(store, topic):
            m = d.msg
            body = m.body[:24].decode("utf-8", "replace").replace("\n", " ")
            tags, keys, uniq = m.tags or "", m.keys or "", m.uniq_key or ""
            out.write(
                f"{m.commitlog_offset:>12} {d.size:>6} {m.topic:<28} {m.queue_id:>3} {m.queue_offset:>8} "
                f"{m.store_timestamp:>14} {tags:<12} {keys:<20} {uniq:<34} {body}\n"
            )
        return 0
    finally:
        store.shutdown()


def stats(store_dir: str) -> dict[str, Any]:
    store = open_read_only(store_dir)
    try:
        per_topic: dict[str, int] = {}
        count = 0
        for req in store.commit_log.iter_records(store.get_min_phy_offset()):
            per_topic[req.topic] = per_topic.get(req.topic, 0) + 1
            count += 1
        cp = StoreCheckpoint(os.path.join(store_dir, "checkpoint"), read_only=True)
        topics = TopicConfigManager(store_dir)
        offsets = ConsumerOffsetManager(store_dir)
        return {
            "storeDir": store_dir,
            "cleanShutdown": not os.path.exists(os.path.join(store_dir, "abort")),
            "commitlog": {
                "fileSize": store.config.mapped_file_size_commit_log,
                "files": [mf.file_name for mf in store.commit_log.mapped_file_queue],
                "minOffset": store.get_min_phy_offset(),
                "maxOffset": store.get_max_phy_offset(),
                "messages": count,
                "messagesPerTopic": per_topic,
            },
            "consumeQueues": queue_table(store),
            "index": [
                {
                    "file": f.file_name,
                    "beginTimestamp": f.begin_timestamp,
                    "endTimestamp": f.end_timestamp,
                    "indexCount": f.index_count - 1,
                    "hashSlotCount": f.hash_slot_count,
                }
                for f in store.index_service.index_file_list
            ],
            "checkpoint": {
                "physicMsgTimestamp": cp.physic_msg_timestamp,
                "logicsMsgTimestamp": cp.logics_msg_timestamp,
                "indexMsgTimestamp": cp.index_msg_timestamp,
            },
            "topics": sorted(topics.topic_config_table) if topics.load() else None,
            "consumerOffsets": offsets.offset_table if offsets.load() else None,
        }
    finally:
        store.shutdown()
