"""Crash safety: SIGKILL a SYNC_FLUSH writer at random points, recover, and check every acknowledged message.

Each round starts the writer on the same store, lets it acknowledge a random number of messages, kills it
with SIGKILL (no shutdown, ``abort`` left behind), then recovers the store in this process and checks:
every acknowledged message is there exactly once at its acknowledged commitlog and queue offset; queue
offsets run without gaps in send order; no consume-queue entry points past the commitlog end.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from rmqtwin.codec.message import MessageExt, decode_message_record
from rmqtwin.store_mirror.layouts import CQ_ENTRY
from rmqtwin.store_mirror.message_store import DefaultMessageStore, GetMessageStatus, MessageStoreConfig

from .crash_writer import TOPIC, body_for

WRITER = Path(__file__).with_name("crash_writer.py")
SEGMENT = 64 * 1024


def config() -> MessageStoreConfig:
    return MessageStoreConfig(
        mapped_file_size_commit_log=SEGMENT,
        mapped_file_size_consume_queue=20 * 64,
        max_hash_slot_num=64,
        max_index_num=256,
    )


def run_and_kill(store_dir: str, acks_wanted: int, rng: random.Random) -> dict[int, tuple[int, int]]:
    proc = subprocess.Popen(
        [sys.executable, str(WRITER), store_dir, str(SEGMENT)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    acked: dict[int, tuple[int, int]] = {}
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("start "), first + (proc.stderr.read() if proc.stderr else "")
        while len(acked) < acks_wanted:
            line = proc.stdout.readline()
            if not line:
                break
            i, phy, qoff = (int(x) for x in line.split())
            acked[i] = (phy, qoff)
        if rng.random() < 0.5:  # sometimes kill mid-append rather than right after an ack
            for _ in range(rng.randrange(1, 50)):
                if os.read(proc.stdout.fileno(), 1) == b"":
                    break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    return acked


def verify(store_dir: str, acked: dict[int, tuple[int, int]]) -> int:
    store = DefaultMessageStore(store_dir, config(), read_only=False)
    assert store.load()
    try:
        end = store.get_max_phy_offset()
        counts = [store.get_max_offset_in_queue(TOPIC, q) for q in (0, 1)]
        assert counts[0] - counts[1] in (0, 1)  # send order alternates queues: no gaps, no extras
        total = sum(counts)
        for q in (0, 1):
            res = store.get_message("g", TOPIC, q, 0, 100_000)
            if counts[q] == 0:
                continue
            assert res.status is GetMessageStatus.FOUND
            got: list[MessageExt] = []
            while True:
                got.extend(decode_message_record(b, check_crc=True)[0] for b in res.message_buffers)
                if res.next_begin_offset >= counts[q]:
                    break
                res = store.get_message("g", TOPIC, q, res.next_begin_offset, 100_000)
            assert [m.queue_offset for m in got] == list(range(counts[q]))
            for m in got:
                i = int(m.properties["UNIQ_KEY"], 16)
                assert i % 2 == q and i // 2 == m.queue_offset
                assert m.body == body_for(i)
        for i, (phy, qoff) in acked.items():
            assert i < total, f"acknowledged message {i} lost (store holds {total})"
            raw = store.select_one_message_by_offset(phy)
            assert raw is not None
            m = decode_message_record(raw, check_crc=True)[0]
            assert (int(m.properties["UNIQ_KEY"], 16), m.queue_offset, m.queue_id) == (i, qoff, i % 2)
        for q in (0, 1):
            cq = store.find_consume_queue(TOPIC, q)
            for mf in cq.mapped_file_queue:
                for pos in range(0, mf.wrote_position, 20):
                    offset, size, _ = CQ_ENTRY.unpack_from(mf.mm, pos)
                    assert offset + size <= end
        return total
    finally:
        store.shutdown()


def crash_rounds(tmp_path: Path, rounds: int, seed: int) -> None:
    rng = random.Random(seed)
    store_dir = str(tmp_path / "store")
    all_acked: dict[int, tuple[int, int]] = {}
    for _ in range(rounds):
        acked = run_and_kill(store_dir, rng.randrange(5, 160), rng)
        assert not (acked.keys() & all_acked.keys()) or all(
            acked[i] == all_acked[i] for i in acked.keys() & all_acked.keys()
        )
        all_acked.update(acked)
        assert os.path.exists(os.path.join(store_dir, "abort"))
        verify(store_dir, all_acked)
    assert len(os.listdir(os.path.join(store_dir, "commitlog"))) >= 2 or len(all_acked) < 200


def test_sigkill_during_sync_flush_appends(tmp_path: Path) -> None:
    crash_rounds(tmp_path, rounds=3, seed=20240501)


@pytest.mark.slow
def test_sigkill_during_sync_flush_appends_20_rounds(tmp_path: Path) -> None:
    crash_rounds(tmp_path, rounds=20, seed=777)
