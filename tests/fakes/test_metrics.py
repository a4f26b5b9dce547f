"""Prometheus metrics of the twin: requests, answers from its dispatcher, offsets and lag from the store."""

from __future__ import annotations

from typing import Any

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from twisted.internet.task import Clock

from rmqtwin.codec.codes import RequestCode
from rmqtwin.fakes.metrics import TwinMetrics
from tests.fakes.helpers import Peer, make_broker, send_v2


def test_twin_counts_requests_answers_offsets_and_lag(tmp_path: Any) -> None:
    clock = Clock()
    clock.advance(1_700_000_000)
    broker = make_broker(tmp_path, clock)
    try:
        metrics = TwinMetrics(lambda: broker)
        metrics.watch(broker.dispatcher)
        peer = Peer(broker.dispatcher, clock, on_close=broker.channel_closed)
        for body in (b"a", b"b", b"c"):
            send_v2(peer, "Orders", body)
        peer.call(
            RequestCode.UPDATE_CONSUMER_OFFSET,
            {"consumerGroup": "CG", "topic": "Orders", "queueId": 0, "commitOffset": 1},
        )
        text = generate_latest(metrics.registry).decode()
        got = {
            (s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }
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
    finally:
        broker.shutdown()
