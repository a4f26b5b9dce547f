"""The oracle works: real Apache RocketMQ of each line, driven by the real Java client.

One broker per version serves the whole session; each test uses its own topics and groups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable

    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ


def _messages(count: int, modes: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "body": f"body-{i}-{modes[i % len(modes)]}",
            "mode": modes[i % len(modes)],
            "tags": "TagA" if i % 2 else "TagB",
            "keys": [f"key-{i}", "shared"],
            "properties": {"seq": str(i)},
        }
        for i in range(count)
    ]


def test_every_send_mode_is_stored_and_consumed(
    real_rocketmq: RealRocketMQ, java_client: JavaClient, unique_name: Callable[[str], str]
) -> None:
    namesrv = real_rocketmq.namesrv_addr
    topic = unique_name("Sends")
    single = java_client.producer(namesrv, topic, messages=_messages(9, ["sync", "async", "oneway"])).check()
    batch = java_client.producer(
        namesrv, topic, mode="batch", count=4, bodyPrefix="batch-", tags="TagC"
    ).check()
    assert single.summary["sent"] == 9 and single.summary["errors"] == 0, single.errors
    assert batch.summary["sent"] == 4 and batch.summary["errors"] == 0, batch.errors
    for event in single.sent:
        assert event["msgId"] == event["uniqKey"]
        if event["mode"] != "oneway":
            assert event["status"] == "SEND_OK"
            assert event["topic"] == topic and event["brokerName"] == "broker-a"
            assert len(event["offsetMsgId"]) == 32
    # A batch is one SendResult: the ids of its messages, comma-joined, in order.
    assert [e["batchIndex"] for e in batch.sent] == [0, 1, 2, 3]
    assert len({e["queueId"] for e in batch.sent}) == 1

    sent = {e["msgId"]: e for e in single.sent + batch.sent}
    got = java_client.push_consumer(namesrv, topic, unique_name("G"), expect=13, timeoutMs=90_000).check()
    assert not got.summary["timedOut"], got.summary
    received = {e["msgId"]: e for e in got.received}
    assert received.keys() == sent.keys()
    bodies = {f"body-{i}-{['sync', 'async', 'oneway'][i % 3]}" for i in range(9)} | {
        f"batch-{i}" for i in range(4)
    }
    assert {e["body"] for e in got.received} == bodies
    for msg_id, event in received.items():
        assert event["topic"] == topic and event["reconsumeTimes"] == 0
        assert event["storeTimestamp"] >= event["bornTimestamp"] - 1000
        if sent[msg_id].get("offsetMsgId"):
            assert event["offsetMsgId"] == sent[msg_id]["offsetMsgId"]
            assert event["queueOffset"] == sent[msg_id]["queueOffset"]
        if event["body"].startswith("body-"):
            i = int(event["body"].split("-")[1])
            assert event["tags"] == ("TagA" if i % 2 else "TagB")
            assert event["keys"] == f"key-{i} shared"
            assert event["properties"]["seq"] == str(i)


def test_mqadmin_commands_succeed(
    real_rocketmq: RealRocketMQ, java_client: JavaClient, unique_name: Callable[[str], str]
) -> None:
    namesrv = real_rocketmq.namesrv_addr
    topic = unique_name("Admin")
    created = java_client.mqadmin(
        namesrv, "updateTopic", "-c", "rmqtwin", "-t", topic, "-r", "3", "-w", "3"
    ).check()
    assert "success" in created.stdout
    assert topic in java_client.mqadmin(namesrv, "topicList").check().stdout.split()
    route = java_client.mqadmin(namesrv, "topicRoute", "-t", topic).check().stdout
    assert real_rocketmq.broker_addr in route and '"writeQueueNums":3' in route.replace(" ", "")
    clusters = java_client.mqadmin(namesrv, "clusterList").check().stdout
    assert "rmqtwin" in clusters and "broker-a" in clusters
    status = java_client.mqadmin(namesrv, "brokerStatus", "-b", real_rocketmq.broker_addr).check().stdout
    assert "brokerVersionDesc" in status and real_rocketmq.version.server.replace(".", "_") in status
    progress = java_client.mqadmin(namesrv, "consumerProgress").check().stdout
    assert "#Group" in progress


def test_benchmark_producer_reports_throughput(
    real_rocketmq: RealRocketMQ, java_client: JavaClient, unique_name: Callable[[str], str]
) -> None:
    result = java_client.benchmark_producer(
        real_rocketmq.namesrv_addr,
        unique_name("Bench"),
        threads=2,
        bodySize=256,
        durationMs=2000,
        warmupMs=500,
    ).check()
    summary = result.summary
    assert summary["tps"] > 0 and summary["sent"] > 0, summary
    assert 0 < summary["latencyP50Ms"] <= summary["latencyP99Ms"] <= summary["latencyMaxMs"]


def test_broker_rejection_is_reported_with_its_code_and_remark(
    real_rocketmq: RealRocketMQ, java_client: JavaClient, unique_name: Callable[[str], str]
) -> None:
    # The client is allowed 8 MiB and does not compress, so the broker's 4 MiB limit decides.
    result = java_client.producer(
        real_rocketmq.namesrv_addr,
        unique_name("Big"),
        messages=[{"bodySize": 5 * 1024 * 1024}, {"body": "small"}],
        compressOver=1 << 30,
        maxMessageSize=8 << 20,
        retryTimes=0,
    ).check()
    [error] = result.errors
    assert error["index"] == 0
    assert error["exception"] == "org.apache.rocketmq.client.exception.MQBrokerException"
    assert error["responseCode"] == 13  # MESSAGE_ILLEGAL
    assert "4194304" in error["remark"]
    assert [e["index"] for e in result.sent] == [1]  # the connection and broker carry on
