"""``rmqtwin proxy`` and ``rmqtwin capture show|stats|to-pcap|from-pcap``.

Imports stay cheap here; Twisted, scapy and the capture code load inside the handlers.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import Any

from rmqtwin.logs import LEVELS

__all__ = ["register"]


def register(subparsers: Any) -> None:
    proxy = subparsers.add_parser(
        "proxy",
        help="recording proxy in front of a real RocketMQ cluster",
        description=(
            "Listen as a namesrv in front of the upstream namesrv(s); rewrite broker addresses in their "
            "answers to listeners of the proxy (one per broker), so every connection passes through it, "
            "and record every frame."
        ),
    )
    proxy.add_argument(
        "--upstream", action="append", required=True, metavar="HOST:PORT", help="upstream namesrv"
    )
    proxy.add_argument("--host", default="127.0.0.1", help="listen host for the namesrv and broker listeners")
    proxy.add_argument("--port", type=int, default=9876, help="namesrv listen port (0 = any free port)")
    proxy.add_argument("--advertise", metavar="HOST", help="host written into rewritten broker addresses")
    proxy.add_argument(
        "--broker-port",
        type=int,
        default=0,
        metavar="P",
        help="first broker listener's port (next brokers P+4, ...; each VIP channel two below; 0 = any)",
    )
    proxy.add_argument(
        "--capture", metavar="FILE", help="record to this capture (rotated as FILE.1, FILE.2, ...)"
    )
    proxy.add_argument(
        "--rotate-mb", type=int, default=256, help="start a new capture segment after this size"
    )
    proxy.add_argument(
        "--max-segments", type=int, default=0, help="keep at most this many segments (0 = all)"
    )
    proxy.add_argument("--keep-credentials", action="store_true", help="do not redact ACL credentials")
    proxy.add_argument(
        "--log-level", choices=LEVELS, default="warning", help="what reaches stderr (default: warning)"
    )
    proxy.add_argument(
        "--max-pending", type=int, default=4096, help="reads batched before the capture is written early"
    )
    add_fault_options(proxy)
    proxy.set_defaults(handler=_run_proxy)

    fault = subparsers.add_parser(
        "fault",
        help="list, add, toggle and remove fault rules of a running proxy or twin",
        description="Talks to the fault API (--faults-port) of `rmqtwin proxy` or `rmqtwin serve`.",
    )
    fault.add_argument("--api", default="127.0.0.1:8474", metavar="HOST:PORT", help="the fault API")
    fsub = fault.add_subparsers(dest="fault_command", metavar="ACTION", required=True)
    fsub.add_parser("list", help="every rule with its hits").set_defaults(handler=_fault_call)
    add = fsub.add_parser("add", help="add a rule: a JSON object, or key=value pairs (values as JSON)")
    add.add_argument("rule", nargs="+")
    add.set_defaults(handler=_fault_call)
    for action in ("remove", "enable", "disable"):
        one = fsub.add_parser(action, help=f"{action} one rule")
        one.add_argument("name")
        one.set_defaults(handler=_fault_call)
    fsub.add_parser("reset", help="remove every rule").set_defaults(handler=_fault_call)

    capture = subparsers.add_parser("capture", help="inspect and convert rmqtwin captures")
    sub = capture.add_subparsers(dest="capture_command", metavar="ACTION", required=True)
    show = sub.add_parser("show", help="one line per record")
    show.add_argument("file")
    show.add_argument("--limit", type=int, default=0, help="stop after this many records")
    show.set_defaults(handler=_show)
    stats = sub.add_parser("stats", help="codes, counts and latency percentiles per code and per topic")
    stats.add_argument("file")
    stats.set_defaults(handler=_stats)
    tail = sub.add_parser("tail", help="decoded frames as they are recorded (RocketMQ-aware, filterable)")
    tail.add_argument("file")
    tail.add_argument("-f", "--follow", action="store_true", help="keep printing what is recorded next")
    tail.add_argument("--code", action="append", default=[], help="request code (name or number); repeat")
    tail.add_argument("--topic", help="only requests naming this topic (and their answers)")
    tail.add_argument("--group", help="only requests naming this group (and their answers)")
    tail.add_argument("--conn", type=int, help="only this connection id")
    tail.set_defaults(handler=_tail)
    to_pcap = sub.add_parser("to-pcap", help="export as pcap (TCP conversations synthesized per connection)")
    to_pcap.add_argument("file")
    to_pcap.add_argument("out")
    to_pcap.add_argument("--mss", type=int, default=1460)
    to_pcap.add_argument("--pcapng", action="store_true", help="pcapng with a comment naming each frame")
    to_pcap.set_defaults(handler=_to_pcap)
    from_pcap = sub.add_parser("from-pcap", help="import a tcpdump of RocketMQ traffic as a capture")
    from_pcap.add_argument("pcap")
    from_pcap.add_argument("out")
    from_pcap.add_argument("--server-port", type=int, action="append", default=[], help="extra server port")
    from_pcap.add_argument("--keep-credentials", action="store_true")
    from_pcap.set_defaults(handler=_from_pcap)
    synth = sub.add_parser(
        "synth",
        help="write a capture of realistic synthetic traffic (producers, push consumers) through the codec",
    )
    synth.add_argument("out")
    synth.add_argument("--frames", type=int, default=100_000, help="about this many frames (default 100000)")
    synth.add_argument("--seed", type=int, default=1, help="the same seed writes the same capture")
    synth.add_argument("--producers", type=int, default=8)
    synth.add_argument("--consumers", type=int, default=4)
    synth.add_argument(
        "--rotate-bytes", type=int, default=256 * 1024 * 1024, help="start a new segment past this size"
    )
    synth.set_defaults(handler=_synth)


def add_fault_options(parser: argparse.ArgumentParser) -> None:
    """Fault and metrics options shared by ``rmqtwin proxy`` and ``rmqtwin serve``."""
    parser.add_argument(
        "--metrics-port", type=int, metavar="PORT", help="serve Prometheus metrics on this port (0 = any)"
    )
    parser.add_argument("--metrics-host", default="127.0.0.1", help="host of the metrics endpoint")
    parser.add_argument(
        "--fault", action="append", default=[], metavar="JSON", help="a fault rule active from the start"
    )
    parser.add_argument(
        "--faults-port", type=int, metavar="PORT", help="serve the fault HTTP API on this port (0 = any)"
    )
    parser.add_argument("--faults-host", default="127.0.0.1", help="host of the fault API (loopback)")


def start_faults(args: argparse.Namespace, reactor: Any) -> tuple[Any, str | None]:
    """The fault engine the options ask for (None without any) and its API's URL (when listening)."""
    if not args.fault and args.faults_port is None:
        return None, None
    import json

    from rmqtwin.proxy.fault_api import fault_site
    from rmqtwin.proxy.faults import FaultEngine, RuleError

    engine = FaultEngine(clock=reactor.seconds)
    for text in args.fault:
        try:
            engine.add(json.loads(text))
        except (ValueError, RuleError) as exc:
            raise SystemExit(f"--fault {text}: {exc}") from None
    url = None
    if args.faults_port is not None:
        port = reactor.listenTCP(args.faults_port, fault_site(engine), interface=args.faults_host)
        url = f"http://{args.faults_host}:{port.getHost().port}"
    return engine, url


def serve_metrics(args: argparse.Namespace, reactor: Any, registry: Any) -> str:
    """Listen for Prometheus scrapes of ``registry``; the endpoint's URL."""
    from rmqtwin.proxy.metrics import metrics_site

    port = reactor.listenTCP(args.metrics_port, metrics_site(registry), interface=args.metrics_host)
    return f"http://{args.metrics_host}:{port.getHost().port}/metrics"


def _fault_call(args: argparse.Namespace) -> int:
    import json
    import urllib.error
    import urllib.request

    base = f"http://{args.api}"
    action = args.fault_command
    body: object = None
    method = "GET"
    path = "/rules"
    if action == "add":
        method = "POST"
        if len(args.rule) == 1 and args.rule[0].lstrip().startswith("{"):
            body = json.loads(args.rule[0])
        else:
            rule: dict[str, object] = {}
            for pair in args.rule:
                key, sep, value = pair.partition("=")
                if not sep:
                    print(f"not key=value: {pair}", file=sys.stderr)
                    return 2
                try:
                    rule[key] = json.loads(value)
                except ValueError:
                    rule[key] = value
            body = rule
    elif action == "reset":
        method, path = "POST", "/reset"
    elif action == "remove":
        method, path = "DELETE", f"/rules/{args.name}"
    elif action in ("enable", "disable"):
        method, path, body = "POST", f"/rules/{args.name}", {"enabled": action == "enable"}
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(base + path, data=data, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            print(answer.read().decode())
            return 0
    except urllib.error.HTTPError as exc:
        print(f"{exc.code}: {exc.read().decode()}", file=sys.stderr)
        return 1


def _run_proxy(args: argparse.Namespace) -> int:
    import time

    from twisted.internet import reactor

    from rmqtwin import __version__
    from rmqtwin.logs import begin_logging
    from rmqtwin.proxy.capture import CaptureWriter
    from rmqtwin.proxy.forwarding import RecordingProxy, Upstream
    from rmqtwin.proxy.recorder import Recorder

    # Warnings and errors (an exception in a protocol callback closes that connection) go to stderr.
    begin_logging(args.log_level)
    upstreams = [Upstream.parse(u) for u in args.upstream]
    recorder = None
    if args.capture:
        writer = CaptureWriter(
            args.capture,
            rotate_bytes=args.rotate_mb * 1024 * 1024,
            max_segments=args.max_segments,
            metadata={
                "tool": f"rmqtwin proxy {__version__}",
                "upstreams": [str(u) for u in upstreams],
                "redacted": not args.keep_credentials,
            },
            wall_ns=time.time_ns(),
        )
        recorder = Recorder(
            writer,
            redact=not args.keep_credentials,
            max_pending=args.max_pending,
            call_later=reactor.callLater,
        )
    faults, faults_url = start_faults(args, reactor)
    proxy = RecordingProxy(
        reactor,
        upstreams,
        listen_host=args.host,
        advertise_host=args.advertise,
        recorder=recorder,
        faults=faults,
        metrics=args.metrics_port is not None,
        broker_port=args.broker_port,
    )
    port = proxy.listen(args.port)
    reactor.addSystemEventTrigger("before", "shutdown", proxy.stop)
    host: Any = port.getHost()
    print(f"rmqtwin proxy listening on {proxy.advertise_host}:{host.port} (bound {host.host})", flush=True)
    if faults_url is not None:
        print(f"rmqtwin proxy fault API on {faults_url}", flush=True)
    if proxy.metrics is not None:
        print(f"rmqtwin proxy metrics on {serve_metrics(args, reactor, proxy.metrics.registry)}", flush=True)
    reactor.run()
    if recorder is not None and recorder.error is not None:
        print(f"capture error: {recorder.error}", file=sys.stderr)
        return 1
    return 0


def _show(args: argparse.Namespace) -> int:
    from rmqtwin.proxy.capture import read_records
    from rmqtwin.proxy.stats import format_record

    for n, rec in enumerate(read_records(args.file), 1):
        print(format_record(rec))
        if args.limit and n >= args.limit:
            break
    return 0


def _tail(args: argparse.Namespace) -> int:
    from rmqtwin.proxy.tail import FrameFilter, tail

    try:
        frame_filter = FrameFilter.of(args.code, args.topic, args.group, args.conn)
    except KeyError as exc:
        print(f"unknown request code {exc}", file=sys.stderr)
        return 2

    def emit(line: str) -> None:
        print(line, flush=True)

    with contextlib.suppress(KeyboardInterrupt):
        tail(args.file, frame_filter, follow=args.follow, emit=emit)
    return 0


def _stats(args: argparse.Namespace) -> int:
    from rmqtwin.proxy.stats import CaptureStats, format_stats

    print(format_stats(CaptureStats.of(args.file)))
    return 0


def _to_pcap(args: argparse.Namespace) -> int:
    from rmqtwin.proxy.pcap import to_pcap

    n = to_pcap(args.file, args.out, mss=args.mss, pcapng=args.pcapng)
    print(f"wrote {n} packets to {args.out}")
    return 0


def _synth(args: argparse.Namespace) -> int:
    import time

    from rmqtwin.proxy.synth import synthesize

    started = time.monotonic()
    stats = synthesize(
        args.out,
        frames=args.frames,
        seed=args.seed,
        producers=args.producers,
        consumers=args.consumers,
        rotate_bytes=args.rotate_bytes,
        progress=lambda n: print(f"{n} frames ...", file=sys.stderr, flush=True),
    )
    print(
        f"wrote {stats.frames} frames on {stats.connections} connections to {args.out} "
        f"({stats.messages_sent} messages sent, {stats.messages_delivered} delivered) "
        f"in {time.monotonic() - started:.1f}s"
    )
    return 0


def _from_pcap(args: argparse.Namespace) -> int:
    from rmqtwin.proxy.pcap import DEFAULT_SERVER_PORTS, from_pcap

    stats = from_pcap(
        args.pcap,
        args.out,
        server_ports=set(DEFAULT_SERVER_PORTS) | set(args.server_port),
        redact=not args.keep_credentials,
    )
    print(
        f"{stats.packets} packets, {stats.flows} TCP flows, {stats.frames} frames; "
        f"{stats.retransmitted_bytes} retransmitted bytes dropped, "
        f"{stats.out_of_order_segments} out-of-order segments reordered, "
        f"{stats.undelivered_bytes} bytes never completed"
    )
    return 0
