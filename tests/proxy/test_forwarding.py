"""The proxy's Twisted wiring, on a MemoryReactor with StringTransports on both sides."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from twisted.internet.address import IPv4Address
from twisted.internet.error import CannotListenError
from twisted.internet.testing import MemoryReactorClock, StringTransport
from twisted.python.failure import Failure

from rmqtwin.codec.message import create_offset_msg_id
from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    FLAG_RAW,
    FLAG_REDACTED,
    FLAG_REWRITTEN,
    REC_CLOSE,
    REC_FRAME,
    REC_OPEN,
    CaptureWriter,
    read_records,
)
from rmqtwin.proxy.faults import FaultEngine
from rmqtwin.proxy.forwarding import KIND_BROKER, ProxiedConnection, RecordingProxy, Upstream
from rmqtwin.proxy.recorder import Recorder
from rmqtwin.proxy.session import Command, Heads, Hook
from rmqtwin.proxy.wire import peek_header
from tests.proxy.frames import CLUSTER_INFO, ROUTE_QUOTED, json_frame


class _Port:
    def __init__(self, port: int) -> None:
        self.port = port

    def getHost(self) -> IPv4Address:
        return IPv4Address("TCP", "127.0.0.1", self.port)

    def stopListening(self) -> None:
        pass


class PortReactor(MemoryReactorClock):
    """A MemoryReactor whose listenTCP(0) hands out distinct port numbers, as a real one does;
    ports in ``taken`` refuse to listen."""

    def __init__(self) -> None:
        super().__init__()
        self._ports = itertools.count(41000)
        self.taken: set[int] = set()

    def listenTCP(self, port: int, factory: Any, backlog: int = 50, interface: str = "") -> _Port:  # type: ignore[override]
        if port in self.taken:
            raise CannotListenError(interface, port, OSError("address in use"))
        self.tcpServers.append((port, factory, backlog, interface))
        return _Port(port or next(self._ports))


def accept(factory: Any, client_port: int = 50000) -> tuple[ProxiedConnection, StringTransport]:
    proto = factory.buildProtocol(IPv4Address("TCP", "127.0.0.1", client_port))
    transport = StringTransport(peerAddress=IPv4Address("TCP", "127.0.0.1", client_port))
    proto.makeConnection(transport)
    return proto, transport


def connect_upstream(reactor: PortReactor, index: int = -1) -> tuple[Any, StringTransport]:
    host, port, factory, _timeout, _bind = reactor.tcpClients[index]
    proto = factory.buildProtocol(IPv4Address("TCP", host, port))
    transport = StringTransport(peerAddress=IPv4Address("TCP", host, port))
    proto.makeConnection(transport)
    return proto, transport


def make_proxy(
    tmp_path: Path | None = None, upstreams: str = "10.0.0.1:9876"
) -> tuple[PortReactor, RecordingProxy]:
    reactor = PortReactor()
    recorder = None
    if tmp_path is not None:
        recorder = Recorder(CaptureWriter(tmp_path / "c.rmqcap"))
    proxy = RecordingProxy(reactor, [Upstream.parse(u) for u in upstreams.split(",")], recorder=recorder)
    proxy.listen(9876)
    return reactor, proxy


def test_client_is_paused_until_upstream_connects_then_producers_are_wired_both_ways() -> None:
    reactor, _proxy = make_proxy()
    conn, client_t = accept(reactor.tcpServers[0][1])
    assert client_t.producerState == "paused"
    host, port = reactor.tcpClients[0][:2]
    assert (host, port) == ("10.0.0.1", 9876)
    up, up_t = connect_upstream(reactor)
    assert client_t.producerState == "producing"
    assert client_t.producer is up.gate and client_t.streaming
    assert up_t.producer is conn.gate and up_t.streaming
    # a full write buffer on the upstream side pauses reading from the client, and only that
    up_t.producer.pauseProducing()
    assert client_t.producerState == "paused"
    up_t.producer.resumeProducing()
    assert client_t.producerState == "producing"


def test_watching_hooks_see_a_read_after_its_bytes_were_written() -> None:
    """The metrics read every header they watch: the adapter forwards a read before its watching
    hooks see it, so the bytes do not wait for them."""
    reactor, proxy = make_proxy()
    seen: list[tuple[int, bytes, bytes]] = []

    class Watcher(Hook):
        def observe(
            self, direction: int, frames: list[bytes], heads: Heads | None, flags: int, out: list[Command]
        ) -> None:
            seen.append((direction, up_t.value(), client_t.value()))

    proxy.hook_factories.append(lambda conn: Watcher())
    conn, client_t = accept(reactor.tcpServers[0][1])
    up, up_t = connect_upstream(reactor)
    request, answer = json_frame(105, 1, ext={"topic": "T"}), json_frame(0, 1, flag=1)
    conn.dataReceived(request)
    up.dataReceived(answer)  # held for rewriting: forwarded frame by frame, then watched
    assert seen == [(DIR_TO_SERVER, request, b""), (DIR_TO_CLIENT, request, answer)]


def test_bytes_are_forwarded_unchanged_and_namesrv_answers_are_rewritten(tmp_path: Path) -> None:
    reactor, proxy = make_proxy(tmp_path)
    conn, client_t = accept(reactor.tcpServers[0][1])
    up, up_t = connect_upstream(reactor)
    request = json_frame(105, 1, ext={"topic": "T"})
    conn.dataReceived(request[:10])
    conn.dataReceived(request[10:])
    assert up_t.value() == request
    answer = json_frame(0, 1, flag=1, body=ROUTE_QUOTED)
    up.dataReceived(answer[:50])
    assert client_t.value() == b""  # held until the frame is whole: it may need rewriting
    up.dataReceived(answer[50:])
    forwarded = client_t.value()
    assert (
        b"10.0.0.5:10911" not in forwarded and b'{"0":"127.0.0.1:41000","1":"127.0.0.1:41001"}' in forwarded
    )
    assert proxy.broker_listeners == {
        ("10.0.0.5:10911", KIND_BROKER): "127.0.0.1:41000",
        ("10.0.0.6:10911", KIND_BROKER): "127.0.0.1:41001",
    }
    # the same broker seen again (cluster info, unquoted keys) reuses its listener
    client_t.clear()
    up.dataReceived(json_frame(0, 2, flag=1, body=CLUSTER_INFO))
    assert b'{0:"127.0.0.1:41000"}' in client_t.value()
    assert len(reactor.tcpServers) == 5  # the namesrv's, and per broker its listener and its VIP one
    # an answer without addresses passes byte for byte
    client_t.clear()
    plain = json_frame(17, 3, flag=1, remark="No topic route info in name server for the topic: X")
    up.dataReceived(plain)
    assert client_t.value() == plain
    up.connectionLost(Failure(ConnectionError("gone")))
    assert client_t.disconnecting
    conn.connectionLost(Failure(ConnectionError("closed")))
    proxy.recorder.close()  # type: ignore[union-attr]
    records = list(read_records(tmp_path / "c.rmqcap"))
    assert [r.type for r in records] == [REC_OPEN, REC_FRAME, REC_FRAME, REC_FRAME, REC_FRAME, REC_CLOSE]
    frames = [r for r in records if r.type == REC_FRAME]
    assert frames[0].data == request and frames[0].direction == DIR_TO_SERVER
    assert frames[1].data == answer and frames[1].flags & FLAG_REWRITTEN  # the original bytes are kept
    assert frames[3].data == plain and not frames[3].flags & FLAG_REWRITTEN
    assert records[-1].data.startswith(b"upstream closed")


def test_broker_listener_pairs_one_to_one_and_carries_broker_initiated_requests(tmp_path: Path) -> None:
    reactor, proxy = make_proxy(tmp_path)
    advertised = proxy.resolve("10.0.0.5:10911", KIND_BROKER)
    assert advertised == "127.0.0.1:41000"
    broker_factory = reactor.tcpServers[1][1]
    producer, producer_t = accept(broker_factory, 50001)
    other, other_t = accept(broker_factory, 50002)
    assert [c[:2] for c in reactor.tcpClients] == [("10.0.0.5", 10911), ("10.0.0.5", 10911)]
    up1, up1_t = connect_upstream(reactor, 0)
    _up2, up2_t = connect_upstream(reactor, 1)
    send = json_frame(310, 7, ext={"a": "g", "b": "T"}, body=b"hello")
    producer.dataReceived(send)
    assert up1_t.value() == send and up2_t.value() == b""
    # the broker asks the producer to check a transaction on that producer's own connection
    check = json_frame(39, 900, flag=2, ext={"msgId": "X", "tranStateTableOffset": "1"}, body=b"record")
    up1.dataReceived(check)
    assert producer_t.value() == check and other_t.value() == b""
    end_tx = json_frame(37, 8, flag=2, ext={"fromTransactionCheck": "true", "msgId": "X"})
    producer.dataReceived(end_tx)
    assert up1_t.value() == send + end_tx
    # bytes that are not frames still flow, and are recorded as raw
    junk = b"\x16\x03\x01\x00\x05hello"
    other.dataReceived(junk)
    assert up2_t.value() == junk
    proxy.recorder.close()  # type: ignore[union-attr]
    recs = [r for r in read_records(tmp_path / "c.rmqcap") if r.type == REC_FRAME]
    by_conn = {(r.conn_id, r.direction, r.code) for r in recs if r.decoded}
    assert by_conn == {
        (producer.conn_id, DIR_TO_SERVER, 310),
        (producer.conn_id, DIR_TO_CLIENT, 39),
        (producer.conn_id, DIR_TO_SERVER, 37),
    }
    raw = [r for r in recs if r.flags & FLAG_RAW]
    assert [(r.conn_id, r.data) for r in raw] == [(other.conn_id, junk)]
    assert recs[0].client.port == 50001 and recs[0].server.port == 10911


def test_client_close_closes_upstream_and_pending_connect_is_cancelled() -> None:
    reactor, _proxy = make_proxy()
    conn, _client_t = accept(reactor.tcpServers[0][1])
    _up, up_t = connect_upstream(reactor)
    conn.connectionLost(Failure(ConnectionError("bye")))
    assert up_t.disconnecting
    conn2, _ = accept(reactor.tcpServers[0][1])
    connector = reactor.connectors[-1]
    connector.state = "connecting"
    stopped: list[bool] = []
    connector.stopConnecting = lambda: stopped.append(True)  # type: ignore[method-assign]
    conn2.connectionLost(Failure(ConnectionError("bye")))
    assert stopped == [True]


def test_namesrv_failover_then_close_when_all_upstreams_fail() -> None:
    reactor, _proxy = make_proxy(upstreams="10.0.0.1:9876,10.0.0.2:9876")
    _conn, client_t = accept(reactor.tcpServers[0][1])
    first = reactor.tcpClients[0]
    first[2].clientConnectionFailed(None, Failure(ConnectionRefusedError()))
    assert reactor.tcpClients[1][:2] != first[:2]
    assert not client_t.disconnecting
    reactor.tcpClients[1][2].clientConnectionFailed(None, Failure(ConnectionRefusedError()))
    assert client_t.disconnecting
    # the next client starts at the other namesrv
    accept(reactor.tcpServers[0][1])
    assert reactor.tcpClients[2][:2] == ("10.0.0.2", 9876)


def test_stop_waits_for_connections_to_close_before_closing_the_capture(tmp_path: Path) -> None:
    reactor, proxy = make_proxy(tmp_path)
    conn, client_t = accept(reactor.tcpServers[0][1])
    up, up_t = connect_upstream(reactor)
    conn.dataReceived(json_frame(105, 1, ext={"topic": "T"}))
    fired: list[bool] = []
    proxy.stop().addCallback(lambda _: fired.append(True))
    assert client_t.disconnecting and up_t.disconnecting
    reactor.advance(0.1)
    assert not fired  # the connection is not gone yet
    up.connectionLost(Failure(ConnectionError("closed")))
    conn.connectionLost(Failure(ConnectionError("closed")))
    reactor.advance(0.1)
    assert fired
    kinds = [r.type for r in read_records(tmp_path / "c.rmqcap")]
    assert kinds == [REC_OPEN, REC_FRAME, REC_CLOSE]


def test_credentials_are_forwarded_intact_and_recorded_masked(tmp_path: Path) -> None:
    reactor, _proxy = make_proxy(tmp_path)
    conn, _client_t = accept(reactor.tcpServers[0][1])
    _up, up_t = connect_upstream(reactor)
    signed = json_frame(105, 1, ext={"topic": "T", "AccessKey": "rocketmq2", "Signature": "Zm9vYmFy"})
    conn.dataReceived(signed)
    assert up_t.value() == signed
    _proxy.recorder.close()  # type: ignore[union-attr]
    [rec] = [r for r in read_records(tmp_path / "c.rmqcap") if r.type == REC_FRAME]
    assert rec.flags & FLAG_REDACTED and len(rec.data) == len(signed)
    assert b"rocketmq2" not in rec.data and b"Zm9vYmFy" not in rec.data and b'"topic":"T"' in rec.data


def test_open_record_names_the_namesrv_actually_reached_after_failover(tmp_path: Path) -> None:
    reactor, proxy = make_proxy(tmp_path, upstreams="10.0.0.1:9876,10.0.0.2:9876")
    accept(reactor.tcpServers[0][1])
    reactor.tcpClients[0][2].clientConnectionFailed(None, Failure(ConnectionRefusedError()))
    connect_upstream(reactor, 1)
    proxy.recorder.close()  # type: ignore[union-attr]
    [opened] = [r for r in read_records(tmp_path / "c.rmqcap") if r.type == REC_OPEN]
    assert opened.meta()["upstream"] == "10.0.0.2:9876" and opened.meta()["kind"] == "namesrv"


def test_each_broker_gets_a_vip_listener_two_ports_below_its_own() -> None:
    reactor, proxy = make_proxy()
    reactor.taken.add(40998)  # the first pair cannot be had: 41000 - 2 is in use
    assert proxy.resolve("10.0.0.5:10911", KIND_BROKER) == "127.0.0.1:41001"
    vip_port, vip_factory = reactor.tcpServers[-1][:2]
    assert vip_port == 40999
    accept(vip_factory)
    assert reactor.tcpClients[-1][:2] == ("10.0.0.5", 10909)


def test_broker_answers_name_the_proxy_in_msg_ids_and_store_hosts(tmp_path: Path) -> None:
    reactor, proxy = make_proxy(tmp_path)
    listener = proxy.resolve("10.0.0.5:10911", KIND_BROKER)
    assert listener == "127.0.0.1:41000"
    _producer, producer_t = accept(reactor.tcpServers[1][1])
    up, _up_t = connect_upstream(reactor)
    answer = json_frame(0, 7, flag=1, ext={"msgId": create_offset_msg_id(("10.0.0.5", 10911), 4096)})
    up.dataReceived(answer[:20])
    assert producer_t.value() == b""  # held until whole: it may name the broker
    up.dataReceived(answer[20:])
    peek = peek_header(producer_t.value())
    assert peek is not None and peek.ext_fields["msgId"] == create_offset_msg_id(("127.0.0.1", 41000), 4096)
    producer_t.clear()
    plain = json_frame(0, 8, flag=1, ext={"queueId": "1"})
    up.dataReceived(plain)
    assert producer_t.value() == plain
    proxy.recorder.close()  # type: ignore[union-attr]
    recs = [r for r in read_records(tmp_path / "c.rmqcap") if r.type == REC_FRAME]
    assert [(r.data, bool(r.flags & FLAG_REWRITTEN)) for r in recs] == [(answer, True), (plain, False)]


def test_fault_rules_delay_answer_and_reset_through_the_adapter() -> None:
    engine = FaultEngine(clock=lambda: 0.0)
    reactor = PortReactor()
    proxy = RecordingProxy(reactor, [Upstream.parse("10.0.0.1:9876")], faults=engine)
    proxy.listen(9876)
    conn, client_t = accept(reactor.tcpServers[0][1])
    _up, up_t = connect_upstream(reactor)
    first, second = json_frame(105, 1), json_frame(105, 2)
    # without rules the bytes pass at once, unsplit
    conn.dataReceived(first[:5])
    assert up_t.value() == first[:5]
    conn.dataReceived(first[5:])
    up_t.clear()
    engine.add({"name": "slow", "effect": "latency", "ms": 200, "count": 1})
    conn.dataReceived(first + second)
    assert up_t.value() == b""  # the delayed frame, and the one behind it, wait
    reactor.advance(0.19)
    assert up_t.value() == b""
    reactor.advance(0.02)
    assert up_t.value() == first + second
    engine.add({"name": "busy", "effect": "answer", "answer_code": "SYSTEM_BUSY", "remark": "busy"})
    conn.dataReceived(first)
    answer = peek_header(client_t.value())
    assert answer is not None and (answer.code, answer.opaque, answer.remark) == (2, 1, "busy")
    engine.reset()
    engine.add({"effect": "reset"})
    conn.dataReceived(second)
    assert client_t.disconnecting and up_t.disconnecting
