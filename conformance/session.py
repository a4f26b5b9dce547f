"""A session of the real Java client against real Apache RocketMQ, recorded three ways at once.

``record_java_session`` puts ``rmqtwin proxy`` (recording a capture) in front of a real cluster started
by ``conformance/launcher.py``, runs ``tcpdump -i lo`` on the proxy's ports at the same time, and drives
the real Java client through the proxy: sync, async, oneway and batch sends, a delay message, a
transaction (committed), a push consumer and a lite-pull consumer, each in its own consumer group. It
returns what the Java client reported (the ledger: msgIds and queue offsets of every send, what each
consumer received), the capture, the pcap, and a copy of the broker's store taken once every consumer
had its messages. The three records are judged against the ledger, which nobody here wrote::

    session = record_java_session(rmq, JavaClient(rmq.version), tmp_path)
    session.ledger.sent                  # producer "sent" events, one per message
    session.ledger.received["push"]      # the push consumer's "received" events
    session.capture, session.pcap, session.store_dir

The store copy is a real broker's files (commitlog, consume queues, config) and stays readable after
the broker stops or is deleted; the copy of a broker still running may end in a record being written
(read as a torn tail), never inside the session's messages. pytest shares one session per line:
``java_session`` in ``conformance/pytest_plugin.py``.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import socket
import struct
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ

__all__ = ["JavaSession", "Ledger", "SessionError", "record_java_session", "tcpdump_problem"]

Event = dict[str, Any]

SYNC, ASYNC, ONEWAY, BATCH = 3, 3, 2, 3
"""How many messages each send mode sends (the delay message and the transaction are one each)."""
EXPECTED = SYNC + ASYNC + ONEWAY + BATCH + 2


class SessionError(RuntimeError):
    """The Java client or the proxy did not complete the session; the message says which and why."""


@dataclass(frozen=True)
class Ledger:
    """What the real Java client reported.

    ``sent``: the producers' ``sent`` events (``msgId`` = UNIQ_KEY, ``offsetMsgId``, ``queueId``,
    ``queueOffset``, ``mode`` sync/async/oneway/batch/transaction, ``delayLevel`` added for the delay
    message); oneway sends have no broker answer, so no queue offset. ``received``: per role (``push``,
    ``lite_pull``) the consumer's ``received`` events (``msgId``, ``queueId``, ``queueOffset``, ``body``...).
    """

    topic: str
    groups: dict[str, str]
    """Role -> group: ``producer``, ``transaction`` (producer groups), ``push``, ``lite_pull``."""
    sent: list[Event]
    received: dict[str, list[Event]]

    def sent_offsets(self) -> set[tuple[str, int, int]]:
        """(msgId, queueId, queueOffset) of every answered send."""
        return {
            (e["msgId"], int(e["queueId"]), int(e["queueOffset"]))
            for e in self.sent
            if e.get("queueOffset") is not None
        }

    def received_offsets(self, role: str) -> set[tuple[str, int, int]]:
        """(msgId, queueId, queueOffset) of what the consumer of ``role`` received."""
        return {(e["msgId"], int(e["queueId"]), int(e["queueOffset"])) for e in self.received[role]}


@dataclass(frozen=True)
class JavaSession:
    """One recorded session: the ledger and the three records of it."""

    line: str
    """The RocketMQ line ("4.9" or "5")."""
    server_version: str
    client_version: str
    real_namesrv: str
    proxy_namesrv: str
    proxy_ports: tuple[int, ...]
    """The proxy's listening ports (namesrv, broker, the broker's VIP channel): what tcpdump captured."""
    ledger: Ledger
    capture: Path
    store_dir: Path
    """A copy of the broker's storePathRootDir, taken after the consumers received everything."""
    pcap: Path | None = None
    pcap_skipped: str | None = None
    """Why there is no pcap (tcpdump missing or not allowed to capture), else None."""
    seconds: float = 0.0
    log: list[str] = field(default_factory=list)


def tcpdump_problem() -> str | None:
    """Why ``tcpdump -i lo`` cannot run here, or None."""
    exe = shutil.which("tcpdump") or next(
        (p for p in ("/usr/bin/tcpdump", "/usr/sbin/tcpdump") if Path(p).exists()), None
    )
    if exe is None:
        return "tcpdump is not installed (scripts/setup.d/35-tcpdump.sh installs Debian's package)"
    return None


class _Tcpdump:
    """``tcpdump -i lo -w FILE`` on some TCP ports, packet-buffered, ended by SIGINT."""

    def __init__(self, out: Path, ports: tuple[int, ...]) -> None:
        exe = shutil.which("tcpdump") or "/usr/bin/tcpdump"
        self.out = out
        self.log = out.with_name(out.name + ".log")
        expr = " or ".join(f"port {p}" for p in ports)
        with self.log.open("w") as log:
            self.process = subprocess.Popen(
                [exe, "-i", "lo", "-n", "-U", "-B", "32768", "-s", "0", "-w", str(out), f"tcp and ({expr})"],
                stdout=subprocess.DEVNULL,
                stderr=log,
            )

    def wait_listening(self, timeout: float = 20.0) -> str | None:
        """None once tcpdump says it listens; else why it does not (it exited, or said nothing)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            if "listening on" in text:
                return None
            if self.process.poll() is not None:
                return f"tcpdump exited with {self.process.returncode}: {text.strip()[-500:]}"
            time.sleep(0.05)
        self.stop()
        return f"tcpdump did not start listening within {timeout:.0f}s"

    def drain(self, port: int, timeout: float = 60.0) -> str | None:
        """Wait until tcpdump has written every packet sent so far: on a loaded machine it reads the
        kernel's buffer seconds behind the traffic, and what it has not read when stopped is lost.
        A connection attempt to ``port`` (one the filter captures) is the last packet; once it is in
        the file, everything before it is. None when drained, else why not."""
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            sport = probe.getsockname()[1]
            probe.settimeout(2.0)
            with contextlib.suppress(OSError):
                probe.connect(("127.0.0.1", port))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sport in _source_ports(self.out):
                return None
            if self.process.poll() is not None:
                return f"tcpdump exited with {self.process.returncode}"
            time.sleep(0.1)
        return f"tcpdump had not written the last packet after {timeout:.0f}s"

    def stop(self) -> str:
        """SIGINT (tcpdump flushes and closes the file), then its summary lines."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.log.read_text(errors="replace")


def _source_ports(pcap: Path) -> set[int]:
    """TCP source ports of the IPv4 packets of an Ethernet (``-i lo``) pcap written so far."""
    data = pcap.read_bytes()
    ports: set[int] = set()
    pos = 24
    while pos + 16 <= len(data):
        caplen = struct.unpack_from("<I", data, pos + 8)[0]
        pkt = data[pos + 16 : pos + 16 + caplen]
        pos += 16 + caplen
        if len(pkt) >= 34 and pkt[12:14] == b"\x08\x00" and pkt[23] == 6:
            ihl = (pkt[14] & 0x0F) * 4
            if len(pkt) >= 14 + ihl + 2:
                ports.add(struct.unpack_from(">H", pkt, 14 + ihl)[0])
    return ports


def _copy_store(store: Path, out: Path) -> Path:
    """The broker's store files a reader needs (not the index, locks, abort marker or 5.x timer wheel)."""
    shutil.copytree(store, out, ignore=shutil.ignore_patterns("index", "lock", "abort", "timerwheel"))
    return out


def record_java_session(
    rmq: RealRocketMQ,
    java: JavaClient,
    out_dir: str | Path,
    *,
    name: str = "JavaSession",
    timeout: float = 180.0,
) -> JavaSession:
    """Record one Java client session through ``rmqtwin proxy`` in front of the running ``rmq``.

    ``java`` must be the client of ``rmq``'s line. Everything is written under ``out_dir``:
    ``session.rmqcap`` (the proxy's capture), ``session.pcap`` (tcpdump's, when it can run),
    ``store/`` (the copy of the broker's store), logs beside them. The session uses a topic and
    groups of its own (``name`` + a random suffix), so it can share a cluster with other tests.
    Raises ``SessionError`` when a driver fails, a consumer does not get every message within
    ``timeout`` seconds, or the proxy does not exit cleanly.
    """
    from rmqtwin.conformance.launcher import free_broker_port
    from rmqtwin.proxy.process import start_proxy

    started = time.monotonic()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    suffix = uuid.uuid4().hex[:8]
    topic = f"{name}_{suffix}"
    groups = {
        "producer": f"{name}_P_{suffix}",
        "transaction": f"{name}_TX_{suffix}",
        "push": f"{name}_Push_{suffix}",
        "lite_pull": f"{name}_Lite_{suffix}",
    }
    log: list[str] = []

    def say(msg: str) -> None:
        log.append(f"[{time.monotonic() - started:6.1f}s] {msg}")

    broker_port = free_broker_port()
    capture = out / "session.rmqcap"
    proxy = start_proxy(rmq.namesrv_addr, capture, "--broker-port", str(broker_port))
    ns_port = int(proxy.namesrv.rsplit(":", 1)[1])
    ports = (ns_port, broker_port, broker_port - 2)
    say(f"proxy {proxy.namesrv} in front of {rmq.namesrv_addr}, broker listener {broker_port}")
    pcap: Path | None = out / "session.pcap"
    skipped = tcpdump_problem()
    dump: _Tcpdump | None = None
    if skipped is None:
        assert pcap is not None
        dump = _Tcpdump(pcap, ports)
        skipped = dump.wait_listening()
        if skipped is not None:
            dump = None
    if skipped is not None:
        pcap = None
        say(f"no pcap: {skipped}")
    push = None
    try:
        ns = proxy.namesrv
        push = java.start_push_consumer(
            ns, topic, groups["push"], expect=EXPECTED, timeoutMs=int(timeout * 1000)
        )
        push.wait_for("started", timeout=timeout)
        say("push consumer started")
        messages = (
            [{"body": f"sync-{i}", "mode": "sync", "keys": [f"sync-{i}"]} for i in range(SYNC)]
            + [{"body": f"async-{i}", "mode": "async", "keys": [f"async-{i}"]} for i in range(ASYNC)]
            + [{"body": f"oneway-{i}", "mode": "oneway", "keys": [f"oneway-{i}"]} for i in range(ONEWAY)]
            + [{"body": "delay-0", "mode": "sync", "delayLevel": 1, "keys": ["delay-0"], "tags": "delay"}]
        )
        runs = [
            java.producer(ns, topic, group=groups["producer"], mode="sync", messages=messages, tags="TagA"),
            java.producer(
                ns, topic, group=groups["producer"], mode="batch", count=BATCH, bodyPrefix="batch-"
            ),
            java.producer(
                ns,
                topic,
                group=groups["transaction"],
                mode="transaction",
                messages=[{"body": "tx-0", "transaction": "commit", "keys": ["tx-0"]}],
            ),
        ]
        sent: list[Event] = []
        for run in runs:
            run.check()
            if run.errors:
                raise SessionError(f"the Java producer reported send errors: {run.errors}")
            sent += run.sent
        for event in runs[0].sent:
            if event["index"] == len(messages) - 1:
                event["delayLevel"] = 1
        say(f"{len(sent)} messages sent")
        lite = java.lite_pull(
            ns, topic, groups["lite_pull"], expect=EXPECTED, timeoutMs=int(timeout * 1000)
        ).check()
        pushed = push.result(timeout + 60).check()
        push = None
        received = {"push": pushed.received, "lite_pull": lite.received}
        for role, events in received.items():
            got = {e["msgId"] for e in events}
            if len(got) < EXPECTED:
                raise SessionError(f"the {role} consumer received {len(got)} of {EXPECTED} messages")
        say("both consumers received every message")
    finally:
        if push is not None:
            push.kill()
        rc = proxy.stop()
        if dump is not None:
            lag = dump.drain(ns_port)
            say("tcpdump: " + (f"{lag}; " if lag else "") + " ".join(dump.stop().split()[-12:]))
            if lag is not None:
                skipped, pcap = f"the pcap is incomplete: {lag}", None
    if rc != 0 or "Unhandled Error" in proxy.log():
        raise SessionError(f"rmqtwin proxy exited with {rc}:\n{proxy.log()[-4000:]}")
    store = _copy_store(rmq.store_dir, out / "store")
    say(f"store copied from {rmq.store_dir}")
    return JavaSession(
        line=rmq.version.line,
        server_version=rmq.version.server,
        client_version=java.version.client,
        real_namesrv=rmq.namesrv_addr,
        proxy_namesrv=proxy.namesrv,
        proxy_ports=ports,
        ledger=Ledger(topic=topic, groups=groups, sent=sent, received=received),
        capture=capture,
        store_dir=store,
        pcap=pcap,
        pcap_skipped=skipped,
        seconds=time.monotonic() - started,
        log=log,
    )


def main(argv: list[str] | None = None) -> int:
    """``python -m rmqtwin.conformance.session LINE OUT_DIR``: start real RocketMQ of LINE, record one
    session into OUT_DIR, print where everything is, stop the cluster."""
    import json
    import sys

    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ
    from rmqtwin.conformance.runner import SHARED_BROKER_CONF

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m rmqtwin.conformance.session LINE OUT_DIR", file=sys.stderr)
        return 2
    with RealRocketMQ(args[0], broker_conf_overrides=SHARED_BROKER_CONF) as rmq:
        session = record_java_session(rmq, JavaClient(rmq.version), args[1])
    print("\n".join(session.log), file=sys.stderr)
    print(
        json.dumps(
            {
                "line": session.line,
                "capture": str(session.capture),
                "pcap": str(session.pcap) if session.pcap else None,
                "pcap_skipped": session.pcap_skipped,
                "store": str(session.store_dir),
                "topic": session.ledger.topic,
                "groups": session.ledger.groups,
                "sent": len(session.ledger.sent),
                "received": {k: len(v) for k, v in session.ledger.received.items()},
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
