"""Real-Java-client checks against rmqtwin and real Apache RocketMQ that the scenario catalog does not
make yet (the catalog, conformance/catalog/, runs in tests/conformance/test_catalog.py).

Targets: rmqtwin with the 4.9.8 client and with the 5.5.0 client, real 4.9.7 (client 4.9.8), and
real 5.5.0. The real brokers are the suite's shared ``real_rocketmq_factory`` instances (cluster
``rmqtwin``, the shared broker.conf); the twin gets the same settings (``TWIN_BROKER_CONF``).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from rmqtwin.codec.codes import RequestCode
from tests.fakes.helpers import call
from tests.fakes.java_target import Target, target_fixture

pytestmark = [pytest.mark.java]

TARGETS = [
    "rmqtwin-client4.9",
    "rmqtwin-client5",
    pytest.param("real-4.9", marks=pytest.mark.real),
    pytest.param("real-5", marks=pytest.mark.real),
]


target = target_fixture(TARGETS)


def _shape(text: str) -> list[str]:
    """The header line(s) of an mqadmin table: what must match between twin and real broker."""
    return [line.split() for line in text.splitlines() if line.startswith("#")][:1]  # type: ignore[return-value]


MQADMIN_SHAPES = {
    "clusterList": ["#Cluster", "Name", "#Broker", "Name", "#BID", "#Addr", "#Version"],
    "topicStatus": ["#Broker", "Name", "#QID", "#Min", "Offset", "#Max", "Offset", "#Last", "Updated"],
    "consumerProgress": ["#Topic", "#Broker", "Name", "#QID", "#Broker", "Offset", "#Consumer", "Offset"],
}


def test_mqadmin_commands(target: Target, unique_name: Callable[[str], str]) -> None:
    if target.name.endswith("5"):
        pytest.skip("mqadmin is checked with the 4.9 tools, against the twin and real 4.9.7")
    ns, client = target.namesrv_addr, target.client
    topic, group = unique_name("Admin"), unique_name("ga")
    target.mqadmin("updateTopic", "-c", "rmqtwin", "-t", topic, "-r", "2", "-w", "2").check()
    assert topic in target.mqadmin("topicList").check().stdout
    route = target.mqadmin("topicRoute", "-t", topic).check().stdout
    assert '"writeQueueNums":2' in route.replace(" ", "")
    client.producer(ns, topic, mode="sync", count=2, timeoutMs=30000).check()
    status = target.mqadmin("topicStatus", "-t", topic).check().stdout
    assert _shape(status)[0][: len(MQADMIN_SHAPES["topicStatus"])] == MQADMIN_SHAPES["topicStatus"]
    assert len([line for line in status.splitlines() if line.startswith("broker-a")]) == 2
    clusters = target.mqadmin("clusterList").check().stdout
    assert _shape(clusters)[0][: len(MQADMIN_SHAPES["clusterList"])] == MQADMIN_SHAPES["clusterList"]
    assert target.broker_addr in clusters
    broker_status = target.mqadmin("brokerStatus", "-b", target.broker_addr).check().stdout
    for key in ("msgPutTotalTodayNow", "putTps", "bootTimestamp", "runtime"):
        assert re.search(rf"^{key}\s+:", broker_status, re.MULTILINE), key
    target.mqadmin("updateSubGroup", "-c", "rmqtwin", "-g", group).check()
    consumer = client.start_push_consumer(ns, topic, group=group, expect=2, timeoutMs=120000, settleMs=120000)
    try:
        consumer.wait_for("received")
        # Offsets reach the broker with the consumer's periodic persist (first after 10 s); until then
        # both brokers answer "consumer not consume any message". Wait for them without a JVM per try.
        deadline = time.monotonic() + 60
        # No topic: the broker then reports the topics the group committed offsets for, as mqadmin asks.
        stats = {"consumerGroup": group}
        while b"brokerOffset" not in (
            call(target.broker_addr, RequestCode.GET_CONSUME_STATS, stats).body or b""
        ):
            assert time.monotonic() < deadline, "the consumer's offsets never reached the broker"
            time.sleep(0.2)
        result = target.mqadmin("consumerProgress", "-g", group)
        progress = result.check().stdout
        assert (
            _shape(progress)[0][: len(MQADMIN_SHAPES["consumerProgress"])]
            == MQADMIN_SHAPES["consumerProgress"]
        )
        connection = target.mqadmin("consumerConnection", "-g", group).check().stdout
        assert "CONSUME_PASSIVELY" in connection and "CLUSTERING" in connection
        producers = target.mqadmin("producerConnection", "-g", "CLIENT_INNER_PRODUCER", "-t", topic).check()
        assert re.search(r"clientId=|\d+\.\d+\.\d+\.\d+@", producers.stdout), producers.stdout
    finally:
        consumer.kill()
        consumer.result(timeout=30)
    config = target.mqadmin("getBrokerConfig", "-b", target.broker_addr).check().stdout
    assert re.search(r"^brokerClusterName\s+=\s+rmqtwin", config, re.MULTILINE)
    deleted = target.mqadmin("deleteTopic", "-c", "rmqtwin", "-t", topic)
    if target.name.startswith("real") and "InaccessibleObjectException" in deleted.stdout + deleted.stderr:
        return  # the real broker's cleanUnusedTopic needs a JDK module opening the launcher does not give it
    deleted.check()
    assert topic not in target.mqadmin("topicList").check().stdout
