"""The real Java producer's throughput and latency against real Apache RocketMQ (and any other target).

Runs ``conformance/java`` BenchmarkProducer (N threads, fixed body, sync or async with a bounded
window) against a fresh real broker per version, and against ``--namesrv`` targets given on the
command line (e.g. ``rmqtwin serve`` started separately), and prints one row per run side by side
with the ratio to the first row of the same mode.

    .venv/bin/python benchmarks/bench_java_producer.py [--versions 4.9,5] [--modes sync,async]
        [--threads 4] [--body 1024] [--seconds 10] [--namesrv LABEL=HOST:PORT ...]

The machine is shared: run it when it is quiet, and compare rows of one run, not across runs.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from common import print_table

from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.conformance.launcher import RealRocketMQ

COLUMNS = (
    "target",
    "mode",
    "threads",
    "body",
    "sent",
    "fail",
    "tps",
    "x first",
    "avg ms",
    "p50 ms",
    "p99 ms",
    "max ms",
)


def run_one(
    client: JavaClient, namesrv: str, topic: str, mode: str, args: argparse.Namespace
) -> dict[str, Any]:
    result = client.benchmark_producer(
        namesrv,
        topic,
        mode=mode,
        threads=args.threads,
        bodySize=args.body,
        durationMs=int(args.seconds * 1000),
        warmupMs=2000,
        inflight=args.inflight,
    ).check()
    return result.summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--versions", default="4.9,5", help="real RocketMQ lines to start (empty: none)")
    parser.add_argument("--modes", default="sync,async")
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--body", type=int, default=1024, help="body size in bytes")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured duration per run")
    parser.add_argument("--inflight", type=int, default=32, help="async window per thread")
    parser.add_argument(
        "--namesrv",
        action="append",
        default=[],
        metavar="LABEL=HOST:PORT",
        help="another target (repeatable)",
    )
    parser.add_argument("--client", default="4.9", help="Java client line used for --namesrv targets")
    args = parser.parse_args(argv)
    modes = [m for m in args.modes.split(",") if m]

    rows: list[dict[str, Any]] = []

    def record(label: str, summary: dict[str, Any]) -> None:
        row = {"target": label, **summary}
        rows.append(row)
        print(f"  {label} {row['mode']}: {row['tps']:,.0f} msg/s", file=sys.stderr, flush=True)

    for version in [v for v in args.versions.split(",") if v]:
        client = JavaClient(version)
        print(f"starting real RocketMQ {version} ...", file=sys.stderr, flush=True)
        with RealRocketMQ(version) as rmq:
            for mode in modes:
                label = f"real {rmq.version.server}"
                record(label, run_one(client, rmq.namesrv_addr, f"Bench_{mode}", mode, args))
    for target in args.namesrv:
        label, _, addr = target.rpartition("=")
        client = JavaClient(args.client)
        for mode in modes:
            record(label or addr, run_one(client, addr, f"Bench_{mode}", mode, args))

    first_tps: dict[str, float] = {}
    table: list[tuple[object, ...]] = []
    for row in rows:
        base = first_tps.setdefault(row["mode"], row["tps"] or 1.0)
        table.append(
            (
                row["target"],
                row["mode"],
                row["threads"],
                row["bodySize"],
                row["sent"],
                row["failures"],
                row["tps"],
                row["tps"] / base if base else 0.0,
                row["latencyAvgMs"],
                row["latencyP50Ms"],
                row["latencyP99Ms"],
                row["latencyMaxMs"],
            )
        )
    print_table(COLUMNS, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
