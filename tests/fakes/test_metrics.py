"""Prometheus metrics of the twin: requests, answers from its dispatcher, offsets and lag from the store."""

from __future__ import annotations

from typing import Any

from twisted.internet.address import IPv4Address
from twisted.internet.testing import StringTransport

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.command import create_request
from rmqtwin.codec.connection import RemotingConnection
from rmqtwin.fakes.metrics import TwinMetrics
from rmqtwin.fakes.server import RemotingServerFactory
from tests.fakes.helpers import Peer, clocked_broker, heartbeat, send_v2
from tests.helpers import scrape


def test_twin_counts_requests_answers_offsets_and_lag(tmp_path: Any) -> None:
    with clocked_broker(tmp_path) as (broker, clock):
        metrics = TwinMetrics(lambda: broker)
        metrics.watch(broker.dispatcher)
        peer = Peer(broker.dispatcher, clock, on_close=broker.channel_closed)
        for body in (b"a", b"b", b"c"):
            send_v2(peer, "Orders", body)
        heartbeat(peer, "CG", "Orders")
        peer.call(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "CG", "topic": "Orders", "queueId": 0, "commitOffset": 1},
        )
        got = scrape(metrics.registry)
        assert got[("rocketmq_twin_requests_total", (("code", "SEND_MESSAGE_V2"),))] == 3
        assert (
            got[("rocketmq_twin_responses_total", (("code", "SEND_MESSAGE_V2"), ("response", "SUCCESS")))]
            == 3
        )
        assert (
            got[
                (
                    "rocketmq_twin_request_latency_seconds_count",
                    (("code", "SEND_MESSAGE_V2"), ("topic", "Orders")),
                )
            ]
            == 3
        )
        assert got[("rocketmq_twin_max_offset", (("queue", "0"), ("topic", "Orders")))] == 3
        assert got[("rocketmq_twin_messages_stored", ())] >= 3
        assert (
            got[("rocketmq_twin_consumer_lag", (("group", "CG"), ("queue", "0"), ("topic", "Orders")))] == 2
        )


def test_twin_counts_connections_bytes_and_flush_latency(tmp_path: Any) -> None:
    with clocked_broker(tmp_path) as (broker, clock):
        metrics = TwinMetrics(lambda: broker)
        factory = RemotingServerFactory(broker.dispatcher, clock)
        metrics.watch_server("broker", factory)
        client = RemotingConnection(first_opaque=1)
        transports = []
        for port in (50001, 50002):
            transport = StringTransport(peerAddress=IPv4Address("TCP", "127.0.0.1", port))
            proto = factory.buildProtocol(transport.getPeer())
            proto.makeConnection(transport)
            transports.append((proto, transport))
        proto, transport = transports[0]
        request = create_request(RequestCode.GET_BROKER_CONFIG, None)
        client.send_request(request, now=clock.seconds(), timeout=10)
        sent = client.data_to_send()
        proto.dataReceived(sent)
        answer = transport.value()
        assert answer
        transports[1][0].connectionLost(None)

        flushes_before = broker.store.flush_latency.cumulative()[-1][1]
        peer = Peer(broker.dispatcher, clock)
        send_v2(peer, "Orders", b"x" * 20_000)  # the 4 dirty pages a periodic flush waits for
        clock.advance(1)  # the periodic commitlog flush
        got = scrape(metrics.registry)
        assert got[("rocketmq_twin_connections", (("server", "broker"),))] == 1
        assert got[("rocketmq_twin_connections_opened_total", (("server", "broker"),))] == 2
        received = (("direction", "received"), ("server", "broker"))
        assert got[("rocketmq_twin_bytes_total", received)] == len(sent)
        assert got[("rocketmq_twin_bytes_total", (("direction", "sent"), ("server", "broker")))] == len(
            answer
        )
        flushed = got[("rocketmq_twin_flush_latency_seconds_count", ())]
        assert flushed == flushes_before + 1
        assert got[("rocketmq_twin_flush_latency_seconds_bucket", (("le", "+Inf"),))] == flushed
        assert got[("rocketmq_twin_flush_latency_seconds_sum", ())] > 0
