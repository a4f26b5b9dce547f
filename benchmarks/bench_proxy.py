"""Recording proxy overhead: the Java benchmark producer directly against real RocketMQ and through
``rmqtwin proxy --capture``, side by side in one run.

Prints TPS, p50/p99 latency, the ratios, the proxy's peak RSS, the capture rate during the run,
and the capture writer's own ceiling (records packed and written as fast as one thread can).

    .venv/bin/python benchmarks/bench_proxy.py [--version 4.9|5] [--threads 16] [--body 1024]
        [--seconds 20] [--rounds 2] [--profile DIR] [--json FILE] [--rules-in-process]
        [--metrics-in-process] [--metrics-rounds N]

Rounds alternate direct and proxied runs so that a noisy neighbour hurts both alike.
Targets (issue 17): proxied TPS >= 0.95x direct, p50 added <= 0.1 ms, proxy CPU <= 15 µs per message.
Issue 16, against the forward-only proxy of the same round: with --metrics-port (scraped each round)
TPS >= 0.97x; with fault rules that never match (5 on requests, 5 on responses, as a test leaves
them for other topics) rule matching <= 2 µs per frame, both as the proxy's CPU per frame in the run and
in process (the session with and without the rules, frames fed in memory). ``--metrics-rounds N``
runs only the forward-only and the metrics proxies, with a second forward-only proxy as the control
(what two identical proxies differ by), rotated for N rounds; ``--metrics-in-process``
only the metrics hook's cost in process (the session with and without it, process CPU per message).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

from common import (
    PeakRss,
    Profile,
    alternated,
    by_round,
    cpu_seconds,
    machine_cpu_seconds,
    per_round,
    profile_top,
    rss_kib,
    write_figures,
)


def capture_bytes(capture: Path) -> int:
    from rmqtwin.proxy.capture import segment_paths

    return sum(p.stat().st_size for p in segment_paths(capture))


def writer_ceiling(seconds: float = 3.0, body: int = 1024) -> tuple[float, float]:
    """(MB/s, records/s) of frame_record + pack + write on one thread, to a temp file."""
    from rmqtwin.proxy.capture import CaptureWriter, Endpoint, frame_record, pack_record

    header = (
        b'{"code":310,"extFields":{"a":"bench_group","b":"BenchTopic","c":"TBW102","d":"4","e":"0","f":"0",'
        b'"g":"1700000000000","h":"0","i":"UNIQ_KEY\\u0001ABCDEF\\u0002WAIT\\u0001true\\u0002","j":"0",'
        b'"k":"false","m":"false"},"flag":0,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON",'
        b'"version":409}'
    )
    frame = (
        (4 + len(header) + body).to_bytes(4, "big") + len(header).to_bytes(4, "big") + header + b"x" * body
    )
    c, s = Endpoint("127.0.0.1", 50000), Endpoint("127.0.0.1", 10911)
    with tempfile.TemporaryDirectory() as tmp:
        writer = CaptureWriter(Path(tmp) / "w.rmqcap")
        n = 0
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            for _ in range(1000):
                rec = frame_record(
                    direction=0, mono_ns=n, wall_ns=n, conn_id=1, client=c, server=s, frame=frame
                )
                writer.write_packed(pack_record(rec))
                n += 1
        writer.close()
        elapsed = time.perf_counter() - started
        return writer.bytes_written / elapsed / 1e6, n / elapsed


IDLE_RULES: list[dict[str, object]] = [
    {"effect": "answer", "codes": ["SEND_MESSAGE_V2"], "topic": "NotBenched"},
    {"effect": "drop", "codes": ["PULL_MESSAGE"], "topic": "NotBenched"},
    {"effect": "latency", "ms": 1, "codes": ["SEND_MESSAGE_V2"], "topic": "NotBenched"},
    {"effect": "reset", "codes": ["SEND_MESSAGE_V2"], "group": "not_benched"},
    {"effect": "answer", "codes": ["HEART_BEAT"], "client": "192.0.2.1"},
    {"effect": "drop", "direction": "response", "codes": ["SEND_MESSAGE_V2"], "topic": "NotBenched"},
    {"effect": "duplicate", "codes": ["PULL_MESSAGE"], "topic": "NotBenched"},
    {"effect": "corrupt", "codes": ["PULL_MESSAGE"], "group": "not_benched"},
    {
        "effect": "latency",
        "ms": 1,
        "direction": "response",
        "codes": ["SEND_MESSAGE_V2"],
        "topic": "NotBenched",
    },
    {"effect": "answer", "direction": "response", "broker": "192.0.2.1"},
]
"""Ten rules, none of which matches the benchmark's sends: 5 on requests, 5 on responses."""


SEND_PAIRS_BROKER = "10.0.0.1:10911"
"""The broker :func:`send_pairs`' answers name in their offset msgIds."""


def send_pairs(body: int) -> list[tuple[bytes, bytes]]:
    """1,000 SEND_MESSAGE_V2 requests of ``body`` bytes and their answers, encoded once, for the
    in-process lines."""
    from rmqtwin.codec.codes import RequestCode
    from rmqtwin.codec.command import create_request, create_response, encode_command

    ext = {
        "a": "bench_group", "b": "BenchTopic", "c": "TBW102", "d": "4", "e": "0", "f": "0",
        "g": "1700000000000", "h": "0", "i": "UNIQ_KEY\x01ABCDEF\x02WAIT\x01true\x02", "j": "0",
        "k": "false", "m": "false",
    }  # fmt: skip
    pairs = []
    for opaque in range(1000):
        request = create_request(RequestCode.SEND_MESSAGE_V2, ext, b"x" * body, opaque=opaque)
        msg_id = f"0A000001{10911:08X}{opaque * 1300:016X}"  # MessageDecoder.createMessageId
        fields = {"msgId": msg_id, "queueId": "1", "queueOffset": str(opaque)}
        pairs.append(
            (encode_command(request), encode_command(create_response(request, 0, ext_fields=fields)))
        )
    return pairs


def rule_matching_ns(seconds: float = 12.0, body: int = 1024) -> tuple[float, float]:
    """(ns per frame without rules, ns added per frame by IDLE_RULES): 1,000 sends and their answers,
    encoded once, fed to a proxy session with the fault hook as the proxy's adapter feeds them."""
    from rmqtwin.proxy.faults import FaultEngine, FaultHook
    from rmqtwin.proxy.session import ProxySession

    pairs = send_pairs(body)

    def per_frame(engine: FaultEngine) -> float:
        """CPU ns per frame (process time: what other processes take of the CPU is not counted)."""
        session = ProxySession([FaultHook(engine, "127.0.0.1:50000", "127.0.0.1:10911")])
        frames = 0
        started, cpu = time.perf_counter(), time.process_time_ns()
        while time.perf_counter() - started < seconds / 10:
            for request, answer in pairs:
                session.from_client(request)
                session.from_upstream(answer)
            frames += 2 * len(pairs)
        return (time.process_time_ns() - cpu) / frames

    ruled = FaultEngine()
    for rule in IDLE_RULES:
        ruled.add(rule)
    # alternated, the best of ten each: a neighbour's burst hurts both alike and the best is the least hurt
    none, with_rules = [], []
    for _ in range(10):
        none.append(per_frame(FaultEngine()))
        with_rules.append(per_frame(ruled))
    return min(none), min(with_rules) - min(none)


def metrics_cost_ns(rounds: int = 15, body: int = 1024) -> tuple[float, float]:
    """(ns per message through the forward-only session, ns per message added by the metrics hook):
    1,000 sends and their answers, encoded once, fed to a session as the forward-only proxy's broker
    connection has it (each answer's msgId rewritten to name the proxy's listener) with and without
    the metrics hook. Process CPU, the two alternated, the median of the rounds' differences."""
    from rmqtwin.proxy.metrics import MetricsHook, ProxyMetrics
    from rmqtwin.proxy.rewrite import AddressRewriter
    from rmqtwin.proxy.session import BrokerRewriteHook, Hook, ProxySession

    pairs = send_pairs(body)
    metrics = ProxyMetrics(list, lambda: 0, lambda: None)
    rewriter = AddressRewriter(lambda addr, kind: None, {SEND_PAIRS_BROKER: "127.0.0.1:10911"}.get)

    def per_message(metered: bool) -> float:
        hooks: list[Hook] = [BrokerRewriteHook(rewriter.rewrite_broker_frame)]
        if metered:
            hooks.append(MetricsHook(metrics))
        session = ProxySession(hooks)
        cpu = time.process_time_ns()
        for _ in range(3):
            for request, answer in pairs:
                session.from_client(request)
                session.from_upstream(answer)
        return (time.process_time_ns() - cpu) / (3 * len(pairs))

    pairs = alternated(per_message, rounds)
    return statistics.median(plain for plain, _ in pairs), statistics.median(m - p for p, m in pairs)


def metrics_line(forward_us: float | None = None) -> str:
    """The in-process metrics line, with the share of the forward-only proxy's CPU per message when
    the run measured it."""
    bare_ns, added_ns = metrics_cost_ns()
    share = (
        f" = {added_ns / 1000 / forward_us:.1%} of the forward-only proxy's {forward_us:.0f} us"
        if forward_us
        else ""
    )
    return (
        f"metrics in process (load {os.getloadavg()[0]:.1f}): {added_ns / 1000:+.2f} us per message "
        f"(request + answer; {added_ns / 2000:+.2f} us per frame){share}; the forward-only session "
        f"alone {bare_ns / 1000:.2f} us per message"
    )


def scrape(url: str) -> int:
    """One Prometheus scrape (what a 15 s scrape interval costs the proxy); the bytes it returned."""
    import urllib.request

    with urllib.request.urlopen(url, timeout=10) as answer:
        return len(answer.read())


def bench(client: Any, namesrv: str, args: argparse.Namespace, topic: str) -> dict[str, Any]:
    result = client.benchmark_producer(
        namesrv,
        topic,
        threads=args.threads,
        bodySize=args.body,
        mode="sync",
        durationMs=int(args.seconds * 1000),
        warmupMs=3000,
    )
    summary = result.summary
    if summary.get("failures"):
        print(f"  note: {summary['failures']} failed sends, first error: {summary.get('firstError')}")
    return summary


def metrics_rounds(args: argparse.Namespace) -> int:
    """Issue 16's proxy metrics cost alone: the forward-only proxy, a second forward-only proxy (the
    control: what two identical proxies differ by on this machine) and the same proxy with
    --metrics-port (scraped after each of its runs), in front of one real RocketMQ, their order rotated
    from round to round, paired by round; then the in-process line."""
    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ
    from rmqtwin.proxy.process import start_proxy

    client = JavaClient(args.version)
    names = ("forward-only", "control", "metrics")
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in names}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp, RealRocketMQ(args.version) as rmq:
        proxies = {
            "forward-only": start_proxy(rmq.namesrv_addr, Path(tmp) / "plain.rmqcap", record=False),
            "control": start_proxy(rmq.namesrv_addr, Path(tmp) / "control.rmqcap", record=False),
            "metrics": start_proxy(
                rmq.namesrv_addr, Path(tmp) / "metered", "--metrics-port", "0", record=False
            ),
        }
        metrics_url = proxies["metrics"].metrics_url
        assert metrics_url is not None
        try:
            bench(client, rmq.namesrv_addr, args, "BenchWarmup")  # creates the topic route, warms the broker
            for i in range(args.metrics_rounds):
                order = names[i % 3 :] + names[: i % 3]
                for name in order[::-1] if (i // 3) % 2 else order:
                    pid = proxies[name].process.pid
                    cpu0, (busy0, idle0) = cpu_seconds([pid]), machine_cpu_seconds()
                    summary = bench(client, proxies[name].namesrv, args, f"Bench{name.title()}{i}")
                    if name == "metrics":
                        scrape(metrics_url)
                    busy1, idle1 = machine_cpu_seconds()
                    # all sends of the run, warm-up included, over the CPU time meanwhile
                    sent = max(summary["sent"] * (1 + 3.0 / (summary["durationMs"] / 1000)), 1)
                    cpu_us = (cpu_seconds([pid]) - cpu0) / sent * 1e6
                    runs[name].append(
                        {
                            "tps": float(summary["tps"]),
                            "cpu_us": cpu_us,
                            "machine_us": (busy1 - busy0) / sent * 1e6,
                            "busy": (busy1 - busy0) / max(busy1 - busy0 + idle1 - idle0, 1e-9),
                        }
                    )
                print(
                    f"round {i + 1} (proxy CPU per message): "
                    + ", ".join(
                        f"{n} {runs[n][-1]['tps']:.0f} TPS, {runs[n][-1]['cpu_us']:.1f} us CPU per message"
                        for n in names
                    ),
                    flush=True,
                )
        finally:
            for proxy in proxies.values():
                proxy.stop(timeout=60)
    ratios = per_round(runs["forward-only"], runs["metrics"], "tps")
    control = per_round(runs["forward-only"], runs["control"], "tps")
    added = per_round(runs["forward-only"], runs["metrics"], "cpu_us", added=True)
    forward = statistics.median(run["cpu_us"] for run in runs["forward-only"])
    machine = statistics.median(run["machine_us"] for run in runs["forward-only"])
    busy = statistics.median(run["busy"] for run in runs["forward-only"])
    ratio = statistics.median(ratios)
    print(
        f"Java benchmark producer, RocketMQ {args.version}, sync, {args.threads} threads, {args.body} B "
        f"bodies, {args.seconds:.0f} s x {args.metrics_rounds} rounds; load average {load_before:.1f} -> "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        "metrics (forward-only + --metrics-port, scraped each run) vs forward-only, paired by round: TPS "
        f"ratio {by_round(ratios, '.3f', unit='x')}; proxy CPU per message "
        + by_round(added, "+.1f", unit=" us", note=f", forward-only {forward:.1f} us")
    )
    print(
        "control (a second forward-only proxy) vs forward-only, paired by round: TPS ratio "
        + by_round(control, ".3f", unit="x", note=": what two identical proxies differ by here")
    )
    print(
        f"the machine's CPU per message in the forward-only runs: {machine:.0f} us (all processes, the "
        f"producer JVM's start included; the CPUs {busy:.0%} busy): the metrics' added proxy CPU is "
        f"{statistics.median(added) / machine:.1%} of it, the TPS a CPU-bound machine loses to them"
    )
    print(metrics_line(forward))
    print(f"target (issue 16): metrics TPS >= 0.97x forward-only: {'met' if ratio >= 0.97 else 'MISSED'}")
    return 0


CHAINS = {"metrics outer": (True, False), "metrics inner": (False, True), "control": (False, False)}
"""Two proxies in a row (the producer, the outer proxy, the inner proxy, the broker): which of them
runs with --metrics-port."""


def metrics_chained(args: argparse.Namespace) -> int:
    """Issue 16's proxy metrics cost with both proxies on the same messages: two proxies in a row, one
    with --metrics-port, the other forward-only, each doing the same forwarding and msgId rewriting;
    what the metered one spends more per message is the metrics' cost, measured within one run (what
    moves the machine between runs moves both alike). The metered proxy stands first in one chain and
    second in the other, and the mean of the two differences cancels what standing first or second
    costs; a third chain of two forward-only proxies shows that position effect directly."""
    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ
    from rmqtwin.proxy.process import ProxyProcess, start_proxy

    client = JavaClient(args.version)
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in (*CHAINS, "one proxy")}
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp, RealRocketMQ(args.version) as rmq:
        chains: dict[str, tuple[ProxyProcess, ProxyProcess]] = {}
        try:
            for n, (name, (outer_metered, inner_metered)) in enumerate(CHAINS.items()):
                metered = ("--metrics-port", "0")
                inner = start_proxy(
                    rmq.namesrv_addr,
                    Path(tmp) / f"inner{n}",
                    *(metered if inner_metered else ()),
                    record=False,
                )
                chains[name] = (
                    start_proxy(
                        inner.namesrv,
                        Path(tmp) / f"outer{n}",
                        *(metered if outer_metered else ()),
                        record=False,
                    ),
                    inner,
                )
            bench(client, rmq.namesrv_addr, args, "BenchWarmup")  # creates the topic route, warms the broker
            # "one proxy": the control chain's second proxy alone, for the machine's CPU per message
            names = [*CHAINS, "one proxy"]
            chains["one proxy"] = (chains["control"][1], chains["control"][1])
            for i in range(args.metrics_chained):
                order = names[i % 4 :] + names[: i % 4]
                for name in order[::-1] if (i // 4) % 2 else order:
                    outer, inner = chains[name]
                    pids = (outer.process.pid, inner.process.pid)
                    cpu0 = [cpu_seconds([pid]) for pid in pids]
                    busy0, _ = machine_cpu_seconds()
                    summary = bench(client, outer.namesrv, args, f"Chain{name.title().replace(' ', '')}{i}")
                    for proxy in (outer, inner):
                        if proxy.metrics_url is not None:
                            scrape(proxy.metrics_url)
                    busy1, _ = machine_cpu_seconds()
                    sent = max(summary["sent"] * (1 + 3.0 / (summary["durationMs"] / 1000)), 1)
                    outer_us, inner_us = (
                        (cpu_seconds([pid]) - c) / sent * 1e6 for pid, c in zip(pids, cpu0, strict=True)
                    )
                    rows[name].append(
                        {"outer": outer_us, "inner": inner_us, "machine": (busy1 - busy0) / sent * 1e6}
                    )
                print(
                    f"round {i + 1} (proxy CPU per message): "
                    + ", ".join(
                        f"{n}: outer {rows[n][-1]['outer']:.1f} us, inner {rows[n][-1]['inner']:.1f} us"
                        for n in CHAINS
                    )
                    + f"; one proxy {rows['one proxy'][-1]['inner']:.1f} us, the machine "
                    + f"{rows['one proxy'][-1]['machine']:.0f} us",
                    flush=True,
                )
        finally:
            for proxy in {p.process.pid: p for pair in chains.values() for p in pair}.values():
                proxy.stop(timeout=60)
    # per round: the metered proxy's CPU per message minus the forward-only one's in the same run
    outer_metered = [r["outer"] - r["inner"] for r in rows["metrics outer"]]
    inner_metered = [r["inner"] - r["outer"] for r in rows["metrics inner"]]
    added = [(a + b) / 2 for a, b in zip(outer_metered, inner_metered, strict=True)]
    position = [(a - b) / 2 for a, b in zip(outer_metered, inner_metered, strict=True)]
    control = [r["outer"] - r["inner"] for r in rows["control"]]
    forward = statistics.median(r["inner"] for r in rows["one proxy"])
    machine = statistics.median(r["machine"] for r in rows["one proxy"])
    share = statistics.median(added) / machine
    print(
        f"Java benchmark producer, RocketMQ {args.version}, sync, {args.threads} threads, {args.body} B "
        f"bodies, {args.seconds:.0f} s x {args.metrics_chained} rounds, two proxies in a row; load average "
        f"{load_before:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        "metrics' added proxy CPU per message (the metered proxy less the forward-only one on the same "
        "messages, the mean of it standing first and second): "
        + by_round(added, "+.2f", unit=" us", note=f", forward-only proxy {forward:.1f} us")
    )
    print(
        "position (what standing first costs more than second): from the metered chains "
        + by_round(position, "+.2f", unit=" us")
        + "; the control chain of two forward-only proxies "
        + by_round(control, "+.2f", unit=" us")
    )
    print(
        f"the machine's CPU per message with one forward-only proxy: {machine:.0f} us (all processes, the "
        f"producer JVM's start included): the metrics' added proxy CPU is {share:.1%} of it, the TPS a "
        "CPU-bound machine loses to them"
    )
    print(metrics_line(forward))
    verdict = "met" if share <= 0.03 else "MISSED"
    print(f"target (issue 16): metrics cost <= 3% of the machine's CPU per message: {verdict}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", default="4.9")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--body", type=int, default=1024)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", help="py-spy the capturing proxy in its runs; raw profiles go here")
    parser.add_argument("--json", help="write the figures here (for run_all.py)")
    parser.add_argument(
        "--rules-in-process", action="store_true", help="only the in-process rule-matching line (no Java)"
    )
    parser.add_argument(
        "--metrics-in-process", action="store_true", help="only the in-process metrics line (no Java)"
    )
    parser.add_argument(
        "--metrics-rounds",
        type=int,
        default=0,
        metavar="N",
        help="only the metrics cost: N rounds of the forward-only proxy and the same with --metrics-port",
    )
    parser.add_argument(
        "--metrics-chained",
        type=int,
        default=0,
        metavar="N",
        help="only the metrics cost, two proxies in a row (one metered) on the same messages: N rounds",
    )
    args = parser.parse_args()
    if args.metrics_chained:
        return metrics_chained(args)
    if args.metrics_in_process:
        print(metrics_line())
        return 0
    if args.metrics_rounds:
        return metrics_rounds(args)
    if args.rules_in_process:
        none_ns, rule_ns = rule_matching_ns()
        print(
            f"fault rules in process (load {os.getloadavg()[0]:.1f}): {none_ns / 1000:.2f} us per frame "
            f"through the session without rules, {rule_ns / 1000:+.2f} us per frame with the 10 idle "
            f"rules (target <= 2 us: {'met' if rule_ns <= 2000 else 'MISSED'})"
        )
        return 0

    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ
    from rmqtwin.fakes.pytest_plugin import TwinFaultControl
    from rmqtwin.proxy.process import start_proxy

    client = JavaClient(args.version)
    runs: dict[str, list[dict[str, Any]]] = {
        "direct": [],
        "proxy": [],
        "forward-only": [],
        "metrics": [],
        "rules": [],
    }
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-proxy-") as tmp, RealRocketMQ(args.version) as rmq:
        capture = Path(tmp) / "bench.rmqcap"
        proxy = start_proxy(rmq.namesrv_addr, capture)
        plain = start_proxy(rmq.namesrv_addr, Path(tmp) / "plain.rmqcap", record=False)
        metered = start_proxy(rmq.namesrv_addr, Path(tmp) / "metered", "--metrics-port", "0", record=False)
        ruled = start_proxy(rmq.namesrv_addr, Path(tmp) / "ruled", record=False, faults=True)
        for rule in IDLE_RULES:
            TwinFaultControl(ruled.faults_url).add(rule)
        assert metered.metrics_url is not None
        rss = PeakRss(lambda: [proxy.process.pid])
        rss.__enter__()
        idle_rss = rss_kib([proxy.process.pid])
        namesrv = {
            "direct": rmq.namesrv_addr,
            "proxy": proxy.namesrv,
            "forward-only": plain.namesrv,
            "metrics": metered.namesrv,
            "rules": ruled.namesrv,
        }
        pids = {
            "proxy": proxy.process.pid,
            "forward-only": plain.process.pid,
            "metrics": metered.process.pid,
            "rules": ruled.process.pid,
        }
        cpu_us: dict[str, list[float]] = {name: [] for name in pids}
        scraped = 0
        recorded_seconds = 0.0
        recorded_bytes = 0
        try:
            bench(client, rmq.namesrv_addr, args, "BenchWarmup")  # creates the topic route, warms the broker
            for i in range(args.rounds):
                before = capture_bytes(capture)
                names = list(runs)
                shift = i % len(names)  # rotate the order, so no configuration always runs first
                for name in names[shift:] + names[:shift]:
                    runs_of = runs[name]
                    pid = pids.get(name)
                    cpu0 = cpu_seconds([pid]) if pid else 0.0
                    profile: AbstractContextManager[object] = (
                        Profile(pid, Path(args.profile) / f"proxy-capture-{i}.txt")
                        if args.profile and name == "proxy"
                        else nullcontext()
                    )
                    with profile:
                        runs_of.append(bench(client, namesrv[name], args, f"Bench{name.title()}{i}"))
                    if name == "metrics":  # what Prometheus' scrape costs, once per run
                        scraped = scrape(metered.metrics_url)
                    if isinstance(profile, Profile):
                        print(
                            "\n".join(
                                [profile.skipped or ""] if profile.skipped else profile_top(profile.path)
                            )
                        )
                    if pid:
                        # all sends of the run, warm-up included, over the proxy's CPU time meanwhile
                        sent = runs_of[-1]["sent"] * (1 + 3.0 / (runs_of[-1]["durationMs"] / 1000))
                        cpu_us[name].append((cpu_seconds([pid]) - cpu0) / max(sent, 1) * 1e6)
                recorded = capture_bytes(capture) - before
                recorded_bytes += recorded
                recorded_seconds += runs["proxy"][-1]["durationMs"] / 1000 + 3.0  # measured run + warm-up
                tps = ", ".join(f"{name} {r[-1]['tps']:.0f} TPS" for name, r in runs.items())
                print(f"round {i + 1}: {tps}, capture +{recorded / 1e6:.1f} MB", flush=True)
        finally:
            rss.__exit__()
            proxy.stop(timeout=60)
            plain.stop(timeout=60)
            metered.stop(timeout=60)
            ruled.stop(timeout=60)
        total_capture = capture_bytes(capture)
    load_after = os.getloadavg()[0]

    def med(name: str, key: str) -> float:
        return statistics.median(float(r[key]) for r in runs[name])

    mb_s, rec_s = writer_ceiling()
    print()
    print(
        f"Java benchmark producer, RocketMQ {args.version}, sync, {args.threads} threads, "
        f"{args.body} B bodies, {args.seconds:.0f} s x {args.rounds} rounds (medians); "
        f"load average {load_before:.1f} -> {load_after:.1f} on {os.cpu_count()} CPUs"
    )
    print(
        f"{'':20}{'direct':>10}{'proxy+capture':>15}{'ratio/delta':>13}"
        f"{'forward only':>14}{'ratio/delta':>13}"
    )
    d_tps = med("direct", "tps")
    row = [f"{'TPS':20}{d_tps:>10.0f}"]
    for name in ("proxy", "forward-only"):
        tps = med(name, "tps")
        row.append(f"{tps:>{15 if name == 'proxy' else 14}.0f}{tps / d_tps:>12.2f}x")
    print("".join(row))
    for label, key in (("p50 latency (ms)", "latencyP50Ms"), ("p99 latency (ms)", "latencyP99Ms")):
        base = med("direct", key)
        row = [f"{label:20}{base:>10.3f}"]
        for name in ("proxy", "forward-only"):
            value = med(name, key)
            row.append(f"{value:>{15 if name == 'proxy' else 14}.3f}{value - base:>+11.3f}ms")
        print("".join(row))
    print(f"proxy+capture RSS: {idle_rss / 1024:.1f} MiB idle, {rss.peak / 1024:.1f} MiB peak")
    print(
        "proxy CPU per message (request + response): "
        f"{statistics.median(cpu_us['proxy']):.0f} us with capture, "
        f"{statistics.median(cpu_us['forward-only']):.0f} us forward-only"
    )
    print(
        f"capture: {total_capture / 1e6:.1f} MB in total, "
        f"{recorded_bytes / max(recorded_seconds, 1e-9) / 1e6:.2f} MB/s "
        f"while proxying; writer ceiling {mb_s:.0f} MB/s ({rec_s:.0f} records/s, 1 KiB sends, one thread)"
    )
    # Each round's proxied run against the same round's direct run: load that changes between rounds
    # moves both, so the paired figures are steadier than ratios of medians.
    ratios = per_round(runs["direct"], runs["proxy"], "tps")
    deltas = per_round(runs["direct"], runs["proxy"], "latencyP50Ms", added=True)
    print(
        "paired by round (proxy+capture vs direct): TPS ratio "
        + by_round(ratios, ".2f", unit="x")
        + "; p50 added "
        + by_round(deltas, "+.3f", unit=" ms")
    )

    def paired(name: str) -> list[float]:
        return per_round(runs["forward-only"], runs[name], "tps")

    def cpu_added(name: str) -> float:
        return statistics.median(c - f for c, f in zip(cpu_us[name], cpu_us["forward-only"], strict=True))

    metrics_ratio = statistics.median(paired("metrics"))
    rules_frame_us = cpu_added("rules") / 2  # a message is a request and its answer
    none_ns, rule_ns = rule_matching_ns()
    print(
        "metrics (forward-only + --metrics-port, one scrape of "
        f"{scraped / 1024:.0f} KiB a run) vs forward-only, paired by round: TPS ratio "
        + by_round(paired("metrics"), ".3f", unit="x")
        + f"; CPU {cpu_added('metrics'):+.1f} us per message"
    )
    print(metrics_line(statistics.median(cpu_us["forward-only"])))
    print(
        "fault rules (10 that never match: 5 on requests, 5 on responses) vs forward-only: TPS ratio "
        + ", ".join(f"{r:.3f}x" for r in paired("rules"))
        + f"; CPU {cpu_added('rules'):+.1f} us per message = {rules_frame_us:+.1f} us per frame; "
        f"in process: {none_ns / 1000:.2f} us per frame through the session without rules, "
        f"{rule_ns / 1000:+.2f} us per frame with them"
    )
    print(
        "targets (issue 16): metrics TPS >= 0.97x forward-only: "
        f"{'met' if metrics_ratio >= 0.97 else 'MISSED'}; "
        f"rule matching <= 2 us per frame: in process {'met' if rule_ns <= 2000 else 'MISSED'}, "
        f"proxy CPU in the run {'met' if rules_frame_us <= 2 else 'MISSED'}"
    )
    ok_tps = statistics.median(ratios) >= 0.95
    ok_p50 = statistics.median(deltas) <= 0.1
    ok_cpu = statistics.median(cpu_us["proxy"]) <= 15
    print(
        f"targets (proxy+capture, paired medians): TPS >= 0.95x direct: {'met' if ok_tps else 'MISSED'}; "
        f"p50 +<= 0.1 ms: {'met' if ok_p50 else 'MISSED'}; CPU <= 15 us/message: "
        f"{'met' if ok_cpu else 'MISSED'}"
    )
    write_figures(
        args.json,
        {
            "direct tps": d_tps,
            "proxy tps": med("proxy", "tps"),
            "tps ratio": statistics.median(ratios),
            "direct p50 ms": med("direct", "latencyP50Ms"),
            "p50 added ms": statistics.median(deltas),
            "cpu us": statistics.median(cpu_us["proxy"]),
            "forward-only cpu us": statistics.median(cpu_us["forward-only"]),
            "metrics tps ratio": metrics_ratio,
            "rules cpu us per frame": rules_frame_us,
            "rule matching ns per frame": rule_ns,
        },
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
