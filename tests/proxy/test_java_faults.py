"""Fault rules proven with the real Java client (4.9.8 and 5.5.0): the proxy's rules in front of real
RocketMQ (4.9.7 / 5.5.0, conformance's shared cluster of the line) and the twin's own rules
(``rocketmq.faults``), each fault giving the behaviour the client's source documents.

Each scenario asserts one observation per client line, the same through the proxy in front of the real
broker as on the twin; docs/faults.md tables them. Every rule names the scenario's own topic (and
group), so the shared twins and clusters are left as they were found.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from rmqtwin.conformance.java_client import DriverResult, JavaClient
from rmqtwin.fakes.pytest_plugin import TwinFaultControl
from rmqtwin.proxy.process import ProxyProcess, start_proxy
from tests.fakes.helpers import wait_until
from tests.fakes.java_target import Target, make_target

pytestmark = pytest.mark.java

TARGETS = [
    "rmqtwin-client4.9",
    "rmqtwin-client5",
    pytest.param("real-4.9", marks=pytest.mark.real),
    pytest.param("real-5", marks=pytest.mark.real),
]

SENDS = ["SEND_MESSAGE", "SEND_MESSAGE_V2"]


@dataclass
class Faulty:
    """Where the client connects (the twin, or a proxy in front of the real cluster) and its rules."""

    target: Target
    namesrv: str
    faults: TwinFaultControl
    line: str

    @property
    def client(self) -> JavaClient:
        return self.target.client

    def hits(self, rule: dict[str, Any]) -> int:
        return int(self.faults.get(rule["name"])["hits"])


@pytest.fixture(scope="session")
def fault_proxies(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], ProxyProcess]]:
    """One forwarding ``rmqtwin proxy`` with its fault API per real name server, shared by the session;
    checked at the end for a clean exit and no error logged."""
    started: dict[str, ProxyProcess] = {}

    def proxy_for(namesrv: str) -> ProxyProcess:
        proxy = started.get(namesrv)
        if proxy is None or proxy.process.poll() is not None:
            where = tmp_path_factory.mktemp("fault-proxy") / "proxy"
            proxy = started[namesrv] = start_proxy(namesrv, where, record=False, faults=True)
        return proxy

    yield proxy_for
    for proxy in started.values():
        assert proxy.stop() == 0, proxy.log()
        assert "Unhandled Error" not in proxy.log(), proxy.log()


@pytest.fixture(params=TARGETS)
def faulty(
    request: pytest.FixtureRequest,
    java_client_factory: Callable[[str], JavaClient],
    rocketmq_factory: Any,
    fault_proxies: Callable[[str], ProxyProcess],
) -> Iterator[Faulty]:
    target = make_target(request, java_client_factory, rocketmq_factory)
    if target.faults is not None:
        namesrv, faults = target.namesrv_addr, target.faults
    else:
        proxy = fault_proxies(target.namesrv_addr)
        namesrv, faults = proxy.namesrv, TwinFaultControl(url=proxy.faults_url)
    line = "4.9" if target.name.endswith("4.9") else "5"
    yield Faulty(target, namesrv, faults, line)
    faults.reset()


def errors_by_mode(result: DriverResult) -> dict[str, dict[str, Any]]:
    return {str(e["mode"]): e for e in result.of("error")}


def chain(error: dict[str, Any]) -> list[str]:
    """The exception's class and its causes, by simple name."""
    return [name.rpartition(".")[2] for name in [error["exception"], *error.get("causes", [])]]


RETRIED = {
    # MQBrokerException codes the producer retries (DefaultMQProducer's retryResponseCodes): 5.x added
    # SYSTEM_BUSY; 4.9.x gives it to the caller.
    "SYSTEM_BUSY": {"4.9": False, "5": True},
    "SERVICE_NOT_AVAILABLE": {"4.9": True, "5": True},
}


@pytest.mark.parametrize("code", sorted(RETRIED))
def test_sync_send_answered_busy_is_retried_as_documented(
    faulty: Faulty, unique_name: Callable[[str], str], code: str
) -> None:
    topic = unique_name("FaultBusy")
    faulty.target.create_topic(topic)
    rule = faulty.faults.add(
        effect="answer", codes=SENDS, topic=topic, answer_code=code, remark=f"[fault] {code}", count=1
    )
    result = faulty.client.producer(
        faulty.namesrv, topic, group=unique_name("pg"), count=1, retryTimes=2, sendTimeoutMs=10_000
    ).check()
    assert faulty.hits(rule) == 1
    if RETRIED[code][faulty.line]:
        assert [e["status"] for e in result.sent] == ["SEND_OK"], result.events
        assert result.of("error") == []
    else:
        [error] = result.of("error")
        assert (error["responseCode"], error["remark"]) == (2, f"[fault] {code}"), error
        assert result.sent == []


ASYNC_TIMEOUT = {
    # what an async send's callback gets when its answer never comes
    "4.9": ["MQClientException"],
    "5": ["MQClientException", "RemotingTimeoutException"],
}


def test_dropped_send_answer_times_out_sync_and_async(
    faulty: Faulty, unique_name: Callable[[str], str]
) -> None:
    """The broker stores both messages; their answers never reach the client.

    The async send goes first and its callback is awaited: a sync send's timeout makes both client lines
    close the channel (clientCloseSocketIfTimeout), and an async send still on it, or sent before the close
    completes, fails at once with "send request failed" instead of timing out."""
    topic = unique_name("FaultDrop")
    faulty.target.create_topic(topic)
    rule = faulty.faults.add(effect="drop", direction="response", codes=SENDS, topic=topic, count=2)
    result = faulty.client.producer(
        faulty.namesrv,
        topic,
        group=unique_name("pg"),
        messages=[{"body": "async", "mode": "async"}, {"body": "sync", "mode": "sync"}],
        awaitEach=True,
        retryTimes=0,
        sendTimeoutMs=2000,
    ).check()
    # The client gives up after sendMsgTimeout whether or not the broker has handled the send yet: the
    # second drop may come after the driver reports, on a loaded machine.
    wait_until(
        lambda: faulty.hits(rule) >= 2,
        f"the broker's second dropped answer (hits when the client reported: {faulty.hits(rule)};"
        f" its events: {result.events})",
        timeout=15,
    )
    assert faulty.hits(rule) == 2
    errors = errors_by_mode(result)
    assert result.sent == [] and sorted(errors) == ["async", "sync"], result.events
    sync, callback = errors["sync"], errors["async"]
    assert chain(sync) == ["MQClientException", "RemotingTimeoutException"], sync
    assert str(sync["message"]).startswith("Send [1] times, still failed"), sync
    assert chain(callback) == ASYNC_TIMEOUT[faulty.line], callback
    assert str(callback["message"]).startswith("wait response timeout"), callback
    for error in errors.values():
        assert error["latencyMs"] >= 1800, error  # sendMsgTimeout, not a failure of its own


def test_push_consumer_backs_off_after_busy_pulls_and_resumes(
    faulty: Faulty, unique_name: Callable[[str], str]
) -> None:
    """The first pull of each of the 4 queues is answered SYSTEM_BUSY: the consumer pulls that queue
    again after pullTimeDelayMillsWhenException (set to 3 s here; 1 s by default on both lines) and
    then consumes everything."""
    topic, group = unique_name("FaultBackoff"), unique_name("cg")
    faulty.target.create_topic(topic)
    faulty.client.producer(faulty.namesrv, topic, group=unique_name("pg"), count=4).check()
    rule = faulty.faults.add(
        effect="answer", codes=["PULL_MESSAGE"], topic=topic, group=group, answer_code="SYSTEM_BUSY", count=4
    )
    result = faulty.client.push_consumer(
        faulty.namesrv, topic, group, expect=4, pullDelayOnExceptionMs=3000, timeoutMs=60_000
    ).check()
    assert faulty.hits(rule) == 4
    assert result.summary["consumed"] == 4 and not result.summary["timedOut"], result.events
    [started] = result.of("started")
    waited = min(e["ts"] for e in result.received) - started["ts"]
    # backed off: nothing before the second pulls, 3 s after the first
    assert waited >= 2000, (waited, result.events)


def test_duplicated_delivery_reaches_the_listener_twice(
    faulty: Faulty, unique_name: Callable[[str], str]
) -> None:
    topic, group = unique_name("FaultDup"), unique_name("cg")
    faulty.target.create_topic(topic, queues=1)  # one queue: the first pull answer holds the message
    [sent] = faulty.client.producer(faulty.namesrv, topic, group=unique_name("pg"), count=1).check().sent
    rule = faulty.faults.add(effect="duplicate", codes=["PULL_MESSAGE"], topic=topic, group=group, count=1)
    result = faulty.client.push_consumer(
        faulty.namesrv, topic, group, expect=1, settleMs=1500, timeoutMs=60_000
    ).check()
    assert faulty.hits(rule) == 1
    assert [(e["msgId"], e["queueOffset"]) for e in result.received] == [(sent["msgId"], 0)] * 2
    assert result.summary["deliveries"] == 2


def test_corrupted_delivery_fails_its_body_crc(faulty: Faulty, unique_name: Callable[[str], str]) -> None:
    """Neither client line checks body CRCs when it consumes: the corrupted message reaches the listener,
    and its body no longer matches the bodyCRC the broker stored, which is what a checking consumer sees.
    Flipping the first byte back gives the stored CRC again, so nothing else was changed."""
    topic, group = unique_name("FaultCorrupt"), unique_name("cg")
    faulty.target.create_topic(topic, queues=1)  # one queue: the first pull answer holds the message
    [sent] = faulty.client.producer(faulty.namesrv, topic, group=unique_name("pg"), count=1).check().sent
    rule = faulty.faults.add(effect="corrupt", codes=["PULL_MESSAGE"], topic=topic, group=group, count=1)
    result = faulty.client.push_consumer(
        faulty.namesrv, topic, group, expect=1, settleMs=1000, timeoutMs=60_000
    ).check()
    assert faulty.hits(rule) == 1
    [got] = result.received
    assert got["msgId"] == sent["msgId"]
    body = base64.b64decode(got["bodyBase64"]) if "bodyBase64" in got else str(got["body"]).encode()
    restored = bytes([body[0] ^ 0xFF]) + body[1:]
    assert zlib.crc32(body) & 0x7FFFFFFF != got["bodyCRC"]  # UtilAll.crc32: CRC32 & 0x7FFFFFFF
    assert zlib.crc32(restored) & 0x7FFFFFFF == got["bodyCRC"]


def test_connection_reset_mid_run_of_sends_recovers(
    faulty: Faulty, unique_name: Callable[[str], str]
) -> None:
    """The 4th of 8 sync sends resets the producer's connection: the client fails that send at once
    (not after sendMsgTimeout) and resends it on a new connection; every send succeeds."""
    topic = unique_name("FaultReset")
    faulty.target.create_topic(topic)
    rule = faulty.faults.add(effect="reset", codes=SENDS, topic=topic, skip=3, count=1)
    result = faulty.client.producer(
        faulty.namesrv, topic, group=unique_name("pg"), count=8, retryTimes=2, sendTimeoutMs=3000
    ).check()
    assert faulty.hits(rule) == 1
    assert result.of("error") == [], result.events
    assert sorted(e["index"] for e in result.sent) == list(range(8))
    [resent] = [e for e in result.sent if e["index"] == 3]
    assert resent["latencyMs"] < 3000, resent  # within one sendMsgTimeout: failed fast, then resent
