"""How cost grows: the twin beside real Apache RocketMQ on the same inputs, with plots.

    .venv/bin/python benchmarks/bench_scale.py [--quick] [--only topics,store,backlog,connections]
        [--version 5] [--dir DIR] [--out build/bench-scale] [--from-json]

Curves (each point: the twin and the real broker, one after the other, on the same input; memory as
RSS and its anonymous part, which leaves out the pages of mapped files such as the commitlog):

* ``topics``: a ``config/topics.json`` of N topics x 8 queues in a fresh store; launch-to-ready time
  (the broker registered every topic with its name server), memory, and the median
  GET_ROUTEINFO_BY_TOPIC time for topics picked at random. N = 1k, 10k, 50k (quick: 200, 1k).
* ``store``: a commitlog of S bytes written by the twin's store (byte-compatible, so the real broker
  starts on the very same files): launch-to-ready after a clean stop and after kill -9, memory after
  start. S = 1 GiB, 10 GiB (quick: 64, 256 MiB).
* ``backlog``: one queue of M small messages, grown on one store: launch-to-ready, memory and the
  median PULL_MESSAGE time (32 messages) at the head and at the deep end of the queue. M = 1M, 10M
  (quick: 20k, 200k).
* ``connections``: N client connections each with one answered request open on the broker, memory
  and the median time of a request on another connection; then (curve ``parked``) P long-poll pulls
  parked (suspended on an empty queue) over the last N connections. N = 100, 1k, 5k, P = 10k
  (quick: 100, 500; 1k).

Prints a table per curve (twin, real, twin/real), saves its figures as JSON and writes PNG plots to
``--out`` (``--from-json`` draws them again without measuring). Under each table, per figure, the
twin's growth from the first to the last point beside real's, and where the twin's grows faster, why
(``WHY_FASTER``: fixed, or explained; "not explained yet" is a finding). The store curve writes up to
11 GiB under ``--dir`` (default a temp dir) and removes it afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from common import load_note, rss_kib

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.codec.connection import RemotingConnection, ResponseReceived
from rmqtwin.codec.headers import PullMessageRequestHeader, to_ext_fields
from rmqtwin.conformance.launcher import RealRocketMQ
from rmqtwin.fakes.pytest_plugin import start_subprocess

TOPIC = "ScaleTopic"
STORE_SIZES = {"mappedFileSizeCommitLog": 1 << 30, "mappedFileSizeConsumeQueue": 300_000 * 20}
"""Java's default file sizes, given to both brokers (the launcher's own defaults are smaller)."""
QUEUES = 8
START_TIMEOUT = 1800.0
"""Seconds either broker may take to be ready: a restart on 10M messages validates every one of them."""
PULL_SUSPEND = 0x2 | 0x4  # PullSysFlag FLAG_SUSPEND | FLAG_SUBSCRIPTION


# --- a blocking client on the sans-IO codec --------------------------------------------------------


class Client:
    """One connection; :meth:`call` sends a request and waits for its answer."""

    def __init__(self, addr: str, timeout: float = 30.0) -> None:
        host, _, port = addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.conn = RemotingConnection()

    def send(self, request: RemotingCommand, timeout: float = 30.0) -> None:
        self.conn.send_request(request, now=time.monotonic(), timeout=timeout)
        self.sock.sendall(self.conn.data_to_send())

    def call(self, request: RemotingCommand) -> RemotingCommand:
        self.send(request)
        while True:
            data = self.sock.recv(1 << 20)
            if not data:
                raise ConnectionError("closed before answering")
            for event in self.conn.receive_data(data):
                if isinstance(event, ResponseReceived):
                    return event.command

    def close(self) -> None:
        self.sock.close()


def median_ms(fn: Callable[[], object], n: int) -> float:
    """The median of ``n`` timed calls, after ``n`` untimed ones: a fresh JVM interprets a request's
    path until the JIT has seen it, which is start-up cost, not the cost of the curve's size."""
    for _ in range(n):
        fn()
    times = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def pull_request(group: str, topic: str, queue: int, offset: int, suspend_ms: int = 0) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=group,
        topic=topic,
        queue_id=queue,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=PULL_SUSPEND if suspend_ms else 0x4,
        commit_offset=0,
        suspend_timeout_millis=suspend_ms,
        subscription="*",
        sub_version=0,
        expression_type="TAG",
    )
    return create_request(RequestCode.PULL_MESSAGE, to_ext_fields(header))


# --- targets ----------------------------------------------------------------------------------------


@dataclass
class Running:
    namesrv: str
    broker: str
    pids: Callable[[], list[int]]
    stop: Callable[[bool], None]  # graceful?
    ready_s: float


def start_twin(base: Path) -> Running:
    """``rmqtwin serve`` on the store ``base/store`` (its broker.conf in ``base``)."""
    began = time.monotonic()
    twin = start_subprocess(
        str(base), broker_conf={"brokerClusterName": "scale", **STORE_SIZES}, start_timeout=START_TIMEOUT
    )
    ready = time.monotonic() - began
    assert twin.process is not None
    process = twin.process

    def stop(graceful: bool) -> None:
        if graceful:
            twin.stop()
        else:
            process.send_signal(signal.SIGKILL)
            process.wait()

    return Running(twin.namesrv_addr, twin.broker_addr, lambda: [process.pid], stop, ready)


def start_real(base: Path, version: str) -> Running:
    """Real RocketMQ on the same store, ``base/store``."""
    began = time.monotonic()
    real = RealRocketMQ(
        version, store_dir=base / "store", broker_conf_overrides=STORE_SIZES, start_timeout=START_TIMEOUT
    ).start()
    ready = time.monotonic() - began

    def pids() -> list[int]:
        return [p.process.pid for p in real._processes()]

    def stop(graceful: bool) -> None:
        if graceful:
            real.stop()
        else:
            for pid in pids():
                os.kill(pid, signal.SIGKILL)
            real.stop(graceful=False)

    return Running(real.namesrv_addr, real.broker_addrs[0], pids, stop, ready)


def start(kind: str, base: Path, args: argparse.Namespace) -> Running:
    return start_twin(base) if kind == "twin" else start_real(base, args.version)


@contextmanager
def running(kind: str, base: Path, args: argparse.Namespace) -> Iterator[Running]:
    target = start(kind, base, args)
    try:
        yield target
    finally:
        target.stop(True)


@contextmanager
def scratch(name: str, args: argparse.Namespace) -> Iterator[Path]:
    """A fresh base folder (the store goes in ``store/``), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=f"scale-{name}-", dir=args.dir))
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


# --- curves -----------------------------------------------------------------------------------------


Point = dict[str, float]
Curve = dict[str, dict[int, Point]]
"""``curve[kind][x]``: the figures of one point, kind "twin" or "real"."""


def memory(pids: list[int]) -> Point:
    """RSS, and its anonymous part: without the pages of mapped files (the commitlog and consume
    queues both brokers map), what the process itself holds (Python objects, Java's heap)."""
    return {"RSS MiB": rss_kib(pids) / 1024, "anon MiB": rss_kib(pids, "RssAnon") / 1024}


def write_topics(base: Path, n: int) -> None:
    """``store/config/topics.json`` with ``TOPIC`` and ``n`` more topics, 8 queues each."""
    from rmqtwin.store_mirror.config import TopicConfig, TopicConfigManager

    manager = TopicConfigManager(str(base / "store"))
    manager.update_topic_config(
        TopicConfig(TOPIC, read_queue_nums=QUEUES, write_queue_nums=QUEUES), persist=False
    )
    for i in range(n):
        manager.update_topic_config(
            TopicConfig(f"Scale{i:06d}", read_queue_nums=QUEUES, write_queue_nums=QUEUES), persist=False
        )
    manager.persist()


def curve_topics(args: argparse.Namespace) -> dict[str, Curve]:
    """Launch-to-ready, RSS and route-query time against the topic count.

    Both brokers register every topic with the name server at start (REGISTER_BROKER carries the
    whole topic table), so ready time grows with N for both; the twin's per-topic cost is its
    Python objects (TopicConfig, QueueData) against Java's."""
    sizes = [200, 1000] if args.quick else [1000, 10_000, 50_000]
    result: Curve = {"twin": {}, "real": {}}
    for n in sizes:
        for kind in ("twin", "real"):
            with scratch(f"topics-{n}", args) as base:
                write_topics(base, n)
                with running(kind, base, args) as target:
                    client = Client(target.namesrv)
                    topics = iter([f"Scale{random.randrange(n):06d}" for _ in range(100)])

                    def route(client: Client = client, topics: Iterator[str] = topics) -> None:
                        answer = client.call(
                            create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": next(topics)})
                        )
                        assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)

                    point = {
                        "ready s": target.ready_s,
                        **memory(target.pids()),
                        "route ms": median_ms(route, 50),
                    }
                    client.close()
            result[kind][n] = point
            print(f"topics {n:>6} {kind}: {fmt_point(point)}  ({load_note()})", flush=True)
    return {"topics": result}


def fill_store(base: Path, total_bytes: int, body: int, progress: str, *, keyed: bool = True) -> int:
    """Messages of ``body`` bytes into ``TOPIC`` queue 0 through the twin's store until the commitlog
    holds ``total_bytes`` (appending to what ``base/store`` already holds); returns the number of
    messages in the queue. ``keyed``: each message has a UNIQ_KEY, so the index gets an entry; the
    10M-message backlog goes without (no index work in Python per message, and pulls never read it)."""
    from twisted.internet import defer
    from twisted.internet.task import Clock

    from rmqtwin.store_mirror.flush import TwistedFlushDriver
    from rmqtwin.store_mirror.message_store import DefaultMessageStore, MessageStoreConfig
    from rmqtwin.store_mirror.record import MessageExtBrokerInner

    if not (base / "store" / "config" / "topics.json").exists():
        write_topics(base, 0)
    store = DefaultMessageStore(
        str(base / "store"),
        MessageStoreConfig(),
        flush=TwistedFlushDriver(Clock(), lambda f: defer.succeed(f())),
    )
    assert store.load()
    store.start()
    payload = os.urandom(body)
    count = store.get_max_offset_in_queue(TOPIC, 0)
    began = last = time.monotonic()
    while store.get_max_phy_offset() < total_bytes:
        store.put_message(
            MessageExtBrokerInner(
                topic=TOPIC,
                body=payload,
                queue_id=0,
                properties={"UNIQ_KEY": f"{count:032X}"} if keyed else {},
                properties_string=f"UNIQ_KEY\x01{count:032X}\x02" if keyed else "",
                born_timestamp=int(time.time() * 1000),
                born_host=("127.0.0.1", 5555),
                store_host=("127.0.0.1", 10911),
            )
        )
        count += 1
        if time.monotonic() - last > 30:
            last = time.monotonic()
            done = store.get_max_phy_offset()
            print(f"  {progress}: {done / total_bytes:5.1%} ({count} messages)", flush=True)
    store.commit_log.mapped_file_queue.flush_all()
    store.shutdown()
    print(f"  {progress}: written in {time.monotonic() - began:.0f} s", flush=True)
    return count


def curve_store(args: argparse.Namespace) -> dict[str, Curve]:
    """Restart time (clean and after kill -9) and memory against commitlog size.

    Recovery reads the last commitlog files (three, as Java's recoverNormally/Abnormally), so both
    should stay flat in S; the twin maps the commitlog (mmap) and holds no message in Python
    objects, so its anonymous memory should stay flat in S too."""
    gib = 1 << 30
    sizes = [64 << 20, 256 << 20] if args.quick else [1 * gib, 10 * gib]
    result: Curve = {"twin": {}, "real": {}}
    for size in sizes:
        with scratch("store", args) as base:
            fill_store(base, size, 16 * 1024, f"commitlog {size >> 20} MiB")
            for kind in ("twin", "real"):
                point: Point = {}
                target = start(kind, base, args)
                point["first start s"] = target.ready_s
                target.stop(True)
                target = start(kind, base, args)
                point["after clean stop s"] = target.ready_s
                point.update(memory(target.pids()))
                target.stop(False)
                target = start(kind, base, args)
                point["after kill -9 s"] = target.ready_s
                target.stop(True)
                result[kind][size >> 20] = point
                print(f"store {size >> 20:>6} MiB {kind}: {fmt_point(point)}  ({load_note()})", flush=True)
    return {"store": result}


def curve_backlog(args: argparse.Namespace) -> dict[str, Curve]:
    """Launch-to-ready (a clean stop before: recovery reads the last three commitlog files, which here
    hold every message), memory with a backlog of M messages in one queue, and pull time (32
    messages) at its head and at its deep end; the queue grows from the smaller M to the larger on
    the same store."""
    sizes = [20_000, 200_000] if args.quick else [1_000_000, 10_000_000]
    result: Curve = {"twin": {}, "real": {}}
    record = 64 + 91 + len(TOPIC)  # body, fixed part, topic, no properties
    with scratch("backlog", args) as base:
        for m in sizes:
            count = fill_store(base, m * record, 64, f"backlog of {m} messages", keyed=False)
            deep = max(count - 32, 0)
            for kind in ("twin", "real"):
                with running(kind, base, args) as target:
                    client = Client(target.broker)
                    group = f"scale_{kind}"

                    def pull(offset: int, client: Client = client, group: str = group) -> None:
                        answer = client.call(pull_request(group, TOPIC, 0, offset))
                        assert answer.code == ResponseCode.SUCCESS, (offset, answer.code, answer.remark)

                    point = {
                        "ready s": target.ready_s,
                        **memory(target.pids()),
                        "pull head ms": median_ms(partial(pull, 0), 100),
                        "pull deep ms": median_ms(partial(pull, deep), 100),
                    }
                    client.close()
                result[kind][count] = point
                print(f"backlog {count} {kind}: {fmt_point(point)}  ({load_note()})", flush=True)
    return {"backlog": result}


def curve_connections(args: argparse.Namespace) -> dict[str, Curve]:
    """Memory and request time against open client connections; then P long-poll pulls parked
    (suspended on an empty queue) over the largest number of connections, a curve of its own
    (x: parked pulls, 0 and P).

    Per connection the twin holds a Twisted transport and protocol, a RemotingConnection and its
    buffers; per parked pull a request, a deferred and a timer: the ratio column shows how that
    compares with Netty's channel and the PullRequest Java keeps."""
    sizes = [100, 500] if args.quick else [100, 1000, 5000]
    parked = 1000 if args.quick else 10_000
    fits = raise_open_files(sizes[-1] * 2 + 512)  # this side's sockets, and the twin's (it inherits)
    if fits < sizes[-1] * 2 + 512:
        sizes = [n for n in sizes if n * 2 + 512 <= fits] or [100]
        print(f"open-files hard limit {fits}: connection sizes cut to {sizes}")
    result: Curve = {"twin": {}, "real": {}}
    suspended: Curve = {"twin": {}, "real": {}}
    for kind in ("twin", "real"):
        with scratch("connections", args) as base:
            write_topics(base, 0)
            with running(kind, base, args) as target:
                request = create_request(RequestCode.GET_MAX_OFFSET, {"topic": TOPIC, "queueId": "0"})
                probe = Client(target.broker)
                probe.call(request)
                clients: list[Client] = []

                def measure(probe: Client = probe, request: RemotingCommand = request) -> Point:
                    return {
                        **memory(target.pids()),
                        "request ms": median_ms(partial(probe.call, request), 200),
                    }

                for n in sizes:
                    while len(clients) < n:
                        clients.append(Client(target.broker))
                        clients[-1].call(request)
                    result[kind][n] = measure()
                    print(
                        f"{n} connections {kind}: {fmt_point(result[kind][n])}  ({load_note()})", flush=True
                    )
                suspended[kind][0] = result[kind][sizes[-1]]
                group = f"scale_{kind}"
                for i in range(parked):
                    clients[i % len(clients)].send(
                        pull_request(group, TOPIC, i % QUEUES, 0, suspend_ms=60_000), 120
                    )
                time.sleep(2)
                suspended[kind][parked] = measure()
                print(
                    f"{parked} parked pulls on {len(clients)} connections {kind}: "
                    f"{fmt_point(suspended[kind][parked])}  ({load_note()})",
                    flush=True,
                )
                for c in clients:
                    c.close()
                probe.close()
        points = result[kind]
        per_conn = (
            (points[sizes[-1]]["RSS MiB"] - points[sizes[0]]["RSS MiB"]) * 1024 / (sizes[-1] - sizes[0])
        )
        per_pull = (suspended[kind][parked]["RSS MiB"] - suspended[kind][0]["RSS MiB"]) * 1024 / parked
        print(
            f"{kind}: {per_conn:.1f} KiB of RSS per client connection ({sizes[0]} -> {sizes[-1]}), "
            f"{per_pull:.2f} KiB per parked pull",
            flush=True,
        )
    return {"connections": result, "parked": suspended}


def raise_open_files(wanted: int) -> int:
    """Raise this process's soft RLIMIT_NOFILE to ``wanted`` (the hard limit at most); what it now is."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if soft < target:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    return soft


# --- output -----------------------------------------------------------------------------------------


def fmt_point(point: Point) -> str:
    return ", ".join(f"{k} {v:.3g}" for k, v in point.items())


WHY_FASTER: dict[tuple[str, str], str] = {
    ("topics", "ready s"): "the twin builds a TopicConfig and the name server's QueueData per topic in "
    "Python at start and sends the whole table in REGISTER_BROKER: linear in N like Java's, over a "
    "base ten times smaller (an idle Python process against two JVMs), so the same kind of growth is "
    "a larger multiple of it (explained, not fixed)",
    ("topics", "RSS MiB"): "a Python TopicConfig and the name server's QueueData and their dict entries "
    "per topic: linear in N, over a base ten times smaller than the JVMs' (explained, not fixed)",
    ("topics", "anon MiB"): "the same objects as RSS MiB: every byte a topic costs is the process's own "
    "(explained, not fixed)",
    ("connections", "RSS MiB"): "a Twisted transport and protocol, a RemotingConnection and its buffers "
    "per connection, an idle timer (explained, not fixed)",
    ("connections", "anon MiB"): "the same objects as RSS MiB (explained, not fixed)",
    ("parked", "anon MiB"): "per parked pull the twin keeps the decoded request (its ext fields), a "
    "PullRequest and a Twisted DelayedCall for its suspend timeout, where Java keeps a PullRequest "
    "holding the request (explained, not fixed)",
    ("parked", "RSS MiB"): "the same objects as anon MiB (explained, not fixed)",
    ("store", "RSS MiB"): "pages of the mapped commitlog files: a clean restart validates every record "
    "of the last three files (4.9.8's recoverNormally), and the pages it read stay mapped, where the "
    "real broker's mapped pages (RSS minus anon) stay near 100 MiB. Page cache shared with the kernel, "
    "not the process's memory (anon MiB stays flat), bounded by three files (explained, not fixed)",
    ("backlog", "ready s"): "a clean restart validates every record of the last three commitlog files "
    "(4.9.8's recoverNormally) in Python, now only each record's length fields and body CRC "
    "(record_size: about 5 us a record on 26 November, against about 28 us when each was decoded into "
    "a MessageExt); linear in the messages of those files (at most 3 GiB of them), while the real "
    "broker's restart stays dominated by its JVMs' start (explained; made about five times cheaper, "
    "not flat)",
    ("backlog", "RSS MiB"): "pages of the mapped commitlog and consume queue read by the restart's scan "
    "and the pulls, as on the store curve; anon MiB stays flat (explained, not fixed)",
}
"""Why the twin's cost grows faster than the real broker's on a curve, per (curve, figure), from the
full run's measurements: printed beside the figure when its growth is faster."""

GROWTH_MARGIN = 1.25
"""A growth (last point over first) counts only above this factor, and the twin's must exceed real's
by it to count as faster: single points on a shared machine move by that much."""


def growth_verdicts(name: str, curve: Curve) -> list[str]:
    """Per figure: the twin's growth from the first to the last point beside real's, whether it is
    faster, and what explains it (:data:`WHY_FASTER`). A growth is last over first; the increases
    (last minus first) say whether a faster relative growth can ever reach real's figure."""
    xs = sorted(x for x in curve["twin"] if x in curve["real"])
    if len(xs) < 2:
        return [f"  {name}: fewer than two points measured on both sides, no growth to compare"]
    lines = []
    first, last = xs[0], xs[-1]
    for key in curve["twin"][first]:
        t0, t1 = curve["twin"][first][key], curve["twin"][last][key]
        r0, r1 = curve["real"][first].get(key), curve["real"][last].get(key)
        if not (t0 and t1 and r0 and r1):
            continue
        twin_growth, real_growth = t1 / t0, r1 / r0
        if twin_growth <= GROWTH_MARGIN:
            verdict = "flat for the twin: grows no faster than real"
        elif twin_growth <= real_growth * GROWTH_MARGIN:
            verdict = "grows no faster than real"
        else:
            why = WHY_FASTER.get((name, key), "not explained yet: look into it")
            verdict = f"grows faster than real: {why}"
            side = "below" if t1 - t0 < r1 - r0 else "above"
            verdict += (
                f"; in absolute terms its increase is {side} real's ({t1 - t0:+.3g} against {r1 - r0:+.3g})"
            )
        lines.append(
            f"  {key}: twin x{twin_growth:.2f} ({t0:.3g} -> {t1:.3g}), real x{real_growth:.2f} "
            f"({r0:.3g} -> {r1:.3g}) from {first} to {last}, twin/real {t1 / r1:.2f}x at {last}: {verdict}"
        )
    return lines


def print_table(name: str, curve: Curve) -> None:
    print(f"\n{name}")
    xs = sorted(curve["twin"])
    keys = list(next(iter(curve["twin"].values())))
    print(f"{'x':>10}  " + "  ".join(f"{k + ' twin/real':>28}" for k in keys))
    for x in xs:
        cells = []
        for k in keys:
            t = curve["twin"][x][k]
            r = curve["real"].get(x, {}).get(k)
            real = "-" if r is None else f"{r:.3g}"
            cells.append(f"{t:9.3g} {real:>9} {t / r if r else float('nan'):7.2f}x")
        print(f"{x:>10}  " + "  ".join(f"{c:>28}" for c in cells))
    print("\n".join(growth_verdicts(name, curve)))


def short(x: int) -> str:
    """An axis label: 200, 1k, 50k, 1,024, 10M."""
    if x >= 10**6:
        return f"{x / 10**6:.3g}M"
    return f"{x // 1000}k" if x and x % 1000 == 0 else f"{x:,}"


def plot(name: str, curve: Curve, xlabel: str, out: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plots skipped: matplotlib is not installed (pip install -e '.[report]')")
        return None
    keys = list(next(iter(curve["twin"].values())))
    fig, axes = plt.subplots(1, len(keys), figsize=(3.4 * len(keys), 3.2), squeeze=False)
    for ax, key in zip(axes[0], keys, strict=True):
        for kind, style in (("twin", "o-"), ("real", "s--")):
            xs = sorted(curve[kind])
            ax.plot(xs, [curve[kind][x][key] for x in xs], style, label=f"{kind}")
        ax.set_xlabel(xlabel)
        ax.set_title(key)
        ax.set_xscale("log" if min(curve["twin"]) > 0 else "linear")
        ax.minorticks_off()
        ax.set_xticks(sorted(curve["twin"]), [short(x) for x in sorted(curve["twin"])])
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend()
    fig.suptitle(f"{name}: twin beside real RocketMQ")
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.png"
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def save(name: str, curve: Curve, out: Path) -> None:
    """The curve's figures as JSON beside its plot, so tables, verdicts and plots can be drawn again
    (``--from-json``) without measuring again."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(curve, indent=1))


def load(name: str, out: Path) -> Curve:
    raw = json.loads((out / f"{name}.json").read_text())
    return {kind: {int(x): point for x, point in points.items()} for kind, points in raw.items()}


CURVES: dict[str, tuple[Callable[[argparse.Namespace], dict[str, Curve]], list[str]]] = {
    "topics": (curve_topics, ["topics"]),
    "store": (curve_store, ["store"]),
    "backlog": (curve_backlog, ["backlog"]),
    "connections": (curve_connections, ["connections", "parked"]),
}
"""Each run's function and the curves it draws."""

XLABELS = {
    "topics": "topics (x 8 queues)",
    "store": "commitlog MiB",
    "backlog": "messages in the queue",
    "connections": "client connections",
    "parked": "parked long-poll pulls",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small sizes: a smoke run")
    parser.add_argument("--only", default=",".join(CURVES), help="a comma-separated subset")
    parser.add_argument("--version", default="5", help="real RocketMQ line (default 5 = 5.5.0)")
    parser.add_argument("--dir", default=None, help="where stores are written (default: a temp dir)")
    parser.add_argument("--out", default="build/bench-scale", help="where the PNG plots and JSON go")
    parser.add_argument(
        "--from-json", action="store_true", help="measure nothing: draw tables and plots from --out's JSON"
    )
    args = parser.parse_args(argv)
    out = Path(args.out)
    print(f"start: {load_note()}", flush=True)
    for run in args.only.split(","):
        fn, names = CURVES[run]
        began = time.monotonic()
        curves = {name: load(name, out) for name in names} if args.from_json else fn(args)
        for name, curve in curves.items():
            if not args.from_json:
                save(name, curve, out)
            print_table(name, curve)
            path = plot(name, curve, XLABELS[name], out)
            if path:
                print(f"plot: {path}")
        if not args.from_json:
            print(f"{run}: measured in {time.monotonic() - began:.0f} s", flush=True)
    print(f"end: {load_note()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
