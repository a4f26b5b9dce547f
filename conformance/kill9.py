"""kill -9 trials: ``rmqtwin serve`` killed with SIGKILL in the middle of a send loop, restarted on the
same store, and every acknowledged message looked for.

One client sends, one request after another, plain messages (SEND_MESSAGE_V2), batches of three
(SEND_BATCH_MESSAGE) and transactions (a half message, then END_TRANSACTION COMMIT answered), all with
``WAIT=true``, spread over four queues. At a random moment (seeded) the twin is stopped (SIGSTOP), the
commitlog pages its process still holds dirty are read from ``/proc/PID/pagemap`` and
``/proc/kpageflags``, and it is killed (SIGKILL). It is then started again on the same store and every
queue is pulled from offset 0: an acknowledged body that is missing is *lost*, one found twice a
*duplicate*.

- SYNC_FLUSH: a send is answered only once the commitlog is fsynced past it; no acknowledged message
  may be lost or duplicated.
- ASYNC_FLUSH: a send is answered once written to the mapped file; the flush service looks every
  ``flushIntervalCommitLog`` (500 ms) and fsyncs once 4 pages (``flushCommitLogLeastPages``) are
  dirty, or everything every ``flushCommitLogThoroughInterval`` (10 s), as Java's FlushRealTimeService.
  A process kill cannot lose those bytes (the kernel holds the pages), but an OS crash at that moment
  could lose the acknowledged messages on pages still dirty: that *at-risk* count is read from the
  kernel (needs root for ``/proc/kpageflags``; skipped, and said so, without it), and anything lost
  must lie inside it. It is an upper bound: a page fsynced and then written again (the next,
  unacknowledged sends) is dirty too, though the bytes acknowledged on it are on disk; under
  SYNC_FLUSH that is all it can count.

    python -m rmqtwin.conformance.kill9 [--trials 20] [--flush SYNC_FLUSH|ASYNC_FLUSH] [--seed 9]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import struct
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.headers import CreateTopicRequestHeader, EndTransactionRequestHeader, to_ext_fields
from rmqtwin.codec.message import MessageSysFlag, decode_message_records
from rmqtwin.conformance.bad_inputs import Channel, batch_item, pull_ext, send_ext, v2
from rmqtwin.fakes.pytest_plugin import RunningTwin, start_subprocess

TOPIC = "KillNine"
PRODUCER_GROUP = "PG_kill9"
CONSUMER_GROUP = "CG_kill9"
QUEUES = 4
BATCH = 3
PAGE = 4096
SETTLE = 15.0
"""How long the check waits for the restarted twin's consume queues to show every message."""


@dataclass(frozen=True, slots=True)
class Acked:
    """A message the twin answered SUCCESS for: its body and where the answer said it was stored."""

    body: str
    commitlog_offset: int
    kind: str
    acked_at: float


@dataclass(slots=True)
class TrialResult:
    trial: int
    flush: str
    sent: int = 0
    acked: int = 0
    lost: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    at_risk: list[str] | None = None
    """Acknowledged bodies on commitlog pages still dirty at the kill, an upper bound of what an OS
    crash then could lose (None: not measurable)."""
    at_risk_window_ms: float | None = None
    """From the oldest at-risk acknowledgement to the kill."""
    kinds: Counter[str] = field(default_factory=Counter)
    restart_s: float = 0.0
    killed_after_s: float = 0.0


def _props(**props: str) -> str:
    return "".join(f"{k}\x01{v}\x02" for k, v in props.items())


def _offsets(msg_id: str | None) -> list[int]:
    """Commitlog offsets of an offset msgId (comma-separated for a batch): its last 16 hex digits."""
    return [int(one[-16:], 16) for one in (msg_id or "").split(",") if len(one) >= 16]


class Sender(threading.Thread):
    """Sends until its connection breaks; keeps what was acknowledged."""

    def __init__(self, addr: str, trial: int) -> None:
        super().__init__(daemon=True)
        self.channel = Channel(addr)
        self.trial = trial
        self.acked: list[Acked] = []
        self.sent = 0
        self.started = threading.Event()

    def run(self) -> None:
        seq = 0
        try:
            while True:
                kind = ("single", "batch", "transaction")[seq % 3]
                queue_id = seq % QUEUES
                bodies = [f"k9-{self.trial}-{seq}-{i}" for i in range(BATCH if kind == "batch" else 1)]
                seq += 1
                self.sent += len(bodies)
                getattr(self, "_" + kind)(bodies, queue_id)
                self.started.set()
        except (OSError, ConnectionError):
            pass
        finally:
            self.started.set()
            self.channel.close()

    def _ack(self, answer: RemotingCommand, bodies: list[str], kind: str) -> None:
        if answer.code != 0:
            return
        now = time.monotonic()
        offsets = _offsets(answer.ext("msgId"))
        for body, offset in zip(bodies, offsets, strict=False):
            self.acked.append(Acked(body, offset, kind, now))

    def _single(self, bodies: list[str], queue_id: int) -> None:
        ext = send_ext(TOPIC, queue_id=queue_id, group=PRODUCER_GROUP)
        ext["properties"] = _props(UNIQ_KEY=bodies[0], WAIT="true")
        answer = self.channel.call(RequestCode.SEND_MESSAGE_V2, v2(ext), bodies[0].encode())
        self._ack(answer, bodies, "single")

    def _batch(self, bodies: list[str], queue_id: int) -> None:
        ext = send_ext(TOPIC, queue_id=queue_id, group=PRODUCER_GROUP, batch=True)
        ext["properties"] = _props(WAIT="true")
        body = b"".join(batch_item(b.encode(), _props(UNIQ_KEY=b, WAIT="true")) for b in bodies)
        answer = self.channel.call(RequestCode.SEND_BATCH_MESSAGE, v2(ext), body)
        self._ack(answer, bodies, "batch")

    def _transaction(self, bodies: list[str], queue_id: int) -> None:
        ext = send_ext(TOPIC, queue_id=queue_id, group=PRODUCER_GROUP)
        ext["sysFlag"] = str(MessageSysFlag.TRANSACTION_PREPARED_TYPE)
        ext["properties"] = _props(UNIQ_KEY=bodies[0], WAIT="true", TRAN_MSG="true", PGROUP=PRODUCER_GROUP)
        half = self.channel.call(RequestCode.SEND_MESSAGE_V2, v2(ext), bodies[0].encode())
        offsets = _offsets(half.ext("msgId"))
        if half.code != 0 or not offsets:
            return
        header = EndTransactionRequestHeader(
            producer_group=PRODUCER_GROUP,
            tran_state_table_offset=int(half.ext("queueOffset") or "0"),
            commit_log_offset=offsets[0],
            commit_or_rollback=MessageSysFlag.TRANSACTION_COMMIT_TYPE,
            from_transaction_check=False,
            msg_id=bodies[0],
            transaction_id=half.ext("transactionId") or bodies[0],
            topic=TOPIC,
        )
        answer = self.channel.call(RequestCode.END_TRANSACTION, to_ext_fields(header))
        if answer.code == 0:
            # The committed copy is a new record; where it went the answer does not say.
            self.acked.append(Acked(bodies[0], -1, "transaction", time.monotonic()))


def create_topic(addr: str) -> None:
    header = CreateTopicRequestHeader(
        topic=TOPIC,
        default_topic="TBW102",
        read_queue_nums=QUEUES,
        write_queue_nums=QUEUES,
        perm=6,
        topic_filter_type="SINGLE_TAG",
        topic_sys_flag=0,
        order=False,
    )
    channel = Channel(addr)
    try:
        answer = channel.call(RequestCode.UPDATE_AND_CREATE_TOPIC, to_ext_fields(header))
    finally:
        channel.close()
    if answer.code != 0:
        raise RuntimeError(f"UPDATE_AND_CREATE_TOPIC answered {answer.code} {answer.remark!r}")


def stored_bodies(addr: str) -> tuple[Counter[str], dict[str, tuple[int, int]]]:
    """Every body in the topic's queues (with how often), and each body's commitlog offset and size."""
    channel = Channel(addr)
    found: Counter[str] = Counter()
    where: dict[str, tuple[int, int]] = {}
    try:
        for queue_id in range(QUEUES):
            offset = 0
            while True:
                ext = pull_ext(TOPIC, CONSUMER_GROUP, queue_id=queue_id, tag="*")
                ext["queueOffset"] = str(offset)
                answer = channel.call(RequestCode.PULL_MESSAGE, ext)
                if answer.code != 0 or not answer.body:  # FOUND
                    break
                for msg in decode_message_records(answer.body):
                    body = msg.body.decode()
                    found[body] += 1
                    where[body] = (msg.commitlog_offset, msg.store_size)
                offset = int(answer.ext("nextBeginOffset") or "0")
    finally:
        channel.close()
    return found, where


# -- what an OS crash would lose: the commitlog pages the killed process held dirty ------------------

_KPF_DIRTY = 1 << 4
_PRESENT = 1 << 63
_PFN_MASK = (1 << 55) - 1


def dirty_pages_readable() -> str | None:
    """None when the dirty commitlog pages can be read, else why not."""
    for path in ("/proc/self/pagemap", "/proc/kpageflags"):
        try:
            with open(path, "rb") as fh:
                fh.read(8)
        except OSError as exc:
            return f"{path} unreadable ({exc.strerror}; needs root)"
    return None


def dirty_commitlog_pages(pid: int) -> set[int]:
    """Commitlog offsets (page-aligned) of the pages ``pid`` maps that are dirty (written, not yet
    written back or fsynced): what the page cache would lose in an OS crash now."""
    dirty: set[int] = set()
    with (
        open(f"/proc/{pid}/maps", encoding="ascii", errors="replace") as maps,
        open(f"/proc/{pid}/pagemap", "rb") as pagemap,
        open("/proc/kpageflags", "rb") as kpageflags,
    ):
        for line in maps:
            parts = line.split()
            if len(parts) < 6 or "/commitlog/" not in parts[5]:
                continue
            start, end = (int(x, 16) for x in parts[0].split("-"))
            base = int(os.path.basename(parts[5])) + int(parts[2], 16)
            pages = (end - start) // PAGE
            pagemap.seek(start // PAGE * 8)
            entries = struct.unpack(f"<{pages}Q", pagemap.read(pages * 8))
            for index, entry in enumerate(entries):
                if not entry & _PRESENT:
                    continue
                kpageflags.seek((entry & _PFN_MASK) * 8)
                (flags,) = struct.unpack("<Q", kpageflags.read(8))
                if flags & _KPF_DIRTY:
                    dirty.add(base + index * PAGE)
    return dirty


def _on_dirty_page(offset: int, size: int, dirty: set[int]) -> bool:
    first = offset - offset % PAGE
    return any(page in dirty for page in range(first, offset + max(size, 1), PAGE))


# -- trials ---------------------------------------------------------------------------------------------


def _start(work: str, flush: str) -> tuple[RunningTwin, float]:
    began = time.monotonic()
    twin = start_subprocess(
        work, broker_conf={"flushDiskType": flush}, serve_args=("--rocketmq-version", "5.5")
    )
    return twin, time.monotonic() - began


def run_trials(trials: int, flush: str, seed: int, *, log: bool = True) -> list[TrialResult]:
    """``trials`` kill -9 trials on one store; the ledger of acknowledged messages grows across them."""
    rng = random.Random(seed)
    work = tempfile.mkdtemp(prefix="rmqtwin-kill9-")
    measure_dirty = dirty_pages_readable() is None
    ledger: list[Acked] = []
    results: list[TrialResult] = []
    try:
        twin, restart_s = _start(work, flush)
        create_topic(twin.broker_addr)
        for trial in range(trials):
            result = TrialResult(trial, flush, restart_s=restart_s)
            sender = Sender(twin.broker_addr, trial)
            sender.start()
            sender.started.wait(30)
            began = time.monotonic()
            time.sleep(rng.uniform(0.2, 1.2))
            assert twin.process is not None
            pid = twin.process.pid
            os.kill(pid, signal.SIGSTOP)
            killed_at = time.monotonic()
            dirty = dirty_commitlog_pages(pid) if measure_dirty else None
            os.kill(pid, signal.SIGKILL)
            twin.process.wait()
            sender.join(30)
            result.killed_after_s = killed_at - began
            result.sent = sender.sent
            result.acked = len(sender.acked)
            result.kinds = Counter(a.kind for a in sender.acked)
            ledger.extend(sender.acked)
            twin, restart_s = _start(work, flush)
            found, where = _check(twin.broker_addr, ledger)
            result.lost = [a.body for a in ledger if not found[a.body]]
            result.duplicates = sorted(body for body, n in found.items() if n > 1)
            if dirty is not None:
                risky = [
                    a
                    for a in sender.acked
                    if a.commitlog_offset >= 0
                    and _on_dirty_page(a.commitlog_offset, where.get(a.body, (0, 1))[1], dirty)
                ]
                result.at_risk = [a.body for a in risky]
                result.at_risk_window_ms = (
                    (killed_at - min(a.acked_at for a in risky)) * 1000 if risky else 0.0
                )
            results.append(result)
            if log:
                print(_line(result), flush=True)
        twin.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def _check(addr: str, ledger: list[Acked]) -> tuple[Counter[str], dict[str, tuple[int, int]]]:
    """Pull until every acknowledged body shows (the restarted store re-dispatches) or ``SETTLE`` ends."""
    deadline = time.monotonic() + SETTLE
    while True:
        found, where = stored_bodies(addr)
        if all(found[a.body] for a in ledger) or time.monotonic() >= deadline:
            return found, where
        time.sleep(0.1)


def _line(r: TrialResult) -> str:
    risk = "n/a" if r.at_risk is None else f"{len(r.at_risk)} ({r.at_risk_window_ms:.0f} ms)"
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(r.kinds.items()))
    return (
        f"{r.flush} trial {r.trial + 1:2d}: killed after {r.killed_after_s:.2f} s, {r.acked}/{r.sent} acked "
        f"({kinds}), lost {len(r.lost)}, duplicates {len(r.duplicates)}, on dirty pages {risk}, "
        f"restart {r.restart_s:.2f} s"
    )


def summary(results: list[TrialResult]) -> str:
    acked = sum(r.acked for r in results)
    lost = sum(len(r.lost) for r in results)
    dups = sum(len(r.duplicates) for r in results)
    measured = [r for r in results if r.at_risk is not None]
    risk = (
        f"on pages still dirty at the kill (what an OS crash could lose, at most): "
        f"{sum(len(r.at_risk or ()) for r in measured)} acknowledged "
        f"(max {max(len(r.at_risk or ()) for r in measured)} in a trial, oldest "
        f"{max(r.at_risk_window_ms or 0 for r in measured):.0f} ms before the kill)"
        if measured
        else f"at-risk window not measured: {dirty_pages_readable()}"
    )
    restarts = sorted(r.restart_s for r in results)
    return (
        f"{results[0].flush}: {len(results)} kill -9 trials, {acked} acknowledged, {lost} lost, "
        f"{dups} duplicates; {risk}; restart {restarts[0]:.2f}-{restarts[-1]:.2f} s"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--flush", choices=("SYNC_FLUSH", "ASYNC_FLUSH"), default="SYNC_FLUSH")
    parser.add_argument("--seed", type=int, default=9)
    args = parser.parse_args(argv)
    results = run_trials(args.trials, args.flush, args.seed)
    print(summary(results))
    return 1 if any(r.lost or r.duplicates for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
