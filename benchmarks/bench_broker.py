"""rmqtwin's broker against real Apache RocketMQ 5.5.0, side by side in one run.

For each target: time from launch to ready (name server + broker accepting and registered), idle
RSS, then the real Java BenchmarkProducer (1 KiB bodies, sync, 16 threads, 30 s by default) with
the peak RSS while loaded, then a real push consumer draining what was sent. Prints one row per
target and the twin/real ratios (target: send TPS >= 0.5x, start >= 5x faster).

    .venv/bin/python benchmarks/bench_broker.py [--seconds 30] [--threads 16] [--body 1024]
        [--drain 2000] [--version 5]

The machine is shared: compare the rows of one run, not figures across runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.conformance.launcher import RealRocketMQ
from rmqtwin.fakes.pytest_plugin import start_subprocess


def rss_kib(pids: list[int]) -> int:
    """Resident set size of the processes, summed (from /proc)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


class PeakRss:
    """Samples RSS every 200 ms in a thread while the load runs."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_kib(self.pids()))
            self._stop.wait(0.2)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def measure(
    label: str,
    start: Callable[[], tuple[str, Callable[[], list[int]], Callable[[], None]]],
    args: argparse.Namespace,
) -> dict[str, Any]:
    client = JavaClient(args.version)
    began = time.monotonic()
    namesrv, pids, stop = start()
    ready_s = time.monotonic() - began
    try:
        time.sleep(2)
        idle = rss_kib(pids())
        topic = f"Bench_{label}_{os.getpid()}"
        with PeakRss(pids) as peak:
            summary = (
                client.benchmark_producer(
                    namesrv,
                    topic,
                    mode="sync",
                    threads=args.threads,
                    bodySize=args.body,
                    durationMs=int(args.seconds * 1000),
                    warmupMs=2000,
                )
                .check()
                .summary
            )
        drain_start = time.monotonic()
        drained = client.push_consumer(
            namesrv,
            topic,
            group=f"bench_{label}",
            expect=min(args.drain, int(summary["sent"])),
            timeoutMs=300_000,
            consumeThreads=16,
            pullBatchSize=32,
        )
        drain_s = time.monotonic() - drain_start
        consumed = int(drained.summary.get("consumed", 0))
    finally:
        stop()
    return {
        "target": label,
        "ready s": ready_s,
        "idle MiB": idle / 1024,
        "loaded MiB": peak.peak / 1024,
        "sent": summary["sent"],
        "fail": summary["failures"],
        "send tps": summary["tps"],
        "p50 ms": summary["latencyP50Ms"],
        "p99 ms": summary["latencyP99Ms"],
        "drained": consumed,
        "drain msg/s": consumed / drain_s if drain_s else 0.0,
    }


def start_twin(args: argparse.Namespace) -> tuple[str, Callable[[], list[int]], Callable[[], None]]:
    work = tempfile.mkdtemp(prefix="bench-rmqtwin-")
    twin = start_subprocess(work, broker_conf={"brokerClusterName": "rmqtwin"})
    assert twin.process is not None
    pid = twin.process.pid

    def stop() -> None:
        twin.stop()
        shutil.rmtree(work, ignore_errors=True)

    return twin.namesrv_addr, lambda: [pid], stop


def start_real(args: argparse.Namespace) -> tuple[str, Callable[[], list[int]], Callable[[], None]]:
    real = RealRocketMQ(args.version).start()

    def pids() -> list[int]:
        return [p.process.pid for p in real._processes()]

    return real.namesrv_addr, pids, lambda: real.stop(graceful=False)


COLUMNS = (
    "target",
    "ready s",
    "idle MiB",
    "loaded MiB",
    "sent",
    "fail",
    "send tps",
    "p50 ms",
    "p99 ms",
    "drained",
    "drain msg/s",
)


def fmt(value: object) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--drain", type=int, default=2000, help="messages the push consumer drains")
    parser.add_argument(
        "--version", default="5", help="real RocketMQ line and Java client (default 5 = 5.5.0)"
    )
    args = parser.parse_args(argv)
    rows = [
        measure("rmqtwin", lambda: start_twin(args), args),
        measure(f"real-{args.version}", lambda: start_real(args), args),
    ]
    widths = [max(len(c), *(len(fmt(r[c])) for r in rows)) for c in COLUMNS]
    print("  ".join(c.rjust(w) for c, w in zip(COLUMNS, widths, strict=True)))
    for row in rows:
        print("  ".join(fmt(row[c]).rjust(w) for c, w in zip(COLUMNS, widths, strict=True)))
    twin, real = rows
    print()
    print(f"send TPS    twin/real = {twin['send tps'] / max(real['send tps'], 1e-9):.2f}x  (target >= 0.5x)")
    print(
        f"start time  real/twin = {real['ready s'] / max(twin['ready s'], 1e-9):.2f}x faster  (target >= 5x)"
    )
    print(f"idle RSS    twin/real = {twin['idle MiB'] / max(real['idle MiB'], 1e-9):.2f}x")
    print(f"loaded RSS  twin/real = {twin['loaded MiB'] / max(real['loaded MiB'], 1e-9):.2f}x")
    print(f"drain rate  twin/real = {twin['drain msg/s'] / max(real['drain msg/s'], 1e-9):.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
