"""The testcontainers modules with the real Java client: the recording proxy in front of a container
cluster (its capture retrieved to the host), and the reliability of the twin's and real RocketMQ's
containers: a ``docker restart`` keeps every message and committed offset, a SIGKILL during a
SYNC_FLUSH send loop loses no acknowledged message. The README's pytest example runs in
test_readme_example.py.

Images come from scripts/setup.d/40-docker.sh; without an engine these tests skip with its reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.containers import RecordingProxyContainer, RmqtwinContainer, RocketMQContainer
from tests.docker.helpers import capture_show, msg_ids

pytestmark = [pytest.mark.docker, pytest.mark.java, pytest.mark.xdist_group("docker")]

Cluster = RmqtwinContainer | RocketMQContainer
SYNC_FLUSH = {"flushDiskType": "SYNC_FLUSH"}


@pytest.fixture(params=["twin", "real"])
def cluster(request: pytest.FixtureRequest, docker_engine: None) -> Iterator[Cluster]:
    """A SYNC_FLUSH twin or real broker in a container, removed (with its volumes) afterwards."""
    container: Cluster = (
        RmqtwinContainer(broker_conf=SYNC_FLUSH)
        if request.param == "twin"
        else RocketMQContainer(broker_conf=SYNC_FLUSH)
    )
    with container:
        yield container


def _topic(prefix: str) -> str:
    return f"{prefix}{uuid.uuid4().hex[:8]}"


@pytest.mark.slow
def test_restart_keeps_messages_and_committed_offsets(cluster: Cluster) -> None:
    """Messages sent and offsets committed before ``docker restart`` are there after it: a consumer of
    the same group gets exactly the messages sent after the restart."""
    client = JavaClient("5")
    ns = cluster.get_namesrv_address()
    topic, group = _topic("Restart"), _topic("g-restart-")
    before = client.producer(ns, topic, count=20).check()
    got = client.push_consumer(
        ns, topic, group=group, expect=20, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET"
    )
    assert msg_ids(got.check().received) == msg_ids(before.sent)

    cluster.restart()

    ns = cluster.get_namesrv_address()
    reader = client.push_consumer(
        ns, topic, group=_topic("g-reader-"), expect=20, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET"
    )
    assert msg_ids(reader.check().received) == msg_ids(before.sent)
    after = client.producer(ns, topic, count=5).check()
    resumed = client.push_consumer(
        ns, topic, group=group, expect=5, settleMs=3000, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET"
    )
    assert msg_ids(resumed.check().received) == msg_ids(after.sent)


@pytest.mark.slow
def test_sigkill_during_sync_flush_sends_loses_no_acknowledged_message(cluster: Cluster) -> None:
    """SIGKILL the container while the real producer sends one message after another: every send it
    saw acknowledged is consumed after the container starts again."""
    client = JavaClient("5")
    ns = cluster.get_namesrv_address()
    topic = _topic("Kill")
    client.producer(ns, topic, count=1).check()  # the topic exists before the loop
    loop = client.start("producer", {"namesrv": ns, "topic": topic, "count": 100_000, "retryTimes": 0})
    try:
        loop.wait_for_count("sent", 200, timeout=120)
        cluster.restart(kill=True)
    finally:
        loop.kill()
    acknowledged = msg_ids([e for e in loop.result(timeout=30).sent if e.get("status") == "SEND_OK"])
    assert len(acknowledged) >= 200

    got = client.push_consumer(
        cluster.get_namesrv_address(),
        topic,
        group=_topic("g-kill-"),
        expect=len(acknowledged) + 1,
        settleMs=3000,
        timeoutMs=120_000,
        consumeFromWhere="CONSUME_FROM_FIRST_OFFSET",
    )
    missing = acknowledged - msg_ids(got.received)
    assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged messages lost"


@pytest.mark.parametrize("kind", ["twin", pytest.param("real", marks=pytest.mark.slow)])
def test_recording_proxy_container_captures_the_java_client(
    kind: str, docker_engine: None, tmp_path: Path
) -> None:
    """The real Java client through a RecordingProxyContainer in front of a container cluster; the
    capture, copied to the host, opens with ``rmqtwin capture show`` and holds the sends."""
    cluster: Cluster = RmqtwinContainer() if kind == "twin" else RocketMQContainer()
    client = JavaClient("5")
    topic = _topic("Proxied")
    with cluster, RecordingProxyContainer(cluster) as proxy:
        ns = proxy.get_namesrv_address()
        sent = client.producer(ns, topic, count=3).check()
        got = client.push_consumer(
            ns, topic, group=_topic("g-proxy-"), expect=3, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET"
        )
        assert msg_ids(got.check().received) == msg_ids(sent.sent)
        captures = proxy.get_captures(tmp_path, stop=True)
    assert captures, list(tmp_path.rglob("*"))
    shown = capture_show(captures[0])
    assert proxy.get_broker_address() in shown or "GET_ROUTEINFO_BY_TOPIC" in shown
    assert shown.count("SEND_MESSAGE") >= 3, shown[-2000:]
    assert topic in shown
