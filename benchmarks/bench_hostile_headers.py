"""Other clients' latency while hostile clients send huge binary headers: rmqtwin beside real 5.5.0.

Four attackers each send, over and over, a 15 MiB frame whose ROCKETMQ (binary) header carries ~1.9M
one-byte extFields (under the 16 MiB frame limit, so both servers decode it); meanwhile a probe client
sends GET_BROKER_CONFIG every 10 ms on its own connection and times each answer. Prints the probe's
p50/p99/max before and during the attack for each target, and the twin/real ratio of the p99 under
attack (target: twin p99 <= 50 ms).

    .venv/bin/python benchmarks/bench_hostile_headers.py [--seconds 10] [--attackers 4] [--version 5]

The machine is shared: compare the rows of one run, not figures across runs.
"""

from __future__ import annotations

import argparse
import shutil
import struct
import sys
import tempfile
import threading
import time

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.command import create_request
from rmqtwin.conformance.launcher import RealRocketMQ, resolve_version
from rmqtwin.fakes.pytest_plugin import start_subprocess
from rmqtwin.probe import BlockingChannel

FRAME_BYTES = 15 * 1024 * 1024


def hostile_frame(total: int = FRAME_BYTES) -> tuple[bytes, int]:
    """A binary-header frame of about ``total`` bytes: 8-byte extFields entries (1-byte key and value)."""
    fixed = 2 + 1 + 2 + 4 + 4 + 4 + 4
    entries = (total - 8 - fixed) // 8
    entry = struct.pack(">h", 1) + b"k" + struct.pack(">i", 1) + b"v"
    ext = entry * entries
    header = struct.pack(">hbhiii", 9999, 0, 453, 1, 0, 0) + struct.pack(">i", len(ext)) + ext
    return struct.pack(">ii", 4 + len(header), (1 << 24) | len(header)) + header, entries


def probe(addr: str, seconds: float) -> list[float]:
    """Round trips (ms) of GET_BROKER_CONFIG every 10 ms for ``seconds``, on one connection."""
    out: list[float] = []
    end = time.monotonic() + seconds
    with BlockingChannel(addr, timeout=30) as channel:
        while time.monotonic() < end:
            request = create_request(RequestCode.GET_BROKER_CONFIG, {}, version=453)
            start = time.perf_counter()
            channel.invoke(request)
            out.append((time.perf_counter() - start) * 1000)
            time.sleep(0.01)
    return out


def attack(addr: str, frame: bytes, stop: threading.Event, sent: list[int]) -> None:
    while not stop.is_set():
        try:
            channel = BlockingChannel(addr, timeout=60)
        except OSError:
            time.sleep(0.1)
            continue
        try:
            while not stop.is_set():
                channel.write(frame)
                sent.append(1)
                channel.read()  # the answer (REQUEST_CODE_NOT_SUPPORTED), so frames do not pile up
        except OSError:
            pass
        finally:
            channel.close()


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def run(name: str, addr: str, frame: bytes, seconds: float, attackers: int) -> dict[str, float]:
    idle = probe(addr, 2.0)
    stop = threading.Event()
    sent: list[int] = []
    threads = [
        threading.Thread(target=attack, args=(addr, frame, stop, sent), daemon=True) for _ in range(attackers)
    ]
    for t in threads:
        t.start()
    time.sleep(1.0)  # the first frames are in flight
    loaded = probe(addr, seconds)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    row = {
        "idle_p50": pct(idle, 50),
        "idle_p99": pct(idle, 99),
        "p50": pct(loaded, 50),
        "p99": pct(loaded, 99),
        "max": max(loaded) if loaded else float("nan"),
        "probes": len(loaded),
        "frames": len(sent),
    }
    print(
        f"{name:<12} idle p50 {row['idle_p50']:7.2f} ms p99 {row['idle_p99']:7.2f} ms | under attack "
        f"p50 {row['p50']:7.2f} ms p99 {row['p99']:7.2f} ms max {row['max']:8.2f} ms "
        f"({row['probes']:.0f} probes, {row['frames']:.0f} hostile frames)",
        flush=True,
    )
    return row


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--attackers", type=int, default=4)
    parser.add_argument("--version", default="5")
    args = parser.parse_args(argv)
    frame, entries = hostile_frame()
    print(
        f"hostile frame: {len(frame) / 2**20:.1f} MiB, {entries:,} extFields, {args.attackers} attackers",
        flush=True,
    )
    line = resolve_version(args.version).line
    rows: dict[str, dict[str, float]] = {}
    work = tempfile.mkdtemp(prefix="rmqtwin-bench-hostile-")
    twin = start_subprocess(work, serve_args=("--rocketmq-version", "4.9" if line == "4.9" else "5.5"))
    try:
        rows["twin"] = run("twin", twin.broker_addr, frame, args.seconds, args.attackers)
    finally:
        twin.stop()
        shutil.rmtree(work, ignore_errors=True)
    with RealRocketMQ(args.version) as real:
        rows["real"] = run(f"real {line}", real.broker_addr, frame, args.seconds, args.attackers)
    ratio = rows["twin"]["p99"] / rows["real"]["p99"] if rows["real"]["p99"] else float("nan")
    verdict = "met" if rows["twin"]["p99"] <= 50 else "NOT met"
    print(
        f"ratio twin/real p99 under attack: {ratio:.2f}x "
        f"(twin {rows['twin']['p99']:.1f} ms, real {rows['real']['p99']:.1f} ms; "
        f"target twin <= 50 ms: {verdict})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
