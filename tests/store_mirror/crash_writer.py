"""A process that appends with SYNC_FLUSH and prints ``index commitlog_offset queue_offset`` per acknowledged
message, only after ``wait_for_flush`` said PUT_OK. The crash test SIGKILLs it at random moments.

Run as ``python crash_writer.py STORE_DIR SEGMENT_SIZE``; message ``i`` goes to queue ``i % 2`` with a
body derived from ``i``, numbering continues from what the store already holds.
"""

from __future__ import annotations

import sys

from twisted.internet import reactor

from rmqtwin.store_mirror.flush import TwistedFlushDriver
from rmqtwin.store_mirror.message_store import DefaultMessageStore, MessageStoreConfig, PutMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner
from rmqtwin.store_mirror.store_config import FlushDiskType

TOPIC = "CrashTopic"
IN_FLIGHT = 32


def body_for(i: int) -> bytes:
    return (b"message-%08d|" % i) * (1 + i % 13)


def main() -> None:
    store_dir, segment = sys.argv[1], int(sys.argv[2])
    cfg = MessageStoreConfig(
        mapped_file_size_commit_log=segment,
        mapped_file_size_consume_queue=20 * 64,
        max_hash_slot_num=64,
        max_index_num=256,
        flush_disk_type=FlushDiskType.SYNC_FLUSH,
    )
    store = DefaultMessageStore(store_dir, cfg, flush=TwistedFlushDriver(reactor))
    if not store.load():
        sys.exit(2)
    store.start()
    state = {"next": store.get_max_offset_in_queue(TOPIC, 0) + store.get_max_offset_in_queue(TOPIC, 1)}
    print(f"start {state['next']}", flush=True)

    def send_one() -> None:
        i = state["next"]
        state["next"] += 1
        msg = MessageExtBrokerInner(
            topic=TOPIC,
            body=body_for(i),
            queue_id=i % 2,
            properties={"KEYS": f"k{i}", "UNIQ_KEY": f"{i:032X}"},
            born_timestamp=1_700_000_000_000 + i,
            born_host=("127.0.0.1", 5000),
            store_host=("127.0.0.1", 10911),
        )
        result = store.put_message(msg)
        append = result.append
        assert append is not None

        def acked(status: PutMessageStatus) -> None:
            if status is PutMessageStatus.PUT_OK:
                sys.stdout.write(f"{i} {append.wrote_offset} {append.logics_offset}\n")
                sys.stdout.flush()
            send_one()

        store.wait_for_flush(result).addCallback(acked)

    for _ in range(IN_FLIGHT):
        reactor.callWhenRunning(send_one)
    reactor.run()


if __name__ == "__main__":
    main()
