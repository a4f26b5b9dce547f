"""5.x broker requests rocketmq-proxy relies on, over plain remoting, on the twin and on real 5.5.0.

Topic attributes (UPDATE_AND_CREATE_TOPIC ``attributes``, GET_TOPIC_CONFIG), GET_SUBSCRIPTIONGROUP_CONFIG
and the send answer's ``transactionId``: every test asserts literal observations, the same for the twin
and for the shared real 5.5.0 cluster, so a twin/real difference fails here. Requests carry the 5.5.0
client's version, as the proxy's do.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import pytest

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.message import Message, MessageExt, decode_message_records, encode_batch
from rmqtwin.conformance.runner import TWIN_BROKER_CONF
from tests.fakes.broker_5x import (
    TARGETS,
    Broker,
    ack_request,
    assert_refuses_missing_topic_and_bad_queue,
    broker_target,
    msg_props,
    pop_request,
    pop_until,
)


@pytest.fixture(scope="session", params=TARGETS)
def broker(request: pytest.FixtureRequest, rocketmq_factory: Any) -> Broker:
    return broker_target(request, rocketmq_factory)


def test_topic_attributes_are_kept_and_answered_by_get_topic_config(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("Fifo")
    assert broker.create_topic(topic, "+message.type=FIFO").code == ResponseCode.SUCCESS
    assert broker.topic_config(topic) == {
        "attributes": {"message.type": "FIFO"},
        "order": False,
        "perm": 6,
        "readQueueNums": 4,
        "topicFilterType": "SINGLE_TAG",
        "topicName": topic,
        "topicSysFlag": 0,
        "writeQueueNums": 4,
    }
    # Changing and removing a changeable attribute; a topic without any shows "attributes":{}.
    assert broker.create_topic(topic, "+message.type=TRANSACTION").code == ResponseCode.SUCCESS
    assert broker.topic_config(topic)["attributes"] == {"message.type": "TRANSACTION"}
    assert broker.create_topic(topic, "-message.type").code == ResponseCode.SUCCESS
    assert broker.topic_config(topic)["attributes"] == {}
    # An update without attributes keeps the ones the topic has.
    assert broker.create_topic(topic, "+message.type=DELAY").code == ResponseCode.SUCCESS
    assert broker.create_topic(topic).code == ResponseCode.SUCCESS
    assert broker.topic_config(topic)["attributes"] == {"message.type": "DELAY"}

    plain = unique_name("Plain")
    assert broker.create_topic(plain).code == ResponseCode.SUCCESS
    assert broker.topic_config(plain)["attributes"] == {}
    nope = unique_name("Nope")
    missing = broker.call(RequestCode.GET_TOPIC_CONFIG, {"topic": nope})
    assert (missing.code, missing.remark) == (
        ResponseCode.TOPIC_NOT_EXIST,
        f"No topic in this broker. topic: {nope}",
    )


@pytest.mark.parametrize(
    ("existing", "attributes", "code", "remark"),
    [
        (
            False,
            "+message.type=MIXED",
            ResponseCode.INVALID_PARAMETER,
            "MIXED message type is not supported.",
        ),
        (False, "+message.type=BOGUS", ResponseCode.SYSTEM_ERROR, None),  # "value is not in set: [...]"
        (False, "+no.such=1", ResponseCode.SYSTEM_ERROR, "unsupported key: no.such"),
        (False, "-message.type", ResponseCode.SYSTEM_ERROR, None),
        (
            False,
            "message.type=FIFO",
            ResponseCode.SYSTEM_ERROR,
            "add/alter attribute format is wrong: message.type",
        ),
        (False, "message.type", ResponseCode.SYSTEM_ERROR, "delete attribute format is wrong: message.type"),
        (False, "+message.type=FIFO,+message.type=NORMAL", ResponseCode.SYSTEM_ERROR, None),
        (False, "+queue.type=Nope", ResponseCode.SYSTEM_ERROR, "value is not in set: [SimpleCQ, BatchCQ]"),
        (True, "+queue.type=SimpleCQ", ResponseCode.SYSTEM_ERROR, None),
        (
            True,
            "-cleanup.policy",
            ResponseCode.SYSTEM_ERROR,
            "attempt to delete a nonexistent key: cleanup.policy",
        ),
        (True, "+reserve.time=x", ResponseCode.SYSTEM_ERROR, 'For input string: "x"'),
    ],
)
def test_bad_topic_attributes_are_refused_as_5_5_0_refuses_them(
    broker: Broker,
    unique_name: Callable[[str], str],
    *,
    existing: bool,
    attributes: str,
    code: int,
    remark: str | None,
) -> None:
    topic = unique_name("Bad")
    if existing:
        assert broker.create_topic(topic).code == ResponseCode.SUCCESS
    answer = broker.create_topic(topic, attributes)
    expected = {
        "+message.type=BOGUS": "value is not in set: "
        "[UNSPECIFIED, MIXED, TRANSACTION, PRIORITY, FIFO, DELAY, LITE, NORMAL]",
        "-message.type": "only add attribute is supported while creating topic. key: message.type",
        "+message.type=FIFO,+message.type=NORMAL": "key duplication: +message.type",
        "+queue.type=SimpleCQ": "attempt to update an unchangeable attribute. key: queue.type",
    }
    assert (answer.code, answer.remark) == (code, remark or expected[attributes])
    if not existing:
        assert (
            broker.call(RequestCode.GET_TOPIC_CONFIG, {"topic": topic}).code == ResponseCode.TOPIC_NOT_EXIST
        )


def test_bad_topic_names_are_invalid_parameters(broker: Broker) -> None:
    answer = broker.create_topic("bad topic")
    assert (answer.code, answer.remark) == (
        ResponseCode.INVALID_PARAMETER,
        "The specified topic: bad topic, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$",
    )
    answer = broker.create_topic("SCHEDULE_TOPIC_XXXX")
    assert (answer.code, answer.remark) == (
        ResponseCode.INVALID_PARAMETER,
        "The topic[SCHEDULE_TOPIC_XXXX] is conflict with system topic.",
    )


def test_get_subscription_group_config_creates_the_group(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    group = unique_name("G")
    answer = broker.call(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {"group": group})
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert fastjson.loads(answer.body or b"") == {
        "attributes": {},
        "brokerId": 0,
        "consumeBroadcastEnable": True,
        "consumeEnable": True,
        "consumeFromMinEnable": True,
        "consumeMessageOrderly": False,
        "consumeTimeoutMinute": 15,
        "groupName": group,
        "groupRetryPolicy": {"type": "CUSTOMIZED"},
        "groupSysFlag": 0,
        "notifyConsumerIdsChangedEnable": True,
        "retryMaxTimes": 16,
        "retryQueueNums": 1,
        "whichBrokerWhenConsumeSlowly": 1,
    }
    # The group now exists: GET_ALL_SUBSCRIPTIONGROUP_CONFIG lists it.
    table = fastjson.loads(broker.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body or b"")
    assert group in table["subscriptionGroupTable"]
    # 5.5.0 does not check the field: its table lookup fails on the null key.
    missing = broker.call(RequestCode.GET_SUBSCRIPTIONGROUP_CONFIG, {})
    assert (missing.code, missing.remark) == (
        ResponseCode.SYSTEM_ERROR,
        'java.lang.NullPointerException: Cannot invoke "Object.hashCode()" because "key" is null, '
        "java.base/java.util.concurrent.ConcurrentHashMap.get(ConcurrentHashMap.java:936)",
    )


def test_send_answers_carry_the_transaction_id(broker: Broker, unique_name: Callable[[str], str]) -> None:
    topic = unique_name("Tid")
    assert broker.create_topic(topic).code == ResponseCode.SUCCESS
    uniq = "7F0000010001000000000000000A0001"
    sent = broker.send(topic, msg_props(UNIQ_KEY=uniq, WAIT="true"))
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    fields = sent.ext_fields or {}
    assert fields["transactionId"] == uniq
    assert {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"} <= fields.keys()
    assert "recallHandle" not in fields
    # A message without a unique id gets one from the broker: the id answered and stored.
    sent = broker.send(topic, msg_props(WAIT="true"), RequestCode.SEND_MESSAGE)
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    assert re.fullmatch(r"[0-9A-F]{32}", (sent.ext_fields or {})["transactionId"])
    # A batch answers its own (batch-level) unique id.
    body = encode_batch([Message(topic=topic, body=b"one", properties={"UNIQ_KEY": uniq[:-1] + "2"})])
    batch = broker.send(
        topic, msg_props(UNIQ_KEY=uniq[:-1] + "3", WAIT="true"), RequestCode.SEND_BATCH_MESSAGE, body
    )
    assert batch.code == ResponseCode.SUCCESS, batch.remark
    assert (batch.ext_fields or {})["transactionId"] == uniq[:-1] + "3"


def test_compacted_topics_refuse_messages_without_keys(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("Compact")
    assert broker.create_topic(topic, "+cleanup.policy=COMPACTION").code == ResponseCode.SUCCESS
    refused = broker.send(topic, msg_props(WAIT="true"))
    assert (refused.code, refused.remark) == (ResponseCode.MESSAGE_ILLEGAL, "Required message key is missing")
    kept = broker.send(topic, msg_props(KEYS="k1", WAIT="true"))
    assert kept.code == ResponseCode.SUCCESS, kept.remark


# -- POP ----------------------------------------------------------------------------------------------


def _extra_info(answer: RemotingCommand, msg: MessageExt, broker_name: str) -> str:
    """What the 5.x client builds as a popped message's ``POP_CK`` (``ExtraInfoUtil.buildExtraInfo``)."""
    fields = answer.ext_fields or {}
    if "POP_CK" in msg.properties:
        return msg.properties["POP_CK"]
    starts = {
        (flag, int(qid)): int(start)
        for flag, qid, start in (part.split(" ") for part in fields["startOffsetInfo"].split(";"))
    }
    start = starts[("0", msg.queue_id)]
    return " ".join(
        str(p)
        for p in (
            start,
            fields["popTime"],
            fields["invisibleTime"],
            fields["reviveQid"],
            "0",
            broker_name,
            msg.queue_id,
            msg.queue_offset,
        )
    )


def test_pop_ack_change_invisible_time_and_revive(broker: Broker, unique_name: Callable[[str], str]) -> None:
    # Short names: the pop retry topic %RETRY%<group>_<topic> must stay within the twin store's 127 bytes.
    topic, group = unique_name("Pop")[-40:], unique_name("PopG")[-40:]
    assert broker.create_topic(topic).code == ResponseCode.SUCCESS
    for i in range(5):
        assert broker.send(topic, msg_props(TAGS="T", KEYS=f"k{i}", WAIT="true")).code == ResponseCode.SUCCESS

    popped = pop_request(broker, topic, group)
    assert (popped.code, popped.remark) == (ResponseCode.SUCCESS, "FOUND")
    fields = popped.ext_fields or {}
    assert fields["invisibleTime"] == "5000"
    assert {"popTime", "reviveQid", "restNum", "startOffsetInfo", "msgOffsetInfo"} <= fields.keys()
    messages = decode_message_records(popped.body or b"")
    assert sorted(m.keys for m in messages) == [f"k{i}" for i in range(5)]
    assert all(m.topic == topic and m.reconsume_times == 0 for m in messages)
    offsets = sorted(f"{m.queue_id}:{m.queue_offset}" for m in messages)
    assert (
        sorted(
            f"{qid}:{o}"
            for flag, qid, listed in (p.split(" ") for p in fields["msgOffsetInfo"].split(";"))
            for o in listed.split(",")
        )
        == offsets
    )

    # Inside the invisible time nothing is left: the pop waits its pollTime, then 210.
    again = pop_request(broker, topic, group)
    assert (again.code, again.remark) == (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")

    by_key = {m.keys: m for m in messages}
    name = "broker-a"
    for key in ("k0", "k1"):
        msg = by_key[key]
        acked = ack_request(broker, topic, group, msg, _extra_info(popped, msg, name))
        assert (acked.code, acked.remark) == (ResponseCode.SUCCESS, None)
    later = by_key["k2"]
    changed = broker.call(
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
        {
            "consumerGroup": group,
            "topic": topic,
            "queueId": str(later.queue_id),
            "extraInfo": _extra_info(popped, later, name),
            "offset": str(later.queue_offset),
            "invisibleTime": "60000",
        },
    )
    assert changed.code == ResponseCode.SUCCESS, changed.remark
    assert (changed.ext_fields or {})["invisibleTime"] == "60000"
    assert {"popTime", "reviveQid"} <= (changed.ext_fields or {}).keys()

    # The two neither acked nor changed come back after the invisible time, retried once.
    revived = pop_until(broker, topic, group, 2)
    assert sorted(m.keys for m in revived) == ["k3", "k4"]
    # Revived through the group's own pop retry topic, created on the way with one queue.
    retry = broker.topic_config(f"%RETRY%{group}_{topic}")
    assert (retry["readQueueNums"], retry["writeQueueNums"], retry["perm"]) == (1, 1, 6)
    for msg in revived:
        assert msg.topic == topic and msg.reconsume_times == 1
        assert msg.properties["POP_CK"].split(" ")[4] == "1"  # answered from the pop retry topic
        assert "1ST_POP_TIME" in msg.properties


def test_a_revived_pop_message_at_int_max_reconsume_times_wraps_as_a_java_int(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    """reconsumeTimes is a Java int: a message sent with Integer.MAX_VALUE, popped and not acked, comes
    back through the pop retry topic with Integer.MIN_VALUE (PopReviveService adds one). A fuzz finding:
    the twin failed in the revive instead."""
    topic, group = unique_name("Wrap")[-40:], unique_name("WrapG")[-40:]
    assert broker.create_topic(topic, queues=1).code == ResponseCode.SUCCESS
    sent = broker.send(topic, msg_props(WAIT="true"), reconsume_times=2**31 - 1)
    assert sent.code == ResponseCode.SUCCESS
    (popped,) = pop_until(broker, topic, group, 1)
    assert popped.reconsume_times == 2**31 - 1
    revived = pop_until(broker, topic, group, 1)
    assert [(m.body, m.reconsume_times) for m in revived] == [(b"body", -(2**31))]


def test_pop_bad_input_is_refused_as_5_5_0_refuses_it(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic, group = unique_name("PopBad"), unique_name("PopBadG")
    assert broker.create_topic(topic).code == ResponseCode.SUCCESS
    too_many = pop_request(broker, topic, group, maxMsgNums="33")
    assert too_many.code == ResponseCode.INVALID_PARAMETER
    assert re.fullmatch(r"the broker\[.*\] pop message's num is greater than 32", too_many.remark or "")
    assert_refuses_missing_topic_and_bad_queue(
        lambda name, **extra: pop_request(broker, name, group, **extra), topic, unique_name("NoTopic"), 4
    )
    no_poll = pop_request(broker, topic, group, pollTime="0")
    assert (no_poll.code, no_poll.remark) == (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")
    ack = broker.call(
        RequestCode.ACK_MESSAGE,
        {
            "consumerGroup": group,
            "topic": topic,
            "queueId": "0",
            "extraInfo": "0 0 0 0 0 x 0 7",
            "offset": "7",
        },
    )
    assert (ack.code, ack.remark) == (
        ResponseCode.NO_MESSAGE,
        f"offset is illegal, key:{topic}@0, commit:7, store:0~0",
    )
    change = broker.call(
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
        {
            "consumerGroup": group,
            "topic": topic,
            "queueId": "0",
            "extraInfo": "0 0 0 0 0 x 0 0",
            "offset": "0",
            "invisibleTime": "1000",
        },
    )
    assert (change.code, change.remark) == (ResponseCode.NO_MESSAGE, "not set any response code")


def _order_extra_info(answer: RemotingCommand, msg: MessageExt, broker_name: str) -> str:
    fields = answer.ext_fields or {}
    start = fields["startOffsetInfo"].split(" ")[2]
    parts = (start, fields["popTime"], fields["invisibleTime"], "999", "0", broker_name, msg.queue_id)
    return " ".join(str(p) for p in (*parts, msg.queue_offset))


def test_orderly_pop_blocks_the_queue_until_acked_or_visible_again(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    """What rocketmq-proxy does for a FIFO group: POP with ``order=true`` (revive queue 999)."""
    topic, group = unique_name("PopOrd")[-40:], unique_name("PopOrdG")[-40:]
    assert broker.create_topic(topic, queues=1).code == ResponseCode.SUCCESS
    for i in range(3):
        assert broker.send(topic, msg_props(TAGS="T", KEYS=f"k{i}", WAIT="true")).code == ResponseCode.SUCCESS

    def pop_attempt(attempt: str, **extra: str) -> RemotingCommand:
        return pop_request(
            broker, topic, group, order="true", attemptId=attempt, invisibleTime="3000", **extra
        )

    first = pop_attempt("a1")
    assert (first.code, first.remark) == (ResponseCode.SUCCESS, "FOUND")
    fields = first.ext_fields or {}
    assert (fields["reviveQid"], fields["orderCountInfo"]) == ("999", "0 0 0")
    assert (fields["startOffsetInfo"], fields["msgOffsetInfo"]) == ("0 0 0", "0 0 0,1,2")
    messages = decode_message_records(first.body or b"")
    assert [m.keys for m in messages] == ["k0", "k1", "k2"]
    # The same attempt again (a client retrying its request) gets the same messages; another is blocked.
    same = pop_attempt("a1")
    assert [m.keys for m in decode_message_records(same.body or b"")] == ["k0", "k1", "k2"]
    assert (same.ext_fields or {})["orderCountInfo"] == "0 0 0"
    first = same
    blocked = pop_attempt("a2")
    assert (blocked.code, blocked.remark) == (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")
    assert (blocked.ext_fields or {}).get("orderCountInfo") == ""

    messages = decode_message_records(first.body or b"")
    name = "broker-a"
    k0, k1 = messages[0], messages[1]
    ext = {"consumerGroup": group, "topic": topic, "queueId": "0"}
    acked = ack_request(broker, topic, group, k0, _order_extra_info(first, k0, name))
    assert (acked.code, acked.remark) == (ResponseCode.SUCCESS, None)
    changed = broker.call(
        RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
        {
            **ext,
            "extraInfo": _order_extra_info(first, k1, name),
            "offset": str(k1.queue_offset),
            "invisibleTime": "1000",
        },
    )
    assert changed.code == ResponseCode.SUCCESS, changed.remark
    answered = changed.ext_fields or {}
    assert (answered["popTime"], answered["reviveQid"]) == ((first.ext_fields or {})["popTime"], "999")
    assert int(answered["invisibleTime"]) >= 1000  # the next visible time minus the original pop time

    # k1 and k2 come back, from the first offset not acked, each counted as consumed once more.
    again = pop_attempt("a3", pollTime="500")
    deadline = time.monotonic() + 20
    while again.code != ResponseCode.SUCCESS and time.monotonic() < deadline:
        again = pop_attempt("a3", pollTime="500")
    assert (again.code, again.remark) == (ResponseCode.SUCCESS, "FOUND")
    redelivered = decode_message_records(again.body or b"")
    assert [m.keys for m in redelivered] == ["k1", "k2"]
    assert (again.ext_fields or {})["orderCountInfo"] == "0 qo0%1 1;0 qo0%2 1;0 0 1"
    assert (again.ext_fields or {})["startOffsetInfo"] == "0 0 1"
    for msg in redelivered:
        done = ack_request(broker, topic, group, msg, _order_extra_info(again, msg, name))
        assert (done.code, done.remark) == (ResponseCode.SUCCESS, None)
    empty = pop_attempt("a4")
    assert (empty.code, empty.remark) == (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")


# -- timer messages -------------------------------------------------------------------------------


def test_timer_messages_are_delivered_at_their_time(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic, group = unique_name("Timer")[-40:], unique_name("TimerG")[-40:]
    assert broker.create_topic(topic, queues=1).code == ResponseCode.SUCCESS
    sent_at = time.monotonic()
    sent = broker.send(topic, msg_props(KEYS="t3", TIMER_DELAY_SEC="3", WAIT="true"))
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    early = pop_request(broker, topic, group, pollTime="500")
    assert early.code == ResponseCode.POLLING_TIMEOUT
    got = pop_until(broker, topic, group, 1, timeout=20, pollTime="500")
    waited = time.monotonic() - sent_at
    assert [m.keys for m in got] == ["t3"]
    # Rounded down to the timer's 1 s precision: between 2 and 3 s, plus the scan and our polling.
    assert 2.0 <= waited < 8.0, waited
    [msg] = got
    assert msg.topic == topic
    assert {
        "TIMER_OUT_MS",
        "TIMER_ENQUEUE_MS",
        "TIMER_DEQUEUE_MS",
        "TIMER_DELAY_SEC",
    } <= msg.properties.keys()
    assert int(msg.properties["TIMER_OUT_MS"]) % 1000 == 0


def test_bad_timer_messages_are_refused_as_5_5_0_refuses_them(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("TimerBad")
    assert broker.create_topic(topic).code == ResponseCode.SUCCESS
    remark = (
        "timer message illegal, the delay time should not be bigger than the max delay 259200000ms; "
        "or if set del msg, the delay time should be bigger than the current time"
    )
    for props in (msg_props(TIMER_DELAY_SEC=str(3 * 24 * 3600 + 60)), msg_props(TIMER_DELIVER_MS="soon")):
        refused = broker.send(topic, props)
        assert (refused.code, refused.remark) == (ResponseCode.MESSAGE_ILLEGAL, remark)
    # A delivery time already passed is an ordinary message.
    past = broker.send(topic, msg_props(TIMER_DELIVER_MS="1000"))
    assert past.code == ResponseCode.SUCCESS, past.remark


def test_pending_timer_messages_survive_a_restart(rocketmq_factory: Any, tmp_path: Any) -> None:
    """Twin only: its timer progress (config/timerOffset.json) is its own; the timer topic is in the store."""
    store = str(tmp_path / "store")
    twin = rocketmq_factory(broker_conf=TWIN_BROKER_CONF, store_dir=store)
    broker = Broker("rmqtwin", twin.namesrv_addr, twin.broker_addr)
    assert broker.create_topic("TimerRestart", queues=1).code == ResponseCode.SUCCESS
    sent = broker.send("TimerRestart", msg_props(KEYS="later", TIMER_DELAY_SEC="4", WAIT="true"))
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    sent = broker.send("TimerRestart", msg_props(KEYS="now", WAIT="true"))
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    twin.stop()

    twin = rocketmq_factory(broker_conf=TWIN_BROKER_CONF, store_dir=store)
    broker = Broker("rmqtwin", twin.namesrv_addr, twin.broker_addr)
    got = pop_until(broker, "TimerRestart", "TimerRestartG", 2, timeout=20, pollTime="500")
    assert [m.keys for m in got] == ["now", "later"]
    twin.stop()


class _Restartable:
    """A broker of its own on a store that outlives it: the twin, or real 5.5.0 (graceful stops)."""

    def __init__(self, target: str, store: str, rocketmq_factory: Any) -> None:
        self.target, self.store, self.factory = target, store, rocketmq_factory
        self.running: Any = None

    def start(self) -> Broker:
        if self.target == "rmqtwin":
            self.running = self.factory(broker_conf=TWIN_BROKER_CONF, store_dir=self.store)
        else:
            from rmqtwin.conformance.launcher import RealRocketMQ
            from rmqtwin.conformance.runner import SHARED_BROKER_CONF

            self.running = RealRocketMQ("5", store_dir=self.store, broker_conf_overrides=SHARED_BROKER_CONF)
            self.running.start()
        return Broker(self.target, self.running.namesrv_addr, self.running.broker_addr)

    def stop(self) -> None:
        if self.running is not None:
            self.running.stop()
            self.running = None


def _consumer_offset(broker: Broker, topic: str, group: str) -> str | None:
    answer = broker.call(
        RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": group, "topic": topic, "queueId": "0"}
    )
    return (answer.ext_fields or {}).get("offset")


@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
def test_pop_checkpoints_survive_a_restart(target: str, rocketmq_factory: Any, tmp_path: Any) -> None:
    """What a 5.x remoting POP consumer sees across a broker restart: the consumer offset moved past
    what it popped at once, the messages neither acked nor visible again stay invisible, an ack of an old
    handle still counts, and the rest come back once their invisible time has passed (retried once)."""
    if target != "rmqtwin":
        from rmqtwin.conformance.launcher import java_available

        if java_available() is not None:
            pytest.skip(f"needs Java 17 and Maven: {java_available()}")
    restartable = _Restartable(target, str(tmp_path / "store"), rocketmq_factory)
    topic, group = "PopRestart", "PopRestartG"
    try:
        broker = restartable.start()
        assert broker.create_topic(topic, queues=1).code == ResponseCode.SUCCESS
        for i in range(4):
            sent = broker.send(topic, msg_props(TAGS="T", KEYS=f"k{i}", WAIT="true"))
            assert sent.code == ResponseCode.SUCCESS, sent.remark
        # Invisible for longer than a real 5.5.0 broker takes to stop and start again here (about 50 s).
        popped = pop_request(broker, topic, group, invisibleTime="120000")
        by_key = {m.keys: m for m in decode_message_records(popped.body or b"")}
        assert sorted(by_key) == ["k0", "k1", "k2", "k3"]
        handles = {key: _extra_info(popped, msg, "broker-a") for key, msg in by_key.items()}
        assert ack_request(broker, topic, group, by_key["k0"], handles["k0"]).code == ResponseCode.SUCCESS
        assert _consumer_offset(broker, topic, group) == "4"
        time.sleep(6)  # past flushConsumerOffsetInterval (5 s): what a broker that has run a while holds
        restartable.stop()

        broker = restartable.start()
        assert _consumer_offset(broker, topic, group) == "4"
        nothing = pop_request(broker, topic, group, pollTime="1000")
        assert (nothing.code, nothing.remark) == (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")
        acked = ack_request(broker, topic, group, by_key["k1"], handles["k1"])
        assert (acked.code, acked.remark) == (ResponseCode.SUCCESS, None)

        back = pop_until(broker, topic, group, 2, timeout=150, pollTime="2000")
        assert sorted((m.keys, m.reconsume_times) for m in back) == [("k2", 1), ("k3", 1)]
        assert pop_request(broker, topic, group, pollTime="2000").code == ResponseCode.POLLING_TIMEOUT
    finally:
        restartable.stop()
