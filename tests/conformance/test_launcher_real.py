"""The launcher against real processes: existing stores, start-up failures, two-broker clusters."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from rmqtwin.conformance.launcher import RealRocketMQ, RealRocketMQError, java_available

if TYPE_CHECKING:
    from collections.abc import Callable

    from rmqtwin.conformance.java_client import JavaClient

pytestmark = [
    pytest.mark.java,
    pytest.mark.real,
    pytest.mark.slow,
    pytest.mark.skipif(java_available() is not None, reason=f"needs Java 17 and Maven: {java_available()}"),
]


def test_broker_restarts_on_its_existing_store(
    tmp_path: Path, java_client_factory: Callable[[str], JavaClient]
) -> None:
    client = java_client_factory("4.9")
    store = tmp_path / "store"
    with RealRocketMQ("4.9", store_dir=store) as first:
        assert first.store_dir == store
        sent = client.producer(first.namesrv_addr, "Kept", count=3).check()
        assert sent.summary["sent"] == 3
    # Stopped cleanly: commitlog, consume queues and config stay; the abort file is gone.
    assert any((store / "commitlog").iterdir())
    assert (store / "consumequeue" / "Kept").is_dir()
    assert not (store / "abort").exists()
    with RealRocketMQ("4.9", store_dir=store) as second:
        got = client.push_consumer(second.namesrv_addr, "Kept", "KeptG", expect=3).check()
    assert sorted(e["msgId"] for e in got.received) == sorted(e["msgId"] for e in sent.sent)
    assert store.is_dir()  # a store passed in is never removed


def test_broker_that_cannot_bind_fails_fast_with_its_log_tail() -> None:
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen(1)
        port = blocker.getsockname()[1]
        rmq = RealRocketMQ("4.9", broker_port=port, start_timeout=90)
        with pytest.raises(RealRocketMQError, match="broker-a exited") as info:
            rmq.start()
    assert "broker-a stdout" in str(info.value)
    assert not rmq.running


def test_two_brokers_form_one_cluster(
    java_client_factory: Callable[[str], JavaClient], unique_name: Callable[[str], str]
) -> None:
    client = java_client_factory("4.9")
    with RealRocketMQ("4.9", brokers=2) as rmq:
        assert len(set(rmq.broker_addrs)) == 2
        clusters = client.mqadmin(rmq.namesrv_addr, "clusterList").check().stdout
        assert "broker-a" in clusters and "broker-b" in clusters
        topic = unique_name("Two")
        sent = client.producer(rmq.namesrv_addr, topic, count=8).check()
        assert {e["brokerName"] for e in sent.sent} == {"broker-a", "broker-b"}
