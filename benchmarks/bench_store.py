"""Store append throughput next to the raw sequential write rate of the same disk, measured in one run.

    .venv/bin/python benchmarks/bench_store.py [--messages N] [--body 1024] [--dir DIR] [--json FILE]

Targets (issue 17): ASYNC_FLUSH >= 200k msgs/s of 1 KiB on one thread, SYNC_FLUSH with group commit
>= 100k msgs/s.

Prints, for 1 KiB messages: raw write+fsync of a file of the same size (MB/s), the store in ASYNC_FLUSH
and SYNC_FLUSH (MB/s, msgs/s, ratio to raw), and how responsive the reactor stays while SYNC_FLUSH
fsyncs run on the flush thread (delays of a 1 ms heartbeat LoopingCall: median, p99, max). Each append
row also gives the process's CPU time per message (user + system, page faults included): on a shared
machine the msgs/s drift with the load, the CPU per message much less, so compare that across runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from typing import Any

from common import load_note, write_figures

from rmqtwin.store_mirror.flush import TwistedFlushDriver
from rmqtwin.store_mirror.message_store import DefaultMessageStore, MessageStoreConfig, PutMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner
from rmqtwin.store_mirror.store_config import FlushDiskType

SEGMENT = 64 * 1024 * 1024


def raw_disk_rate(directory: str, total: int, chunk: int = 1 << 20) -> float:
    """MB/s of writing ``total`` bytes sequentially and fsyncing them (same file size as the store)."""
    path = os.path.join(directory, "raw.bin")
    data = os.urandom(chunk)
    start = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        written = 0
        while written < total:
            written += os.write(fd, data[: min(chunk, total - written)])
        os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - start
    os.unlink(path)
    return total / elapsed / 1e6


def make_messages(n: int, body: int) -> list[MessageExtBrokerInner]:
    payload = os.urandom(body)
    return [
        MessageExtBrokerInner(
            topic="BenchTopic",
            body=payload,
            queue_id=i % 4,
            properties={"TAGS": "TagA", "KEYS": f"key{i}", "UNIQ_KEY": f"{i:032X}"},
            properties_string=f"TAGS\x01TagA\x02KEYS\x01key{i}\x02UNIQ_KEY\x01{i:032X}",
            born_timestamp=1_700_000_000_000,
            born_host=("127.0.0.1", 5555),
            store_host=("127.0.0.1", 10911),
        )
        for i in range(n)
    ]


def bench_async(directory: str, n: int, body: int) -> tuple[float, int, float]:
    """Append everything, then flush once at the end (what the periodic flush would have done)."""
    from twisted.internet.task import Clock

    cfg = MessageStoreConfig(mapped_file_size_commit_log=SEGMENT)
    store = DefaultMessageStore(directory, cfg, flush=TwistedFlushDriver(Clock(), _inline))
    assert store.load()
    store.start()
    msgs = make_messages(n, body)
    cpu = time.process_time()
    start = time.perf_counter()
    for m in msgs:
        assert store.put_message(m).status is PutMessageStatus.PUT_OK
    store.commit_log.mapped_file_queue.flush_all()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    size = store.get_max_phy_offset()
    store.shutdown()
    return elapsed, size, cpu


def _inline(fn: Any) -> Any:
    from twisted.internet import defer

    return defer.succeed(fn())


def bench_sync(directory: str, n: int, body: int, in_flight: int) -> tuple[float, int, list[float], float]:
    """``in_flight`` outstanding acknowledgements on the real reactor (fsync on the flush thread)."""
    from twisted.internet import reactor, task

    cfg = MessageStoreConfig(mapped_file_size_commit_log=SEGMENT, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    store = DefaultMessageStore(directory, cfg, flush=TwistedFlushDriver(reactor))
    assert store.load()
    store.start()
    msgs = make_messages(n, body)
    state = {"next": 0, "acked": 0, "last": time.perf_counter()}
    gaps: list[float] = []

    def heartbeat() -> None:
        now = time.perf_counter()
        gaps.append(now - state["last"])
        state["last"] = now

    beat = task.LoopingCall(heartbeat)

    def send() -> None:
        i = int(state["next"])
        if i >= n:
            return
        state["next"] = i + 1
        result = store.put_message(msgs[i])
        store.wait_for_flush(result).addCallback(acked)

    def acked(status: PutMessageStatus) -> None:
        assert status is PutMessageStatus.PUT_OK, status
        state["acked"] += 1
        if state["acked"] == n:
            reactor.stop()
        else:
            send()

    def begin() -> None:
        state["last"] = time.perf_counter()
        beat.start(0.001)
        for _ in range(in_flight):
            send()

    cpu = time.process_time()
    start = time.perf_counter()
    reactor.callWhenRunning(begin)
    reactor.run()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    beat.stop()
    size = store.get_max_phy_offset()
    store.shutdown()
    return elapsed, size, sorted(gaps), cpu


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--sync-messages", type=int, default=20_000)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--dir", default=None, help="where to write (default: a temp dir)")
    parser.add_argument("--json", help="write the figures here (for run_all.py)")
    args = parser.parse_args()
    base = tempfile.mkdtemp(prefix="bench-store-", dir=args.dir)
    try:
        elapsed, size, cpu = bench_async(os.path.join(base, "async"), args.messages, args.body)
        raw = raw_disk_rate(base, size)
        async_mb = size / elapsed / 1e6
        print(f"messages {args.messages} x {args.body} B body; stored bytes {size}; {load_note()}")
        print(f"raw sequential write+fsync  {raw:8.1f} MB/s")
        print(
            f"ASYNC_FLUSH append          {async_mb:8.1f} MB/s  {args.messages / elapsed:9.0f} msgs/s"
            f"  ratio to raw {async_mb / raw:5.2f}  CPU {cpu / args.messages * 1e6:6.1f} us/msg"
        )
        s_elapsed, s_size, gaps, s_cpu = bench_sync(
            os.path.join(base, "sync"), args.sync_messages, args.body, args.in_flight
        )
        sync_mb = s_size / s_elapsed / 1e6
        raw_sync = raw_disk_rate(base, s_size)
        print(
            f"SYNC_FLUSH  append          {sync_mb:8.1f} MB/s  {args.sync_messages / s_elapsed:9.0f} msgs/s"
            f"  ratio to raw {sync_mb / raw_sync:5.2f}  CPU {s_cpu / args.sync_messages * 1e6:6.1f} us/msg"
            f"  ({args.in_flight} in flight, group commit)"
        )
        write_figures(
            args.json,
            {
                "raw MB/s": raw,
                "record bytes": size / args.messages,
                "async msgs/s": args.messages / elapsed,
                "async MB/s": async_mb,
                "sync msgs/s": args.sync_messages / s_elapsed,
                "sync MB/s": sync_mb,
                "raw sync MB/s": raw_sync,
                "async cpu us/msg": cpu / args.messages * 1e6,
                "sync cpu us/msg": s_cpu / args.sync_messages * 1e6,
            },
        )
        p50, p99 = gaps[len(gaps) // 2], gaps[int(len(gaps) * 0.99)]
        print(
            f"reactor 1 ms heartbeat during SYNC_FLUSH: p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms, "
            f"max {gaps[-1] * 1000:.1f} ms ({len(gaps)} beats)"
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
