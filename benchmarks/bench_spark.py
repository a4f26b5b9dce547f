"""``rmqtwin spark ingest`` against ``rmqtwin capture stats`` on the same synthetic capture, one run.

Generates a capture of realistic traffic with ``rmqtwin.proxy.synth`` (producers, long-polling push
consumers, heartbeats, route queries), then times ``CaptureStats.of`` (one process, no Spark) and the
Spark ingest into all three tables on local[2] (session start timed apart), and the report. Prints
frames/s for both and their ratio, and the peak RSS of this process with the JVM and its Python workers.
Aim on a 2-core machine (issue 12): 1M frames ingested in <= 60 s, report <= 30 s; on the session's
defaults (local[2], 1 GiB driver).

    .venv/bin/python benchmarks/bench_spark.py [--frames 1000000] [--keep DIR]

The machine is shared: compare the rows of one run, not figures across runs.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from common import PeakRss, cpu_seconds, load_note, process_tree

INGEST_AIM_S = 60.0


REPORT_AIM_S = 30.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    parser.add_argument("--capture", metavar="FILE", help="ingest this capture (synthesized before) instead")
    args = parser.parse_args()
    work = Path(args.keep or tempfile.mkdtemp(prefix="bench_spark_"))
    try:
        from rmqtwin.proxy.stats import CaptureStats
        from rmqtwin.proxy.synth import synthesize

        capture = Path(args.capture) if args.capture else work / "bench.rmqcap"
        if not args.capture:
            t = time.monotonic()
            synth = synthesize(capture, frames=args.frames, seed=1)
            print(
                f"synth: {synth.frames} frames, {synth.connections} connections "
                f"in {time.monotonic() - t:.1f} s"
            )
        t, cpu = time.monotonic(), time.process_time()
        stats = CaptureStats.of(capture)
        stats_s = time.monotonic() - t
        print(
            f"capture stats: {stats.frames} frames in {stats_s:.1f} s = "
            f"{stats.frames / stats_s:,.0f} frames/s ({time.process_time() - cpu:.1f} CPU s)"
        )

        from rmqtwin.spark.ingest import ingest
        from rmqtwin.spark.report import write_report
        from rmqtwin.spark.session import spark_session

        t = time.monotonic()
        with PeakRss(process_tree) as rss:
            spark = spark_session("local[2]", app_name="bench_spark")
            print(f"spark session start: {time.monotonic() - t:.1f} s")
            t, cpu = time.monotonic(), cpu_seconds(process_tree(), children=True)
            result = ingest(spark, [str(capture)], work / "tables")
            ingest_s = time.monotonic() - t
            ingest_cpu = cpu_seconds(process_tree(), children=True) - cpu
            aim_s = INGEST_AIM_S * stats.frames / 1e6
            print(
                f"spark ingest: {result.rows} in {ingest_s:.1f} s = {stats.frames / ingest_s:,.0f} frames/s "
                f"into all three tables (aim: {stats.frames:,} frames in <= {aim_s:.0f} s "
                f"{'met' if ingest_s <= aim_s else 'MISSED'}); {ingest_cpu:.1f} CPU s of this process, "
                f"the JVM and its Python workers (on 2 idle cores at least {ingest_cpu / 2:.1f} s)"
            )
            t, cpu = time.monotonic(), cpu_seconds(process_tree(), children=True)
            write_report(spark, work / "tables", work / "report.html")
            report_s = time.monotonic() - t
            report_cpu = cpu_seconds(process_tree(), children=True) - cpu
            print(
                f"spark report: {report_s:.1f} s (aim <= {REPORT_AIM_S:.0f} s "
                f"{'met' if report_s <= REPORT_AIM_S else 'MISSED'}); {report_cpu:.1f} CPU s "
                f"(on 2 idle cores at least {report_cpu / 2:.1f} s)"
            )
            spark.stop()
        print(f"ratio ingest/stats frames/s: {stats_s / ingest_s:.2f}x")
        print(f"peak RSS (this process, the JVM, its Python workers): {rss.peak / 1024:,.0f} MiB")
        print(load_note())
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
