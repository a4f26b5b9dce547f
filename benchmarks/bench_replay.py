"""``rmqtwin spark replay --speed max`` of a 100k-send producer capture, beside the real Java producer.

Records N sends (two producer connections, pipelined, 1 KiB bodies) through ``rmqtwin proxy`` in front of
a twin, then for each target (a fresh twin, a fresh real 5.5.0) in the same run: the Spark replay at
``--speed max`` on each master (local[2] in this process; a standalone master with 2 one-core workers
started from PySpark's distribution, through the CLI as a user runs it; its send rate: answered sends
over the span from first issue to last answer), and the Java BenchmarkProducer (async, 4 threads)
against the same target. Prints one row per run and the ratio replay / Java producer per target and
master. On the twin it first replays a capture recorded at a steady ``--paced-rate`` (1,200 sends/s) at
``--speed 1`` on local[2] and prints the lateness p50/p99 (aim: p99 <= 5 ms at >= 1,000 requests/s).

    .venv/bin/python benchmarks/bench_replay.py [--sends 100000] [--targets twin,real5] [--seconds 10]
        [--masters local,standalone]

On a shared machine compare rows of one run only; the load average is printed beside each figure.
"""

from __future__ import annotations

import argparse
import gc
import os
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow.parquet as pq

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import create_request
from rmqtwin.codec.connection import RemotingConnection, ResponseReceived
from rmqtwin.codec.message import properties_to_string
from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.conformance.launcher import RealRocketMQ
from rmqtwin.fakes.pytest_plugin import start_subprocess
from rmqtwin.proxy.process import start_proxy
from rmqtwin.spark.replay.job import ReplayOptions, run_replay
from rmqtwin.spark.replay.report import Lateness
from rmqtwin.spark.replay.target import call
from rmqtwin.spark.standalone import StandaloneCluster

TOPIC = "BenchReplay"
QUEUES = 4


def create_topic(broker: str) -> None:
    fields = {
        "topic": TOPIC,
        "defaultTopic": "TBW102",
        "readQueueNums": str(QUEUES),
        "writeQueueNums": str(QUEUES),
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
    }
    answer = call(broker, create_request(RequestCode.UPDATE_AND_CREATE_TOPIC, fields))
    assert answer.code == ResponseCode.SUCCESS, answer


def produce(
    broker: str, first: int, count: int, body: bytes, *, window: int = 64, rate: float | None = None
) -> None:
    """``count`` SEND_MESSAGE_V2 on one connection, at most ``window`` unanswered (a Java async producer),
    flat out or ``rate`` sends per second."""
    host, _, port = broker.rpartition(":")
    conn = RemotingConnection(first_opaque=1)
    began = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sent = answered = 0
        while answered < count:
            now = time.monotonic()
            while sent < count and sent - answered < window and (rate is None or now >= began + sent / rate):
                i = first + sent
                props = {"UNIQ_KEY": f"7F00000100010000BEEF{i:012X}", "WAIT": "true", "TAGS": "bench"}
                ext = {
                    "a": "bench-pg",
                    "b": TOPIC,
                    "c": "TBW102",
                    "d": "4",
                    "e": str(i % QUEUES),
                    "f": "0",
                    "g": str(int(time.time() * 1000)),
                    "h": "0",
                    "i": properties_to_string(props, trailing_separator=False),
                    "j": "0",
                    "k": "false",
                    "m": "false",
                }
                conn.send_request(create_request(RequestCode.SEND_MESSAGE_V2, ext, body), now=0, timeout=1e9)
                sent += 1
            if out := conn.data_to_send():
                sock.sendall(out)
            wait = None
            if rate is not None and sent < count and sent - answered < window:
                wait = max(0.0, began + sent / rate - time.monotonic())
            if select.select([sock], [], [], wait)[0]:
                data = sock.recv(1 << 20)
                assert data, "the proxy closed the connection"
                answered += sum(isinstance(e, ResponseReceived) for e in conn.receive_data(data))


def record(capture: Path, sends: int, body: bytes, rate: float | None = None) -> None:
    """``sends`` through the proxy in front of a twin, on two producer connections (``rate`` in all)."""
    twin = start_subprocess(tempfile.mkdtemp(prefix="bench-replay-rec-"))
    try:
        create_topic(twin.broker_addr)
        proxy = start_proxy(twin.namesrv_addr, capture)
        try:
            route = call(proxy.namesrv, create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}))
            addrs = fastjson.loads(route.body or b"")["brokerDatas"][0]["brokerAddrs"]
            broker = addrs.get(0) or addrs["0"]
            half = sends // 2
            each = None if rate is None else rate / 2
            threads = [
                threading.Thread(target=produce, args=(broker, 0, half, body), kwargs={"rate": each}),
                threading.Thread(
                    target=produce, args=(broker, half, sends - half, body), kwargs={"rate": each}
                ),
            ]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        finally:
            proxy.stop()
    finally:
        twin.stop()


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.1f} {five:.1f} {fifteen:.1f}"


def stolen_ms() -> float:
    """The machine's steal time so far (/proc/stat, all CPUs): a virtual CPU the host ran something else
    on. A thread on a stolen CPU is neither running nor waiting for a core to the kernel: its lateness
    reads as asleep."""
    with open("/proc/stat") as stat:
        fields = stat.readline().split()
    return int(fields[8]) * 1000 / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else 0.0


def replay_rate(capture: Path, namesrv: str, out: Path, master: str | None) -> tuple[float, int, float]:
    """(answered sends per second, sends answered SUCCESS, job wall seconds); ``master`` None is local[2]
    in this process, a URL runs ``rmqtwin spark replay --master URL`` as a user would."""
    started = time.monotonic()
    if master is None:
        run_replay(
            ReplayOptions(input=str(capture), target=namesrv, out=str(out), speed=None),
            progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True),
        )
    else:
        argv = [sys.executable, "-m", "rmqtwin", "spark", "replay", str(capture), "--target", namesrv]
        proc = subprocess.run([*argv, "--speed", "max", "--out", str(out), "--master", master], check=False)
        assert proc.returncode in (0, 3), proc  # 3: answers diverged (send offsets of two producers)
    wall = time.monotonic() - started
    rows = pq.read_table(out / "requests").to_pylist()
    sends = [r for r in rows if r["code_name"] == "SEND_MESSAGE_V2" and r["replayed_code"] is not None]
    ok = sum(1 for r in sends if r["replayed_code"] == ResponseCode.SUCCESS)
    begin = min(r["actual_ms"] for r in sends)
    end = max(r["actual_ms"] + r["replayed_latency_ms"] for r in sends)
    return ok / ((end - begin) / 1000), ok, wall


def lateness(capture: Path, namesrv: str, out: Path) -> tuple[float, Lateness]:
    """(requests/s scheduled, lateness) of a ``--speed 1`` replay."""
    import pandas as pd

    from rmqtwin.spark.replay.report import lateness as lateness_of

    run_replay(
        ReplayOptions(input=str(capture), target=namesrv, out=str(out), speed=1.0),
        progress=lambda line: print(f"  {line}", file=sys.stderr, flush=True),
    )
    rows = pd.read_parquet(out / "requests")
    issued = rows.dropna(subset=["scheduled_ms"])
    span = (issued["scheduled_ms"].max() - issued["scheduled_ms"].min()) / 1000 or 1.0
    late = lateness_of(rows)
    assert late is not None
    answered = rows.dropna(subset=["recorded_latency_ms", "replayed_latency_ms"])
    print(
        f"  answer latency p50 recorded {answered['recorded_latency_ms'].median():.2f} ms, "
        f"replayed {answered['replayed_latency_ms'].median():.2f} ms",
        flush=True,
    )
    return len(issued) / span, late


def engine_lateness(capture: Path, namesrv: str) -> tuple[float, Lateness, str]:
    """(requests/s scheduled, lateness, what the loop spent) of a ``--speed 1`` replay by the engine in
    this process, without Spark: one loop replays every connection (a Spark task's loop replays its
    share), the collector's passes during the replay timed."""
    import pandas as pd

    from rmqtwin.spark.replay.engine import replay_connections, result_rows
    from rmqtwin.spark.replay.plan import load_plan
    from rmqtwin.spark.replay.report import lateness as lateness_of
    from rmqtwin.spark.replay.target import prepare_context
    from rmqtwin.spark.replay.translate import ReplayContext

    plan = load_plan(capture)
    ctx = ReplayContext(namesrv=namesrv, brokers={}, run_id="engine", speed=1.0)
    prepare_context(plan, ctx, {})
    collections: list[int] = []
    began: list[int] = []

    def timed(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            began.append(time.perf_counter_ns())
        elif began:
            collections.append(time.perf_counter_ns() - began.pop())

    with open("/proc/thread-self/schedstat", "rb") as stat:
        waited = int(stat.read().split()[1])
    cpu = time.thread_time_ns()
    gc.callbacks.append(timed)
    try:
        results, _, _ = replay_connections(plan.connections, ctx)
    finally:
        gc.callbacks.remove(timed)
    cpu = time.thread_time_ns() - cpu
    with open("/proc/thread-self/schedstat", "rb") as stat:
        waited = int(stat.read().split()[1]) - waited
    rows = pd.DataFrame(result_rows(results))
    issued = rows.dropna(subset=["scheduled_ms"])
    span = (issued["scheduled_ms"].max() - issued["scheduled_ms"].min()) / 1000 or 1.0
    late = lateness_of(rows)
    assert late is not None
    spent = (
        f"the loop's CPU {cpu / 1e6 / len(rows) * 1000:.0f} µs a request ({cpu / 1e9:.2f} s), "
        f"waited {waited / 1e9:.2f} s for a core; {len(collections)} collections in the call, "
        f"{sum(collections) / 1e6:.1f} ms, the longest {max(collections, default=0) / 1e6:.1f} ms "
        "(before the start and after the end: the collector is off while the loop runs)"
    )
    return len(issued) / span, late, spent


def lateness_line(where: str, rps: float, late: Lateness) -> str:
    tail = ""
    if late.tail is not None:
        busy, no_core, asleep = late.tail
        tail = (
            f"; its latest 1% (mean): busy {busy:.2f} ms, waiting for a core {no_core:.2f} ms, "
            f"asleep {asleep:.2f} ms"
        )
    return (
        f"lateness at --speed 1 {where}: {rps:,.0f} requests/s scheduled, "
        f"the replayer's own p50 {late.replayer[0]:.2f} ms, p99 {late.replayer[1]:.2f} ms "
        f"(aim: p99 <= 5 ms){tail}; issued - scheduled p50 {late.total[0]:.2f} ms, "
        f"p99 {late.total[1]:.2f} ms; held back by the target p50 {late.target[0]:.2f} ms, "
        f"p99 {late.target[1]:.2f} ms; {load()}"
    )


def java_rate(namesrv: str, client: JavaClient, seconds: float, body: int) -> float:
    result = client.benchmark_producer(
        namesrv,
        TOPIC,
        mode="async",
        threads=4,
        bodySize=body,
        durationMs=int(seconds * 1000),
        warmupMs=2000,
        inflight=32,
    ).check()
    return float(result.summary["tps"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sends", type=int, default=100_000)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--targets", default="twin,real5", help="twin, real5 (comma-separated)")
    parser.add_argument("--masters", default="local,standalone", help="local, standalone (comma-separated)")
    parser.add_argument("--seconds", type=float, default=10.0, help="Java producer's measured duration")
    parser.add_argument(
        "--paced-rate", type=float, default=1200.0, help="sends/s of the capture replayed at --speed 1"
    )
    parser.add_argument("--paced-seconds", type=float, default=10.0)
    parser.add_argument(
        "--warmup-sends",
        type=int,
        default=20_000,
        help="sends to each target before anything is measured (a fresh real broker's JIT is cold, a "
        "fresh twin's store files are new: whichever run came first was slowed by it)",
    )
    parser.add_argument("--no-max", action="store_true", help="only the --speed 1 lateness run")
    parser.add_argument(
        "--engine",
        action="store_true",
        help="after the --speed 1 replay on local[2], the same by the replay engine in this process "
        "without Spark (one loop for every connection), with its CPU time and collections",
    )
    parser.add_argument(
        "--capture", type=Path, help="replay this capture of the bench topic, recorded before"
    )
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench-replay-"))
    capture = args.capture or work / "sends.rmqcap"
    started = time.monotonic()
    if args.capture is None and not args.no_max:
        record(capture, args.sends, b"x" * args.body)
        print(
            f"recorded {args.sends} sends in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True
        )
    masters = [m for m in args.masters.split(",") if m]
    paced = work / "paced.rmqcap"
    if "twin" in args.targets and ("local" in masters or args.engine):
        record(paced, int(args.paced_rate * args.paced_seconds), b"x" * args.body, rate=args.paced_rate)
    cluster: StandaloneCluster | None = None
    if "standalone" in masters:
        cluster = StandaloneCluster(workers=2, work_dir=work / "standalone").start()
    rows: list[tuple[str, str, float, int, float, float]] = []
    try:
        for name in [t for t in args.targets.split(",") if t]:
            if name == "twin":
                twin = start_subprocess(str(work / "target-twin"))
                stop, namesrv, broker, client = (
                    twin.stop,
                    twin.namesrv_addr,
                    twin.broker_addr,
                    JavaClient("5"),
                )
            elif name == "real5":
                rmq = RealRocketMQ("5").start()
                stop, namesrv, broker, client = (
                    lambda r=rmq: r.stop(graceful=False),
                    rmq.namesrv_addr,
                    rmq.broker_addr,
                    JavaClient("5"),
                )
            else:
                parser.error(f"unknown target {name}")
            try:
                create_topic(broker)
                if args.warmup_sends:
                    began = time.monotonic()
                    produce(broker, 10_000_000, args.warmup_sends, b"w" * args.body)
                    took = time.monotonic() - began
                    print(
                        f"  warm-up: {args.warmup_sends} sends to {name} in {took:.1f} s; {load()}",
                        file=sys.stderr,
                        flush=True,
                    )
                if name == "twin" and "local" in masters:
                    stolen = stolen_ms()
                    rps, late = lateness(paced, namesrv, work / "out-lateness")
                    print(lateness_line(f"on {name}, local[2]", rps, late), flush=True)
                    print(f"  steal during it: {stolen_ms() - stolen:.0f} ms of the 2 CPUs", flush=True)
                if name == "twin" and args.engine:
                    stolen = stolen_ms()
                    rps, late, spent = engine_lateness(paced, namesrv)
                    spent += f"; steal during it {stolen_ms() - stolen:.0f} ms of the 2 CPUs"
                    print(lateness_line(f"on {name}, the engine alone", rps, late), flush=True)
                    print(f"  engine alone: {spent}", flush=True)
                replays: list[tuple[str, float, int, float]] = []
                if args.no_max:
                    continue
                for master in masters:
                    url = None if master == "local" else cluster.master_url if cluster else None
                    rate, ok, wall = replay_rate(capture, namesrv, work / f"out-{name}-{master}", url)
                    print(f"  replay on {name}, {master}: {rate:,.0f} sends/s; {load()}", file=sys.stderr)
                    replays.append((master, rate, ok, wall))
                java = java_rate(namesrv, client, args.seconds, args.body)
                print(f"  Java producer on {name}: {java:,.0f} msg/s; {load()}", file=sys.stderr, flush=True)
            finally:
                stop()
            rows += [(name, master, rate, ok, wall, java) for master, rate, ok, wall in replays]
    finally:
        if cluster is not None:
            cluster.stop()
    print(
        f"{'target':8} {'master':11} {'replay sends/s':>15} {'answered ok':>12} {'job wall s':>11} "
        f"{'java async tps':>15}"
    )
    for name, master, rate, ok, wall, java in rows:
        print(f"{name:8} {master:11} {rate:15,.0f} {ok:12,} {wall:11.1f} {java:15,.0f}")
    for name, master, rate, _, _, java in rows:
        where = "local[2]" if master == "local" else "standalone 2 workers"
        print(f"ratio {name}, {where}: replay --speed max / Java producer = {rate / java:.2f}x (aim >= 0.8x)")
    print(f"{load()} at the end (2 cores, shared)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
