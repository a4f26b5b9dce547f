"""``rmqtwin spark …``: the PySpark jobs. Imports stay cheap here; pyspark loads inside the handlers."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    spark = subparsers.add_parser("spark", help="PySpark jobs over captures, pcaps and broker stores")
    sub = spark.add_subparsers(dest="spark_command", metavar="JOB", required=True)
    replay = sub.add_parser(
        "replay",
        help="replay a capture against a target and compare every answer with the recorded one",
        description=(
            "Each recorded client connection becomes a connection to the target (namesrv connections to "
            "NAMESRV_ADDR, broker connections to the target broker of the same name); requests go at their "
            "recorded offset divided by --speed, answers are compared with the recorded ones. Writes "
            "OUT/requests/*.parquet, OUT/summary.json and OUT/report.html."
        ),
    )
    replay.add_argument(
        "input",
        metavar="INPUT",
        help="a capture (rmqtwin proxy --capture FILE) or an ingested Parquet directory (spark ingest --raw)",
    )
    replay.add_argument("--target", required=True, metavar="NAMESRV_ADDR", help="the target's namesrv")
    replay.add_argument("--out", required=True, metavar="DIR")
    replay.add_argument("--speed", default="1", help="1, 10, any factor, or max (as fast as answered)")
    replay.add_argument("--scale", type=int, default=1, help="replay K copies of every connection")
    replay.add_argument(
        "--scale-topics",
        choices=("same", "suffixed"),
        default="same",
        help="--scale copies share the topics (same) or copy K replays topic T as T-K (suffixed)",
    )
    replay.add_argument("--duration", type=float, metavar="S", help="replay at most S seconds of schedule")
    replay.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="CODE|TOPIC|GROUP",
        help="replay only these (repeatable)",
    )
    names = replay.add_mutually_exclusive_group()
    names.add_argument("--topic-prefix", default="", metavar="P", help="replay topic T as PT")
    names.add_argument(
        "--rename-topic", action="append", default=[], metavar="A=B", help="replay topic A as B"
    )
    replay.add_argument(
        "--broker-map",
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="target of a recorded broker (by name, or by recorded HOST:PORT when no route answer names it)",
    )
    replay.add_argument("--master", help="Spark master URL (default local[2])")
    replay.add_argument("--new-ids", action="store_true", help="mint new UNIQ_KEYs for replayed sends")
    replay.add_argument("--access-key", help="re-sign requests that were signed (redacted in the capture)")
    replay.add_argument("--secret-key")
    replay.add_argument("--timeout", type=float, default=30.0, help="seconds an answer may take")
    replay.set_defaults(handler=_replay)
    ingest = sub.add_parser(
        "ingest", help="captures, pcaps and stores as the frames, exchanges and messages tables"
    )
    ingest.add_argument("inputs", nargs="+", metavar="INPUT", help="capture, pcap/pcapng or store directory")
    ingest.add_argument("--out", required=True, metavar="DIR")
    ingest.add_argument("--master", metavar="URL", help="Spark master (default local[2])")
    ingest.add_argument("--raw", action="store_true", help="keep every frame's bytes in frames.raw")
    ingest.add_argument("--strict", action="store_true", help="fail if any input is damaged")
    ingest.set_defaults(handler=_ingest)
    cds = sub.add_parser(
        "cds",
        help="build the driver JVM's class-data archive, so later jobs start faster (setup runs it)",
        description=(
            "Runs a small ingest and report with -XX:ArchiveClassesAtExit and keeps the archive under "
            "~/.cache/rmqtwin/spark-cds, keyed by the JVM and PySpark's jars; jobs started by rmqtwin map "
            "it when it is there. Does nothing when it is already built (--force: build again)."
        ),
    )
    cds.add_argument("--force", action="store_true", help="build even if the archive exists")
    cds.set_defaults(handler=_cds)
    report = sub.add_parser("report", help="one self-contained HTML page (plots, tables) of an ingested DIR")
    report.add_argument("dir", metavar="DIR")
    report.add_argument("--html", required=True, metavar="OUT.html")
    report.add_argument("--json", metavar="OUT.json", help="the same figures as JSON")
    report.add_argument("--from", dest="from_", metavar="T", help="start, ISO time (UTC unless given)")
    report.add_argument("--to", metavar="T", help="end, ISO time")
    report.add_argument("--master", metavar="URL", help="Spark master (default local[2])")
    report.set_defaults(handler=_report)


def _ingest(args: argparse.Namespace) -> int:
    from rmqtwin.spark.ingest import IngestError, ingest
    from rmqtwin.spark.session import spark_session

    spark = spark_session(args.master)
    try:
        ingest(spark, args.inputs, args.out, raw=args.raw, strict=args.strict)
    except IngestError as exc:
        print(f"rmqtwin spark ingest: {exc}", file=sys.stderr)
        return 1
    finally:
        spark.stop()
    return 0


def _replay(args: argparse.Namespace) -> int:
    from rmqtwin.proxy.capture import CaptureFormatError
    from rmqtwin.spark.replay.job import ReplayOptions, run_replay
    from rmqtwin.spark.replay.target import TargetError

    try:
        speed = None if args.speed == "max" else float(args.speed)
    except ValueError:
        print(f"rmqtwin spark replay: --speed {args.speed!r}: a number or max", file=sys.stderr)
        return 2
    renames = {}
    for entry in args.rename_topic:
        old, sep, new = entry.partition("=")
        if not sep or not old or not new:
            print(f"rmqtwin spark replay: --rename-topic {entry!r}: expected A=B", file=sys.stderr)
            return 2
        renames[old] = new
    options = ReplayOptions(
        input=args.input,
        target=args.target,
        out=args.out,
        speed=speed,
        scale=args.scale,
        suffix_topics=args.scale_topics == "suffixed",
        duration=args.duration,
        only=tuple(args.only),
        topic_prefix=args.topic_prefix,
        renames=renames,
        broker_map=list(args.broker_map),
        master=args.master,
        new_ids=args.new_ids,
        access_key=args.access_key,
        secret_key=args.secret_key,
        answer_timeout=args.timeout,
    )
    try:
        summary = run_replay(options, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except (TargetError, CaptureFormatError, FileNotFoundError) as exc:
        print(f"rmqtwin spark replay: {exc}", file=sys.stderr)
        return 1
    print(summary.verdict_line())
    print(f"report: {summary.out}/report.html")
    return 0 if summary.verdict_line().startswith("REPLAY SAME") else 3


def _cds(args: argparse.Namespace) -> int:
    from rmqtwin.spark.cds import archive_path, build

    path = archive_path()
    if path is None:
        print("spark cds: no java found (JAVA_HOME or PATH): nothing built", file=sys.stderr)
        return 1
    if path.is_file() and not args.force:
        print(f"spark cds: {path} is built")
        return 0
    print(f"spark cds: a training ingest and report (about a minute) for {path}", file=sys.stderr)
    seconds = build(path)
    print(f"spark cds: {path} built in {seconds:.0f} s ({path.stat().st_size / 2**20:.0f} MiB)")
    return 0


def _report(args: argparse.Namespace) -> int:
    from rmqtwin.spark.report import write_report
    from rmqtwin.spark.session import spark_session

    spark = spark_session(args.master, sources=False, short_job=True)  # reads Parquet only
    try:
        write_report(spark, args.dir, args.html, json_out=args.json, start=args.from_, end=args.to)
    finally:
        spark.stop()
    print(f"report: {args.html}")
    return 0
