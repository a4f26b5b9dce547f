"""Prometheus metrics of the proxy: what the session's metrics hook counts, as a scrape shows it."""

from __future__ import annotations

import struct

import orjson
import pytest

from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER
from rmqtwin.proxy.faults import FaultEngine, FaultHook
from rmqtwin.proxy.metrics import MetricsHook, ProxyMetrics, code_name, response_name
from rmqtwin.proxy.session import ProxySession
from tests.helpers import scrape
from tests.proxy.frames import binary_frame, json_frame


def test_requests_answers_latency_bytes_connections_capture_and_fault_hits() -> None:
    now = [0]
    metrics = ProxyMetrics(
        lambda: [("broker", 2)], lambda: 5, lambda: (10, 2048, 1, 0), mono_ns=lambda: now[0]
    )
    engine = FaultEngine()
    metrics.common.watch_faults(engine)
    engine.add({"name": "busy", "effect": "answer", "codes": [11]})
    session = ProxySession([FaultHook(engine, "c", "b"), MetricsHook(metrics)])
    send = json_frame(310, 1, ext={"a": "PG", "b": "Orders"}, body=b"x" * 100)
    answer = json_frame(0, 1, flag=1)
    session.receive(DIR_TO_SERVER, send)
    now[0] = 3_000_000  # 3 ms later
    session.receive(DIR_TO_CLIENT, answer)
    session.receive(DIR_TO_SERVER, json_frame(11, 2, ext={"topic": "Orders"}))  # answered by the fault
    got = scrape(metrics.registry)
    assert got[("rocketmq_proxy_requests_total", (("code", "SEND_MESSAGE_V2"),))] == 1
    assert got[("rocketmq_proxy_requests_total", (("code", "PULL_MESSAGE"),))] == 1
    assert (
        got[("rocketmq_proxy_responses_total", (("code", "SEND_MESSAGE_V2"), ("response", "SUCCESS")))] == 1
    )
    latency = (("code", "SEND_MESSAGE_V2"), ("topic", "Orders"))
    assert got[("rocketmq_proxy_request_latency_seconds_count", latency)] == 1
    assert got[("rocketmq_proxy_request_latency_seconds_sum", latency)] == 0.003
    assert (
        got[("rocketmq_proxy_request_latency_seconds_bucket", tuple(sorted((*latency, ("le", "0.0025")))))]
        == 0
    )
    assert (
        got[("rocketmq_proxy_request_latency_seconds_bucket", tuple(sorted((*latency, ("le", "0.005")))))]
        == 1
    )
    assert got[("rocketmq_proxy_bytes_total", (("direction", "to_client"),))] == len(answer)
    assert got[("rocketmq_proxy_bytes_total", (("direction", "to_server"),))] > len(send)
    assert got[("rocketmq_proxy_connections", (("kind", "broker"),))] == 2
    assert got[("rocketmq_proxy_connections_opened_total", ())] == 5
    assert got[("rocketmq_proxy_capture_records_total", ())] == 10
    assert got[("rocketmq_proxy_fault_hits_total", (("effect", "answer"), ("rule", "busy")))] == 1


def _frame(header: dict[str, object], body: bytes = b"") -> bytes:
    raw = orjson.dumps(header)
    return struct.pack(">II", 4 + len(raw) + len(body), len(raw)) + raw + body


def test_counts_each_frame_as_it_passes_whatever_its_serialization_or_key_order() -> None:
    """Counted at once (no scrape needed first), for both serializations, a JSON header in another key
    order, a remark naming the keys, a unicode topic, a oneway request, a broker's check-back
    answered by the client, raw chunks as bytes only."""
    now = [0]
    metrics = ProxyMetrics(lambda: [], lambda: 0, lambda: None, mono_ns=lambda: now[0])
    session = ProxySession([MetricsHook(metrics)])
    session.receive(DIR_TO_SERVER, binary_frame(310, 7, ext={"a": "PG", "b": "Zahlungen-ü"}, body=b"x"))
    session.receive(
        DIR_TO_SERVER,
        _frame({"version": 409, "opaque": 8, "flag": 0, "extFields": {"topic": "Orders"}, "code": 11}),
    )
    session.receive(DIR_TO_SERVER, json_frame(34, 9, flag=2))  # oneway: never answered
    now[0] = 1_000_000
    session.receive(DIR_TO_CLIENT, binary_frame(0, 7, flag=1, remark='"opaque":8,"code":1'))
    remark = '{"code":1,"flag":0,"opaque":9} \u00fc "extFields":{"topic":"X"}'
    session.receive(DIR_TO_CLIENT, _frame({"remark": remark, "flag": 1, "opaque": 8, "code": 19}))
    session.receive(DIR_TO_CLIENT, json_frame(39, 3, ext={"topic": "Orders"}))  # a check-back
    session.receive(DIR_TO_SERVER, json_frame(0, 3, flag=1))
    session.receive(DIR_TO_CLIENT, json_frame(0, 9, flag=1))  # answers nothing that waits
    session.receive(DIR_TO_SERVER, b"\x16\x03\x01garbage")  # goes raw: bytes only
    got = scrape(metrics.registry)
    requests = {k[1][0][1]: v for k, v in got.items() if k[0] == "rocketmq_proxy_requests_total"}
    assert requests == {
        "SEND_MESSAGE_V2": 1,
        "PULL_MESSAGE": 1,
        "HEART_BEAT": 1,
        "CHECK_TRANSACTION_STATE": 1,
    }
    responses = {
        tuple(v for _, v in k[1]): n for k, n in got.items() if k[0] == "rocketmq_proxy_responses_total"
    }
    assert responses == {
        ("SEND_MESSAGE_V2", "SUCCESS"): 1,
        ("PULL_MESSAGE", "PULL_NOT_FOUND"): 1,
        ("CHECK_TRANSACTION_STATE", "SUCCESS"): 1,
    }
    counts = {
        (dict(k[1])["code"], dict(k[1])["topic"]): n
        for k, n in got.items()
        if k[0] == "rocketmq_proxy_request_latency_seconds_count"
    }
    assert counts == {
        ("SEND_MESSAGE_V2", "Zahlungen-ü"): 1,
        ("PULL_MESSAGE", "Orders"): 1,
        ("CHECK_TRANSACTION_STATE", "Orders"): 1,
    }
    assert got[("rocketmq_proxy_bytes_total", (("direction", "to_server"),))] > len(b"\x16\x03\x01garbage")


def test_counts_and_buckets_are_prometheus_clients_own_for_the_same_observations() -> None:
    """The counters and buckets kept as plain numbers read as prometheus_client's Counter and Histogram
    fed the same observations (bounds included: a latency equal to a bound is in that bucket)."""
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from rmqtwin.proxy.metrics import LATENCY_BUCKETS, RequestMetrics

    ours, reference = CollectorRegistry(), CollectorRegistry()
    metrics = RequestMetrics(ours, "m")
    requests = Counter("m_requests", "", ["code"], registry=reference)
    responses = Counter("m_responses", "", ["code", "response"], registry=reference)
    latency = Histogram("m_request_latency_seconds", "", ["code", "topic"], buckets=LATENCY_BUCKETS,
                        registry=reference)  # fmt: skip
    seconds = [0.0, *LATENCY_BUCKETS, 0.0007, 0.003, 31.0, 0.004, 0.0005]
    for n, took in enumerate(seconds):
        code, response, topic = (310, 0, "T") if n % 3 else (11, 19 if n % 2 else 0, None)
        metrics.answer(metrics.request(code, topic), response, took)
        requests.labels(code_name(code)).inc()
        responses.labels(code_name(code), response_name(response)).inc()
        latency.labels(code_name(code), topic or "").observe(took)

    got, want = scrape(ours), scrape(reference)
    assert got == pytest.approx(want)
    assert got[("m_requests_total", (("code", "SEND_MESSAGE_V2"),))] == sum(
        1 for n in range(len(seconds)) if n % 3
    )


def test_each_waiting_request_keeps_its_own_labels_whatever_order_the_answers_come_in() -> None:
    """A waiting request keeps the answers of its code and topic (no label key built per answer): with
    topics changing from request to request, answers out of order, an opaque used again once answered,
    a binary header and JSON headers the typed decoder refuses (codes written as strings, a topic as a
    number), the scrape is prometheus_client's own Counter and Histogram fed the same observations."""
    from prometheus_client import CollectorRegistry, Counter, Histogram

    from rmqtwin.proxy.metrics import LATENCY_BUCKETS

    now = [0]
    metrics = ProxyMetrics(lambda: [], lambda: 0, lambda: None, mono_ns=lambda: now[0])
    session = ProxySession([MetricsHook(metrics)])
    reference = CollectorRegistry()
    requests = Counter("rocketmq_proxy_requests", "", ["code"], registry=reference)
    responses = Counter("rocketmq_proxy_responses", "", ["code", "response"], registry=reference)
    latency = Histogram("rocketmq_proxy_request_latency_seconds", "", ["code", "topic"],
                        buckets=LATENCY_BUCKETS, registry=reference)  # fmt: skip
    sent: dict[int, tuple[int, str, int]] = {}

    def request(at_ms: int, opaque: int, code: int, topic: str, frame: bytes) -> None:
        now[0] = at_ms * 1_000_000
        session.receive(DIR_TO_SERVER, frame)
        requests.labels(code_name(code)).inc()
        sent[opaque] = (code, topic, at_ms)

    def answer(at_ms: int, opaque: int, response: int, frame: bytes) -> None:
        now[0] = at_ms * 1_000_000
        session.receive(DIR_TO_CLIENT, frame)
        code, topic, then = sent.pop(opaque)
        responses.labels(code_name(code), response_name(response)).inc()
        latency.labels(code_name(code), topic).observe((at_ms - then) / 1000)

    request(0, 1, 310, "A", json_frame(310, 1, ext={"a": "PG", "b": "A"}, body=b"x"))
    request(1, 2, 310, "B", json_frame(310, 2, ext={"a": "PG", "b": "B"}))
    request(1, 3, 11, "A", json_frame(11, 3, ext={"consumerGroup": "CG", "topic": "A"}))
    request(2, 4, 310, "C", binary_frame(310, 4, ext={"a": "PG", "b": "C"}))
    request(3, 5, 310, "D", _frame({"code": "310", "extFields": {"b": "D"}, "flag": 0, "opaque": 5}))
    request(3, 6, 11, "7", _frame({"code": 11, "extFields": {"topic": 7}, "flag": 0, "opaque": 6}))
    answer(4, 3, 19, json_frame(19, 3, flag=1, ext={"suggestWhichBrokerId": "0"}))
    answer(9, 2, 0, json_frame(0, 2, flag=1))
    answer(30, 5, 0, _frame({"code": "0", "flag": "1", "opaque": 5}))
    answer(31, 1, 2, json_frame(2, 1, flag=1, remark="too busy"))
    session.receive(DIR_TO_CLIENT, json_frame(0, 1, flag=1))  # a second answer to 1: nothing waits
    answer(700, 4, 0, binary_frame(0, 4, flag=1))
    answer(701, 6, 0, json_frame(0, 6, flag=1))
    request(800, 1, 310, "B", json_frame(310, 1, ext={"a": "PG", "b": "B"}))  # opaque 1 again
    answer(800, 1, 14, json_frame(14, 1, flag=1))
    for n in range(6):  # the same label sets again, topics alternating, answered in reverse
        request(900 + n, 10 + n, 310, "AB"[n % 2], json_frame(310, 10 + n, ext={"b": "AB"[n % 2]}))
    for n in reversed(range(6)):
        answer(1000 + n, 10 + n, 0, json_frame(0, 10 + n, flag=1))
    assert not sent

    families = (
        "rocketmq_proxy_requests",
        "rocketmq_proxy_responses",
        "rocketmq_proxy_request_latency_seconds",
    )
    got, want = scrape(metrics.registry, families), scrape(reference, families)
    assert got == pytest.approx(want)
    assert (
        got[("rocketmq_proxy_request_latency_seconds_count", (("code", "SEND_MESSAGE_V2"), ("topic", "B")))]
        == 5
    )
