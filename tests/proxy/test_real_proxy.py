"""The proxy in front of real Apache RocketMQ, driven by the real Java client (4.9.8 and 5.5.0).

One real cluster per client line (conformance's shared ``real_rocketmq``, whose broker checks half
messages back within seconds) and one ``rmqtwin proxy`` process in front of it are shared by the tests
of that line; every test uses its own topic and group. The clients are given the proxy's address as
their only setting. Only the broker-kill test starts (and kills) a cluster of its own.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.command import RemotingCommand
from rmqtwin.probe import BlockingChannel
from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    REC_CLOSE,
    REC_FRAME,
    REC_OPEN,
    Record,
    read_records,
    segment_paths,
)
from rmqtwin.proxy.pcap import frames_by_direction, from_pcap, to_pcap
from rmqtwin.proxy.process import ProxyProcess, start_proxy
from rmqtwin.proxy.stats import pair_exchanges, request_topic
from rmqtwin.proxy.wire import peek_header
from tests.proxy.frames import json_frame

launcher = pytest.importorskip("rmqtwin.conformance.launcher")
pytest.importorskip("rmqtwin.conformance.pytest_plugin")

pytestmark = [
    pytest.mark.java,
    pytest.mark.real,
    pytest.mark.skipif(launcher.java_available() is not None, reason=str(launcher.java_available())),
]

SEND_CODES = {10, 310, 320}


@dataclass
class Line:
    version: str
    rmq: Any
    proxy: ProxyProcess
    client: Any


@pytest.fixture(scope="session")
def proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], ProxyProcess]]:
    """One ``rmqtwin proxy`` process per real name server, shared by the session, checked at the end:
    a clean exit, and no error logged (an exception in a connection callback would close it)."""
    started: dict[str, ProxyProcess] = {}

    def proxy_for(namesrv: str) -> ProxyProcess:
        proxy = started.get(namesrv)
        if proxy is None or proxy.process.poll() is not None:
            where = tmp_path_factory.mktemp("proxy") / "session.rmqcap"
            proxy = started[namesrv] = start_proxy(namesrv, where)
        return proxy

    yield proxy_for
    for proxy in started.values():
        rc = proxy.stop()
        assert rc == 0, proxy.log()
        assert "Unhandled Error" not in proxy.log(), proxy.log()


@pytest.fixture
def line(real_rocketmq: Any, java_client: Any, proxies: Callable[[str], ProxyProcess]) -> Line:
    """The shared real cluster of this line (conformance's ``real_rocketmq``) with a proxy before it."""
    return Line(real_rocketmq.version.line, real_rocketmq, proxies(real_rocketmq.namesrv_addr), java_client)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def records_when(
    proxy: ProxyProcess, done: Callable[[list[Record]], bool], timeout: float = 15.0
) -> list[Record]:
    """The capture as soon as ``done`` holds for it (the recorder's writer thread writes a few ms behind
    the traffic); after ``timeout`` the capture as it is, for the assertions to show what is missing."""
    deadline = time.monotonic() + timeout
    while True:
        records = proxy.records()
        if done(records) or time.monotonic() > deadline:
            return records
        time.sleep(0.05)


def mark(proxy: ProxyProcess) -> int:
    """A connection of our own through the proxy, once recorded: every later connection has a higher id."""
    with BlockingChannel(proxy.namesrv) as channel:
        answer = _call(channel, json_frame(106, 77))
        local = channel.sock.getsockname()[1]
    assert answer.is_response

    def ours(records: list[Record]) -> list[Record]:
        return [
            r
            for r in records
            if r.type == REC_FRAME
            and r.direction == DIR_TO_CLIENT
            and r.opaque == 77
            and r.client.port == local
        ]

    [answered] = ours(records_when(proxy, lambda records: bool(ours(records))))
    return answered.conn_id


def send_requests(records: list[Record], topic: str) -> list[Record]:
    return [
        r
        for r in records
        if r.type == REC_FRAME
        and r.direction == DIR_TO_SERVER
        and r.decoded
        and not r.rpc_flag & 1
        and r.code in SEND_CODES
        and request_topic(r) == topic
    ]


def run_scenario(client: Any, namesrv: str, topic: str, group: str) -> tuple[Any, Any, Any]:
    """Sync, async and oneway sends in one producer, a batch producer, then a concurrent push consumer."""
    messages = [
        {"body": f"{mode}-{i}", "mode": mode}
        for mode, n in (("sync", 6), ("async", 6), ("oneway", 3))
        for i in range(n)
    ]
    sent = client.producer(namesrv, topic, messages=messages).check()
    batch = client.producer(namesrv, topic, mode="batch", count=6, batchSize=3, bodyPrefix="batch-").check()
    got = client.push_consumer(namesrv, topic, group=group, expect=21, timeoutMs=60_000).check()
    return sent, batch, got


def observable(sent: Any, batch: Any, got: Any) -> dict[str, Any]:
    """What the application sees, minus ids and times that differ from run to run."""
    return {
        "sent": sorted((e["index"], e["mode"], e.get("status")) for e in sent.sent),
        "batch": sorted((e["index"], e.get("status")) for e in batch.sent),
        "bodies": sorted(e.get("body") or e.get("bodySha256") for e in got.received),
        "consumed": got.summary["consumed"],
        "errors": (len(sent.errors), len(batch.errors), len(got.errors)),
    }


def test_producers_and_push_consumer_through_proxy_match_direct(line: Line) -> None:
    group = unique("g")
    topic = unique("TopicP")
    first_conn = mark(line.proxy) + 1
    via_proxy = run_scenario(line.client, line.proxy.namesrv, topic, group)
    direct = run_scenario(line.client, line.rmq.namesrv_addr, unique("TopicD"), unique("g"))
    assert observable(*via_proxy) == observable(*direct)
    sent, batch, got = via_proxy
    assert {e["msgId"] for e in sent.sent} | {e["msgId"] for e in batch.sent} == {
        e["uniqKey"] for e in got.received
    }
    assert len(got.received) == 21
    # The messages name the proxy's listener for the broker as their store host (test_real_proxy_ids.py).
    assert {e["storeHost"].lstrip("/") for e in got.received} != {line.rmq.broker_addr}

    def unanswered(records: list[Record]) -> list[tuple[int, int, int]]:
        """Requests of this scenario's clients still without their answer in the capture, except
        long-polling pulls still suspended when the consumer shut down, and a last request the
        client itself hung up on (a shutting-down client's final heartbeat: no answer can exist)."""
        mine = [r for r in records if r.conn_id >= first_conn]
        hung_up = {r.conn_id for r in mine if r.type == REC_CLOSE and r.data.startswith(b"client closed")}
        last = {r.conn_id: r.opaque for r in mine if r.type == REC_FRAME and r.direction == DIR_TO_SERVER}
        return [
            (ex.request.conn_id, ex.request.code, ex.request.opaque)
            for ex in pair_exchanges(mine)
            if ex.response is None
            and not ex.oneway
            and ex.request.code != 11
            and not (ex.request.conn_id in hung_up and last[ex.request.conn_id] == ex.request.opaque)
        ]

    def complete(records: list[Record]) -> bool:
        return len(send_requests(records, topic)) >= 17 and not unanswered(records)

    records = records_when(line.proxy, complete)
    assert all(r.decoded for r in records if r.type == REC_FRAME)
    sends = send_requests(records, topic)
    assert len(sends) == 6 + 6 + 3 + 2  # one request per single message, one per batch of three
    oneway = [r for r in sends if r.rpc_flag & 2]
    assert len(oneway) == 3
    # every request of this topic that expects an answer got one, on its own connection, same opaque
    answered = {
        (ex.request.conn_id, ex.request.opaque): ex.response
        for ex in pair_exchanges(records)
        if ex.response is not None
    }
    for req in sends:
        if not req.rpc_flag & 2:
            resp = answered[(req.conn_id, req.opaque)]
            assert resp.code == 0 and resp.direction == DIR_TO_CLIENT
    # the sends went over connections the proxy opened to the real broker
    opens = {r.conn_id: r for r in records if r.type == REC_OPEN}
    for req in sends:
        assert opens[req.conn_id].meta()["kind"] == "broker"
        assert str(req.server) == line.rmq.broker_addr
    pulls = [r for r in records if r.type == REC_FRAME and r.code == 11 and request_topic(r) == topic]
    assert pulls, "the push consumer's pulls went through the proxy"
    # Every request of this scenario's clients that expects an answer has its answer in the capture.
    assert unanswered(records) == []


def orderly_run(line: Line, namesrv: str) -> dict[str, list[str]]:
    """Ordered sends by sharding key to a topic created up front (its queue count must not change
    between the sends, as it does when the first send auto-creates the topic), one orderly consumer."""
    topic = unique("TopicO")
    mqadmin_patiently(line.client, namesrv, "updateTopic", "-c", "rmqtwin", "-t", topic, "-r", "4", "-w", "4")
    messages = [{"body": f"{key}-{i}", "shardingKey": key} for i in range(5) for key in ("k1", "k2")]
    line.client.producer(namesrv, topic, mode="ordered", messages=messages).check()
    got = line.client.push_consumer(
        namesrv, topic, group=unique("go"), expect=10, orderly=True, timeoutMs=60_000
    ).check()
    bodies = [e.get("body") for e in got.received]
    return {key: [b for b in bodies if b.startswith(key)] for key in ("k1", "k2")}


def test_orderly_consumer_through_proxy(line: Line) -> None:
    via_proxy = orderly_run(line, line.proxy.namesrv)
    assert via_proxy == {key: [f"{key}-{i}" for i in range(5)] for key in ("k1", "k2")}


def test_transaction_check_back_flows_back_on_the_producer_connection(line: Line) -> None:
    # The shared cluster checks a half message back 2 s after it was stored (conformance's shared conf).
    topic = unique("TopicT")
    messages = [{"body": f"tx-{i}", "transaction": "unknown", "check": "commit"} for i in range(2)]
    result = line.client.producer(
        line.proxy.namesrv, topic, mode="transaction", messages=messages, expectChecks=2, timeoutMs=60_000
    ).check()
    # Checks of this producer's own half messages are answered COMMIT; a check the listener cannot
    # place (index None: the 5.x broker re-checking a half message it re-wrote) is answered UNKNOW.
    checks = [c for c in result.of("check") if c.get("index") is not None]
    assert len(checks) >= 2 and {c["answer"] for c in checks} == {"COMMIT_MESSAGE"}
    got = line.client.push_consumer(
        line.proxy.namesrv, topic, group=unique("gt"), expect=2, timeoutMs=60_000
    ).check()
    # at-least-once: a half message checked twice before its first commit lands is committed twice (5.x)
    assert {e.get("body") for e in got.received} == {"tx-0", "tx-1"}

    def ends_from_check(records: list[Record]) -> list[Record]:
        producer_conns = {r.conn_id for r in send_requests(records, topic)}
        return [
            r
            for r in records
            if r.type == REC_FRAME
            and r.code == 37
            and r.conn_id in producer_conns
            and r.direction == DIR_TO_SERVER
            and (p := peek_header(r.data))
            and p.ext_fields.get("fromTransactionCheck") == "true"
        ]

    records = records_when(line.proxy, lambda records: len(ends_from_check(records)) >= 2)
    producer_conns = {r.conn_id for r in send_requests(records, topic)}
    check_frames = [r for r in records if r.type == REC_FRAME and r.code == 39 and not r.rpc_flag & 1]
    mine = [r for r in check_frames if r.conn_id in producer_conns]
    assert len(mine) >= 2 and all(r.direction == DIR_TO_CLIENT for r in mine)
    assert len(ends_from_check(records)) >= 2


def mqadmin_patiently(client: Any, ns: str, *args: str) -> Any:
    """mqadmin with one retry when its 3 s call timed out (on a loaded 2-core machine a fresh mqadmin JVM
    can take longer than that to put its first request on the wire), nothing else."""
    result = client.mqadmin(ns, *args)
    if not result.ok and "RemotingTimeoutException" in result.stdout + result.stderr:  # also "caused by"
        result = client.mqadmin(ns, *args)
    return result.check()


def test_mqadmin_through_proxy_sees_the_proxy_addresses(line: Line) -> None:
    ns = line.proxy.namesrv
    cluster = mqadmin_patiently(line.client, ns, "clusterList").stdout
    broker_port = line.rmq.broker_addr.rsplit(":", 1)[1]
    proxy_addrs = re.findall(r"127\.0\.0\.1:\d+", cluster)
    assert proxy_addrs and all(not a.endswith(f":{broker_port}") for a in proxy_addrs), cluster
    assert "broker-a" in cluster
    topic = unique("TopicA")
    mqadmin_patiently(line.client, ns, "updateTopic", "-c", "rmqtwin", "-t", topic)
    assert topic in mqadmin_patiently(line.client, ns, "topicList").stdout
    route = mqadmin_patiently(line.client, ns, "topicRoute", "-t", topic).stdout
    assert proxy_addrs[0] in route and f":{broker_port}" not in route
    status = mqadmin_patiently(line.client, ns, "brokerStatus", "-b", proxy_addrs[0]).stdout
    assert "brokerVersionDesc" in status


def test_real_capture_exports_to_pcap_that_tshark_reassembles(line: Line, tmp_path: Path) -> None:
    tshark = shutil.which("tshark")
    if tshark is None:
        pytest.skip("tshark is not installed (scripts/setup.sh installs it)")
    topic = unique("TopicX")
    line.client.producer(line.proxy.namesrv, topic, count=3, bodySize=3000).check()

    def closed(records: list[Record]) -> bool:
        """The producer's three sends are recorded and its connections closed: the capture is at rest."""
        conns = {r.conn_id for r in send_requests(records, topic)}
        return len(send_requests(records, topic)) >= 3 and conns <= {
            r.conn_id for r in records if r.type == REC_CLOSE
        }

    records_when(line.proxy, closed)
    snapshot = tmp_path / "snap.rmqcap"
    for seg in segment_paths(line.proxy.capture):
        suffix = seg.name[len(line.proxy.capture.name) :]
        shutil.copyfile(seg, tmp_path / f"snap.rmqcap{suffix}")
    pcap = tmp_path / "snap.pcap"
    to_pcap(snapshot, pcap)
    expert = subprocess.run(
        [tshark, "-r", str(pcap), "-q", "-z", "expert"], capture_output=True, text=True, check=True
    ).stdout
    assert "Warning" not in expert and "Error" not in expert
    fields = subprocess.run(
        [
            tshark,
            "-r",
            str(pcap),
            "-T",
            "fields",
            "-e",
            "tcp.stream",
            "-e",
            "tcp.srcport",
            "-e",
            "tcp.payload",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    streams: dict[tuple[int, int], bytearray] = {}
    for row in fields.splitlines():
        parts = row.split("\t")
        if len(parts) == 3 and parts[2]:
            streams.setdefault((int(parts[0]), int(parts[1])), bytearray()).extend(bytes.fromhex(parts[2]))
    recorded = frames_by_direction(snapshot)
    assert sorted(bytes(v) for v in streams.values()) == sorted(recorded.values())
    back = tmp_path / "back.rmqcap"
    from_pcap(
        pcap,
        back,
        server_ports={
            int(line.rmq.namesrv_addr.rsplit(":", 1)[1]),
            int(line.rmq.broker_addr.rsplit(":", 1)[1]),
        },
    )
    assert sorted(frames_by_direction(back).values()) == sorted(recorded.values())


def _call(channel: BlockingChannel, frame: bytes) -> RemotingCommand:
    """``frame`` as written (its opaque is the test's), and the answer."""
    channel.write(frame)
    return channel.read()


def test_killing_the_broker_closes_the_client_side_and_the_proxy_keeps_serving(tmp_path: Path) -> None:
    rmq = launcher.RealRocketMQ("4.9")
    rmq.start()
    proxy = start_proxy(rmq.namesrv_addr, tmp_path / "kill.rmqcap")
    try:
        with BlockingChannel(proxy.namesrv) as ns:
            answer = _call(ns, json_frame(106, 1))
        assert answer.is_response and answer.code == 0
        broker_listener = re.search(rb'"(127\.0\.0\.1:\d+)"', answer.body)
        assert broker_listener is not None
        listener = broker_listener.group(1).decode()
        assert listener != rmq.broker_addr
        client = BlockingChannel(listener)
        info = _call(client, json_frame(28, 2))
        assert info.is_response and info.code == 0
        rmq.brokers[0].process.kill()
        rmq.brokers[0].process.wait(timeout=30)
        client.sock.settimeout(20)
        with contextlib.suppress(ConnectionResetError):
            assert client.sock.recv(65536) == b""  # orderly close, not a hang
        client.close()
        assert proxy.process.poll() is None
        # new sessions are served: the namesrv still answers through the proxy ...
        with BlockingChannel(proxy.namesrv) as ns:
            assert _call(ns, json_frame(106, 3)).is_response
        # ... and a new connection to the dead broker's listener is closed at once, not left hanging
        with BlockingChannel(listener, timeout=20) as again, contextlib.suppress(ConnectionResetError):
            assert again.sock.recv(1) == b""
        assert proxy.process.poll() is None
    finally:
        rc = proxy.stop()
        rmq.stop(graceful=False)
    assert rc == 0
    kinds = [r.meta().get("kind") for r in read_records(proxy.capture) if r.type == REC_OPEN]
    assert kinds.count("broker") == 1 and kinds.count("namesrv") == 2
