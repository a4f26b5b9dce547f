"""``rmqtwin real``: run real Apache RocketMQ (the oracle) or fetch its jars; ``rmqtwin conformance run``.

``rmqtwin real start [--version 4.9|5] [--namesrv-port N] [--broker-port N] [--store DIR]``
runs a name server and broker(s) in the foreground, prints their addresses and stops them on
Ctrl-C. ``rmqtwin real fetch [--version 4.9|5|all]`` fills the jar cache and the cache of the sources
jars the code tables are checked against (what set-up runs).
"""

from __future__ import annotations

import argparse
from typing import Any

VERSION_CHOICES = ("4.9", "5")


def register(subparsers: Any) -> None:
    real = subparsers.add_parser("real", help="real Apache RocketMQ from Maven Central (the oracle)")
    commands = real.add_subparsers(dest="real_command", metavar="ACTION")

    start = commands.add_parser("start", help="run a real name server and broker in the foreground")
    start.add_argument("--version", default="4.9", help="4.9 (broker 4.9.7) or 5 (5.5.0); default 4.9")
    start.add_argument("--namesrv-port", type=int, default=None, help="default: a free port")
    start.add_argument(
        "--broker-port",
        type=int,
        default=None,
        help="listenPort (also uses port-2 and port+1); default: free",
    )
    start.add_argument(
        "--store", default=None, help="storePathRootDir (kept afterwards); default: a temp dir"
    )
    start.add_argument("--brokers", type=int, default=1, help="number of master brokers in the cluster")
    start.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="broker.conf override, repeatable (e.g. --set mappedFileSizeCommitLog=1073741824)",
    )
    start.set_defaults(handler=_start)

    fetch = commands.add_parser(
        "fetch", help="fetch the namesrv/broker/tools jars (and the code tables' sources jars) into the cache"
    )
    fetch.add_argument("--version", default="all", help="4.9, 5 or all (default)")
    fetch.set_defaults(handler=_fetch)

    real.set_defaults(handler=lambda args: real.print_help() or 2)

    conformance = subparsers.add_parser(
        "conformance", help="the scenario catalog against brokers, compared with a reference"
    )
    actions = conformance.add_subparsers(dest="conformance_command", metavar="ACTION")
    run = actions.add_parser(
        "run",
        help="run the catalog with the real Java client; report.html, report.json, junit.xml",
        description="Runs every scenario on the reference twice and on each other target once, "
        "compares them (values the two reference runs disagree on are noise) and exits 1 on a difference.",
    )
    run.add_argument(
        "--targets",
        default="twin,real-5",
        help="comma-separated: twin, real-5, real-4.9, ns=HOST:PORT (default twin,real-5)",
    )
    run.add_argument(
        "--reference", default=None, help="the target others are compared with (default: the first)"
    )
    run.add_argument(
        "--only", default=None, metavar="PATTERN", help="scenarios whose name matches this regex"
    )
    run.add_argument(
        "--client", default=None, choices=VERSION_CHOICES, help="Java client line (default: the reference's)"
    )
    run.add_argument(
        "--out", default="conformance-report", help="report directory (default ./conformance-report)"
    )
    run.set_defaults(handler=_conformance_run)
    coverage = actions.add_parser(
        "coverage", help="write the coverage matrix (request codes, broker.conf keys) to docs/coverage.md"
    )
    coverage.add_argument("--out", default=None, help="default: docs/coverage.md of this checkout")
    coverage.set_defaults(handler=_conformance_coverage)
    conformance.set_defaults(handler=lambda args: conformance.print_help() or 2)


def _parse_overrides(items: list[str]) -> dict[str, object]:
    overrides: dict[str, object] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SystemExit(f"--set wants KEY=VALUE, got {item!r}")
        overrides[key.strip()] = value.strip()
    return overrides


def _start(args: argparse.Namespace) -> int:
    import signal
    import threading

    from rmqtwin.conformance.launcher import RealRocketMQ

    rmq = RealRocketMQ(
        args.version,
        store_dir=args.store,
        brokers=args.brokers,
        namesrv_port=args.namesrv_port,
        broker_port=args.broker_port,
        broker_conf_overrides=_parse_overrides(args.set),
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print(f"starting Apache RocketMQ {rmq.version.server} ...", flush=True)
    try:
        rmq.start()
    except KeyboardInterrupt:
        return 130
    try:
        print(rmq.describe(), flush=True)
        print(f"NAMESRV_ADDR={rmq.namesrv_addr}", flush=True)
        print("Ctrl-C stops it.", flush=True)
        while not stop.wait(1.0):
            if not rmq.running:
                print("a RocketMQ process exited:\n" + rmq.log_tail(), flush=True)
                return 1
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping ...", flush=True)
        rmq.stop()
    return 0


def _fetch(args: argparse.Namespace) -> int:
    from rmqtwin.conformance.launcher import main_fetch

    versions = list(VERSION_CHOICES) if args.version == "all" else [args.version]
    return main_fetch(versions)


def _conformance_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rmqtwin.conformance.runner import main_run

    names = [name.strip() for name in args.targets.split(",") if name.strip()]
    reference = args.reference or names[0]
    return main_run(names, reference, args.only, args.client, Path(args.out))


def _conformance_coverage(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rmqtwin.conformance.coverage import DOCS_COVERAGE, main_coverage

    return main_coverage(Path(args.out) if args.out else DOCS_COVERAGE)
