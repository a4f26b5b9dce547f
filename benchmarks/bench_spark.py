"""``rmqtwin spark ingest`` against ``rmqtwin capture stats`` on the same synthetic capture, one run.

Generates a capture of realistic traffic with ``rmqtwin.proxy.synth`` (producers, long-polling push
consumers, heartbeats, route queries), then times ``CaptureStats.of`` (one process, no Spark) and the
Spark ingest into all three tables on local[2] (session start timed apart), and the report. Prints
frames/s for both and their ratio. Aim on a 2-core machine: 1M frames ingested in <= 60 s, report <= 30 s.

    .venv/bin/python benchmarks/bench_spark.py [--frames 1000000] [--keep DIR]

The machine is shared: compare the rows of one run, not figures across runs.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench_spark_"))
    try:
        from rmqtwin.proxy.stats import CaptureStats
        from rmqtwin.proxy.synth import synthesize

        capture = work / "bench.rmqcap"
        t = time.monotonic()
        synth = synthesize(capture, frames=args.frames, seed=1)
        print(
            f"synth: {synth.frames} frames, {synth.connections} connections in {time.monotonic() - t:.1f} s"
        )
        t = time.monotonic()
        stats = CaptureStats.of(capture)
        stats_s = time.monotonic() - t
        print(
            f"capture stats: {stats.frames} frames in {stats_s:.1f} s = "
            f"{stats.frames / stats_s:,.0f} frames/s"
        )

        from rmqtwin.spark.ingest import ingest
        from rmqtwin.spark.report import write_report
        from rmqtwin.spark.session import spark_session

        t = time.monotonic()
        spark = spark_session("local[2]", app_name="bench_spark")
        print(f"spark session start: {time.monotonic() - t:.1f} s")
        t = time.monotonic()
        result = ingest(spark, [str(capture)], work / "tables")
        ingest_s = time.monotonic() - t
        print(
            f"spark ingest: {result.rows} in {ingest_s:.1f} s = {stats.frames / ingest_s:,.0f} frames/s "
            "into all three tables"
        )
        t = time.monotonic()
        write_report(spark, work / "tables", work / "report.html")
        report_s = time.monotonic() - t
        print(f"spark report: {report_s:.1f} s")
        print(f"ratio ingest/stats frames/s: {stats_s / ingest_s:.2f}x")
        spark.stop()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
