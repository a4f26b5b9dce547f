"""The drivers' richer scenarios against real Apache RocketMQ: order, transactions, retries,
tag filters and the lite pull consumer. Each answer here comes from the real broker (the session's
shared cluster of each line)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqtwin.codec.codes import ResponseCode
from tests.fakes.helpers import update_and_create_topic

if TYPE_CHECKING:
    from collections.abc import Callable

    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ


def test_ordered_send_and_orderly_consume_keep_per_key_order(
    real_rocketmq: RealRocketMQ, java_client: JavaClient, unique_name: Callable[[str], str]
) -> None:
    namesrv = real_rocketmq.namesrv_addr
    topic = unique_name("Order")
    messages = [{"body": f"{key}-{i}", "shardingKey": key} for i in range(4) for key in ("k0", "k1")]
    sent = java_client.producer(namesrv, topic, mode="ordered", messages=messages).check()
    assert sent.summary["sent"] == 8
    queue_of = {key: {e["queueId"] for e in sent.sent if e["shardingKey"] == key} for key in ("k0", "k1")}
    assert all(len(queues) == 1 for queues in queue_of.values()), queue_of
    for key in ("k0", "k1"):
        offsets = [e["queueOffset"] for e in sent.sent if e["shardingKey"] == key]
        assert offsets == sorted(offsets)

    got = java_client.push_consumer(namesrv, topic, unique_name("G"), orderly=True, expect=8).check()
    assert not got.summary["timedOut"]
    for key in ("k0", "k1"):
        bodies = [e["body"] for e in got.received if e["body"].startswith(key)]
        assert bodies == [f"{key}-{i}" for i in range(4)]
        assert {e["queueId"] for e in got.received if e["body"].startswith(key)} == queue_of[key]


def test_transaction_commit_is_delivered_and_rollback_is_not(
    real_rocketmq: RealRocketMQ, java_client: JavaClient, unique_name: Callable[[str], str]
) -> None:
    namesrv = real_rocketmq.namesrv_addr
    topic = unique_name("Tx")
    sent = java_client.producer(
        namesrv,
        topic,
        mode="transaction",
        group=unique_name("TxP"),
        messages=[
            # A check-back (the shared broker checks half messages older than 2 s) answers the same.
            {"body": "commit-me", "transaction": "commit", "check": "commit"},
            {"body": "roll-me", "transaction": "rollback", "check": "rollback"},
        ],
    ).check()
    assert [e["answer"] for e in sent.of("local_transaction")] == ["COMMIT_MESSAGE", "ROLLBACK_MESSAGE"]
    assert [e["localTransactionState"] for e in sent.sent] == ["COMMIT_MESSAGE", "ROLLBACK_MESSAGE"]
    got = java_client.push_consumer(namesrv, topic, unique_name("G"), expect=1, settleMs=2000).check()
    assert [e["body"] for e in got.received] == ["commit-me"]
    committed = sent.sent[0]
    assert got.received[0]["msgId"] == committed["msgId"]
    # The committed copy is a new commitlog record, not the half message the send answered with.
    assert got.received[0]["offsetMsgId"] != committed["offsetMsgId"]


def test_reconsume_later_comes_back_through_the_retry_topic(
    real_rocketmq: RealRocketMQ, java_client: JavaClient, unique_name: Callable[[str], str]
) -> None:
    namesrv = real_rocketmq.namesrv_addr
    topic = unique_name("Retry")
    group = unique_name("G")
    messages = [{"body": "again", "keys": "again"}, {"body": "once"}]
    java_client.producer(namesrv, topic, messages=messages).check()
    # An established group's retry topic exists; a brand-new group's is created by its first
    # heartbeat, after the client's first route look-up, and the 5.x client only finds it at
    # the next 30 s route refresh. Create it first so the test waits for the retry, not that
    # (UPDATE_AND_CREATE_TOPIC to the broker, as mqadmin updateTopic sends it).
    retry_topic = f"%RETRY%{group}"
    created = update_and_create_topic(real_rocketmq.broker_addr, retry_topic, queues=1)
    assert created.code == ResponseCode.SUCCESS, created.remark
    got = java_client.push_consumer(
        namesrv,
        topic,
        group,
        expect=2,
        timeoutMs=90_000,
        reconsumeLater={"keys": ["again"], "times": 1},
        delayLevelWhenNextConsume=1,
    ).check()
    assert not got.summary["timedOut"]
    again = [e for e in got.received if e["body"] == "again"]
    assert [(e["answer"], e["reconsumeTimes"]) for e in again] == [
        ("RECONSUME_LATER", 0),
        ("CONSUME_SUCCESS", 1),
    ]
    retried = again[1]
    # The broker stored it in the retry topic and kept the original in RETRY_TOPIC, which the
    # client restores as the topic.
    assert retried["topic"] == topic
    assert retried["properties"]["RETRY_TOPIC"] == topic
    assert [e["reconsumeTimes"] for e in got.received if e["body"] == "once"] == [0]


def test_tag_filter_and_lite_pull_assign_and_subscribe(
    real_rocketmq: RealRocketMQ, java_client: JavaClient, unique_name: Callable[[str], str]
) -> None:
    namesrv = real_rocketmq.namesrv_addr
    topic = unique_name("Filter")
    messages = [{"body": f"m{i}", "tags": "A" if i % 2 else "B"} for i in range(6)]
    java_client.producer(namesrv, topic, messages=messages).check()

    tagged = java_client.push_consumer(
        namesrv, topic, unique_name("G"), expression="A", expect=3, settleMs=1000
    )
    assert sorted(e["body"] for e in tagged.check().received) == ["m1", "m3", "m5"]

    assigned = java_client.lite_pull(namesrv, topic, unique_name("LA"), mode="assign", expect=6).check()
    assert len(assigned.of("started")[0]["assigned"]) >= 4
    assert sorted(e["body"] for e in assigned.received) == [f"m{i}" for i in range(6)]
    subscribed = java_client.lite_pull(namesrv, topic, unique_name("LS"), mode="subscribe", expect=6).check()
    assert sorted(e["body"] for e in subscribed.received) == [f"m{i}" for i in range(6)]
