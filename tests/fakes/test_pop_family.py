"""The rest of the 5.x POP family and timer recall, over plain remoting, on the twin and on real 5.5.0.

BATCH_ACK_MESSAGE, PEEK_MESSAGE, NOTIFICATION, POLLING_INFO, RECALL_MESSAGE with the send answer's
``recallHandle``, and the 5.x line's transaction check interval. Every test asserts literal observations,
the same for the twin (the one test_broker_5x shares) and the shared real 5.5.0 cluster.
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from rmqtwin.codec.bodies import BatchAck, BatchAckMessageRequestBody
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.message import decode_message_records
from tests.fakes.broker_5x import (
    TARGETS,
    Broker,
    assert_refuses_missing_topic_and_bad_queue,
    broker_target,
    msg_props,
    pop_request,
    pop_until,
)

BROKER_NAME = "broker-a"
NOT_SET = "not set any response code"
"""The remark of an answer made by ``createResponseCommand(Class)`` and never given one."""


@pytest.fixture(scope="session", params=TARGETS)
def broker(request: pytest.FixtureRequest, rocketmq_factory: Any) -> Broker:
    return broker_target(request, rocketmq_factory)


def _fields(answer: RemotingCommand, *names: str) -> dict[str, str]:
    ext = answer.ext_fields or {}
    return {name: ext[name] for name in names if name in ext}


def _setup(broker: Broker, unique_name: Callable[[str], str], prefix: str, count: int) -> tuple[str, str]:
    """A one-queue topic holding ``count`` messages k0.. and a new group's name."""
    topic, group = unique_name(prefix)[-40:], unique_name(prefix + "G")[-40:]
    assert broker.create_topic(topic, queues=1).code == ResponseCode.SUCCESS
    for i in range(count):
        assert broker.send(topic, msg_props(TAGS="T", KEYS=f"k{i}", WAIT="true")).code == ResponseCode.SUCCESS
    return topic, group


def _in_background(fn: Callable[[], RemotingCommand]) -> tuple[threading.Thread, list[RemotingCommand]]:
    out: list[RemotingCommand] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    return thread, out


# -- PEEK_MESSAGE ---------------------------------------------------------------------------------


def _peek(broker: Broker, topic: str, group: str, **extra: str) -> RemotingCommand:
    ext = {"consumerGroup": group, "topic": topic, "queueId": "-1", "maxMsgNums": "32", **extra}
    return broker.call(RequestCode.PEEK_MESSAGE, ext)


def test_peek_shows_messages_without_popping_them(broker: Broker, unique_name: Callable[[str], str]) -> None:
    topic, group = _setup(broker, unique_name, "Peek", 3)
    for _ in range(2):  # a peek changes nothing: the second sees the same
        peeked = _peek(broker, topic, group)
        assert (peeked.code, peeked.remark) == (ResponseCode.SUCCESS, "FOUND")
        assert _fields(peeked, "popTime", "invisibleTime", "reviveQid", "restNum") == {
            "popTime": "0",
            "invisibleTime": "0",
            "reviveQid": "0",
            "restNum": "3",
        }
        assert [m.keys for m in decode_message_records(peeked.body or b"")] == ["k0", "k1", "k2"]
    two = _peek(broker, topic, group, maxMsgNums="2")
    assert [m.keys for m in decode_message_records(two.body or b"")] == ["k0", "k1"]

    # What a pop has handed out is no longer there to peek.
    popped = pop_request(broker, topic, group, invisibleTime="60000")
    assert popped.code == ResponseCode.SUCCESS
    empty = _peek(broker, topic, group)
    assert (empty.code, empty.remark) == (ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE")
    assert _fields(empty, "restNum") == {"restNum": "0"}
    assert empty.body in (None, b"")


def test_peek_bad_input_is_refused_as_5_5_0_refuses_it(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic, group = _setup(broker, unique_name, "PeekBad", 0)
    assert_refuses_missing_topic_and_bad_queue(
        lambda name, **extra: _peek(broker, name, group, **extra), topic, unique_name("NoTopic"), 1
    )


# -- NOTIFICATION and POLLING_INFO ----------------------------------------------------------------


def _notification(broker: Broker, topic: str, group: str, poll_ms: int, **extra: str) -> RemotingCommand:
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": "-1",
        "pollTime": str(poll_ms),
        "bornTime": str(int(time.time() * 1000)),
        **extra,
    }
    return broker.call(RequestCode.NOTIFICATION, ext)


def _polling_info(broker: Broker, topic: str, group: str, queue_id: int = -1) -> RemotingCommand:
    ext = {"consumerGroup": group, "topic": topic, "queueId": str(queue_id)}
    return broker.call(RequestCode.POLLING_INFO, ext)


def test_notification_tells_whether_a_pop_would_find_a_message(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic, group = _setup(broker, unique_name, "Notify", 0)
    none = _notification(broker, topic, group, 0)
    assert (none.code, none.remark) == (ResponseCode.SUCCESS, NOT_SET)
    assert _fields(none, "hasMsg", "pollingFull") == {"hasMsg": "false", "pollingFull": "false"}

    # Waiting: answered as soon as a message arrives, well inside its poll time.
    started = time.monotonic()
    waiting, out = _in_background(lambda: _notification(broker, topic, group, 8000))
    time.sleep(1.0)
    assert broker.send(topic, msg_props(KEYS="k0", WAIT="true")).code == ResponseCode.SUCCESS
    waiting.join(15)
    [woken] = out
    assert _fields(woken, "hasMsg", "pollingFull") == {"hasMsg": "true", "pollingFull": "false"}
    assert time.monotonic() - started < 7.0

    # Popped (invisible): nothing for a pop, so nothing notified; a short poll ends with false.
    assert pop_request(broker, topic, group, invisibleTime="60000").code == ResponseCode.SUCCESS
    ended = _notification(broker, topic, group, 500)
    assert (ended.code, _fields(ended, "hasMsg")) == (ResponseCode.SUCCESS, {"hasMsg": "false"})


def test_polling_info_counts_the_waiting_pops(broker: Broker, unique_name: Callable[[str], str]) -> None:
    topic, group = _setup(broker, unique_name, "Polling", 0)
    idle = _polling_info(broker, topic, group)
    assert (idle.code, idle.remark, _fields(idle, "pollingNum")) == (
        ResponseCode.SUCCESS,
        NOT_SET,
        {"pollingNum": "0"},
    )
    waiting, out = _in_background(lambda: pop_request(broker, topic, group, pollTime="6000"))
    counted: dict[str, str] = {}
    deadline = time.monotonic() + 5
    while counted != {"pollingNum": "1"} and time.monotonic() < deadline:
        counted = _fields(_polling_info(broker, topic, group), "pollingNum")
    assert counted == {"pollingNum": "1"}
    # Counted by the queue id the pop asked for (-1, any queue), not per queue.
    assert _fields(_polling_info(broker, topic, group, 0), "pollingNum") == {"pollingNum": "0"}
    waiting.join(15)
    assert out[0].code == ResponseCode.POLLING_TIMEOUT
    assert _fields(_polling_info(broker, topic, group), "pollingNum") == {"pollingNum": "0"}
    assert_refuses_missing_topic_and_bad_queue(
        lambda name, **extra: _polling_info(broker, name, group, int(extra["queueId"])),
        topic,
        unique_name("NoTopic"),
        1,
    )


# -- BATCH_ACK_MESSAGE ----------------------------------------------------------------------------


def _bits(offsets: list[int], start: int) -> str:
    """``BitSet.toByteArray`` of the offsets from ``start``, base64 as fastjson writes a byte[]."""
    value = sum(1 << (o - start) for o in offsets)
    return base64.b64encode(value.to_bytes((value.bit_length() + 7) // 8, "little")).decode()


def test_batch_ack_acks_each_offset_of_its_bit_set(broker: Broker, unique_name: Callable[[str], str]) -> None:
    topic, group = _setup(broker, unique_name, "BAck", 5)
    popped = pop_request(broker, topic, group, invisibleTime="3000")
    assert popped.code == ResponseCode.SUCCESS
    fields = popped.ext_fields or {}
    [(flag, queue, start)] = [part.split(" ") for part in fields["startOffsetInfo"].split(";")]
    assert (flag, queue, start) == ("0", "0", "0")
    ack = BatchAck(
        consumer_group=group,
        topic=topic,
        retry="0",
        start_offset=0,
        queue_id=0,
        revive_queue_id=int(fields["reviveQid"]),
        pop_time=int(fields["popTime"]),
        invisible_time=int(fields["invisibleTime"]),
        bit_set=_bits([0, 1, 3, 9], 0),  # 9 is past the queue: passed over
    )
    body = BatchAckMessageRequestBody(broker_name=BROKER_NAME, acks=[ack]).encode()
    acked = broker.call(RequestCode.BATCH_ACK_MESSAGE, {}, body)
    assert (acked.code, acked.remark) == (ResponseCode.SUCCESS, None)

    # The two not acked come back after the invisible time, retried once.
    revived = pop_until(broker, topic, group, 2)
    assert sorted((m.keys, m.reconsume_times) for m in revived) == [("k2", 1), ("k4", 1)]

    empty = broker.call(RequestCode.BATCH_ACK_MESSAGE, {}, b'{"acks":[]}')
    assert (empty.code, empty.remark) == (ResponseCode.NO_MESSAGE, None)
    no_body = broker.call(RequestCode.BATCH_ACK_MESSAGE, {})
    assert (no_body.code, no_body.remark) == (ResponseCode.NO_MESSAGE, None)
    garbage = broker.call(RequestCode.BATCH_ACK_MESSAGE, {}, b"\x00not json{")
    assert garbage.code == ResponseCode.SYSTEM_ERROR
    assert "fastjson2.JSONException" in str(garbage.remark), garbage.remark


# -- RECALL_MESSAGE -------------------------------------------------------------------------------


@pytest.fixture(scope="session", params=TARGETS)
def recall_enabled(request: pytest.FixtureRequest, rocketmq_factory: Any) -> Broker:
    """A broker of its own with ``recallMessageEnable=true`` (off by default on 5.5.0), so the shared
    ones keep 5.5.0's default while other tests run beside this one."""
    return broker_target(request, rocketmq_factory, {"recallMessageEnable": True})


def _recall(broker: Broker, topic: str, handle: str | None) -> RemotingCommand:
    ext = {"producerGroup": "PG_5x", "topic": topic}
    if handle is not None:
        ext["recallHandle"] = handle
    return broker.call(RequestCode.RECALL_MESSAGE, ext)


def _handle(*items: str) -> str:
    return base64.urlsafe_b64encode(" ".join(items).encode()).decode()


def test_recall_handle_and_a_recall_refused_by_default(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("RecallOff")[-40:]
    assert broker.create_topic(topic, queues=1).code == ResponseCode.SUCCESS
    uniq = "7F00000100010000000000000000AB01"
    before = int(time.time() * 1000)
    sent = broker.send(topic, msg_props(UNIQ_KEY=uniq, TIMER_DELAY_SEC="30", WAIT="true"))
    after = int(time.time() * 1000)
    assert sent.code == ResponseCode.SUCCESS, sent.remark
    version, name, owner, stamp, msg_id = (
        base64.urlsafe_b64decode((sent.ext_fields or {})["recallHandle"]).decode().split(" ")
    )
    assert (version, name, owner, msg_id) == ("v1", topic, BROKER_NAME, uniq)
    # TIMER_OUT_MS (the delivery time rounded down to the second) plus one.
    assert int(stamp) % 1000 == 1
    assert (before + 30_000) // 1000 * 1000 - 1000 <= int(stamp) - 1 <= (after + 30_000) // 1000 * 1000
    # Not a timer message: no handle.
    plain = broker.send(topic, msg_props(WAIT="true"))
    assert "recallHandle" not in (plain.ext_fields or {})

    refused = _recall(broker, topic, (sent.ext_fields or {})["recallHandle"])
    assert (refused.code, refused.remark) == (
        ResponseCode.NO_PERMISSION,
        "recall failed, operation is forbidden",
    )
    assert _fields(refused, "MSG_REGION", "msgId") == {"MSG_REGION": "DefaultRegion"}


def test_recalled_timer_message_is_never_delivered(
    recall_enabled: Broker, unique_name: Callable[[str], str]
) -> None:
    broker = recall_enabled
    topic, group = unique_name("Recall")[-40:], unique_name("RecallG")[-40:]
    assert broker.create_topic(topic, queues=1).code == ResponseCode.SUCCESS
    kept = broker.send(topic, msg_props(KEYS="kept", TIMER_DELAY_SEC="3", WAIT="true"))
    gone = broker.send(topic, msg_props(KEYS="recalled", TIMER_DELAY_SEC="3", WAIT="true"))
    assert kept.code == gone.code == ResponseCode.SUCCESS
    handle = (gone.ext_fields or {})["recallHandle"]
    _, _, _, stamp, uniq = base64.urlsafe_b64decode(handle).decode().split(" ")

    recalled = _recall(broker, topic, handle)
    assert (recalled.code, recalled.remark) == (ResponseCode.SUCCESS, NOT_SET)
    assert _fields(recalled, "MSG_REGION", "msgId") == {"MSG_REGION": "DefaultRegion", "msgId": uniq}

    got = [m.keys for m in pop_until(broker, topic, group, 1, timeout=20, pollTime="500")]
    # A moment past the kept one's delivery: the recalled one (due the same second) never comes.
    later = pop_request(broker, topic, group, pollTime="2000")
    if later.code == ResponseCode.SUCCESS:
        got += [m.keys for m in decode_message_records(later.body or b"")]
    assert got == ["kept"]

    # Bad handles, each as 5.5.0 words it.
    invalid = (ResponseCode.ILLEGAL_OPERATION, "recall handle is invalid")
    future = str(int(time.time() * 1000) + 60_000)
    for bad, expected in (
        ("", invalid),
        ("not base64!", invalid),
        (_handle("v2", topic, BROKER_NAME, future, uniq), invalid),
        (_handle("v1", topic, BROKER_NAME, future), invalid),
        (_handle("v1", "Other", BROKER_NAME, future, uniq), (604, "recall failed, topic not match")),
        (
            _handle("v1", topic, "broker-z", future, uniq),
            (604, "recall failed, broker service not available"),
        ),
        (_handle("v1", topic, BROKER_NAME, stamp, uniq), (604, "recall failed, timestamp invalid")),
        (_handle("v1", topic, BROKER_NAME, "soon", uniq), (604, "recall failed, timestamp invalid")),
    ):
        answer = _recall(broker, topic, bad)
        assert (answer.code, answer.remark) == expected, bad
    missing = _recall(broker, "NoSuchTopicR", handle)
    assert (missing.code, missing.remark) == (
        ResponseCode.TOPIC_NOT_EXIST,
        "recall failed, the topic[NoSuchTopicR] not exist",
    )


# -- the 5.x line's transaction check interval ----------------------------------------------------


def _broker_config(addr: str) -> dict[str, str]:
    from tests.fakes.helpers import call

    text = (call(addr, RequestCode.GET_BROKER_CONFIG).body or b"").decode()
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


LINE_DEFAULTS = {"transactionCheckInterval": "30000", "recallMessageEnable": "false"}
"""What GET_BROKER_CONFIG of a 5.5.0 broker shows for these when broker.conf leaves them out."""


def test_the_5_x_line_defaults_of_the_twin(rocketmq_factory: Any) -> None:
    """Twin only (the suite's real clusters run with a 1 s check interval): 5.5.0's defaults on the 5.x
    line, 4.9.7's 60 s check interval on 4.9; real 5.5.0's are checked by the slow test below."""
    twin = rocketmq_factory(broker_name="broker-a", rocketmq_version="5.5")
    shown = _broker_config(twin.broker_addr)
    assert {key: shown.get(key) for key in LINE_DEFAULTS} == LINE_DEFAULTS
    twin.stop()
    twin = rocketmq_factory(broker_name="broker-a", rocketmq_version="4.9")
    assert _broker_config(twin.broker_addr)["transactionCheckInterval"] == "60000"
    twin.stop()


@pytest.mark.real
@pytest.mark.slow
def test_the_5_x_line_defaults_of_real_5_5_0() -> None:
    """A real 5.5.0 broker on the launcher's broker.conf alone (no suite overrides): its own cluster."""
    from rmqtwin.conformance.launcher import RealRocketMQ, java_available

    reason = java_available()
    if reason is not None:
        pytest.skip(f"needs Java 17 and Maven: {reason}")
    with RealRocketMQ("5") as real:
        shown = _broker_config(real.broker_addr)
    assert {key: shown.get(key) for key in LINE_DEFAULTS} == LINE_DEFAULTS


# -- bad header fields ----------------------------------------------------------------------------

NULL_KEY = (
    'java.lang.NullPointerException: Cannot invoke "Object.hashCode()" because "key" is null, '
    "java.base/java.util.concurrent.ConcurrentHashMap.get(ConcurrentHashMap.java:936)"
)


def _null_unboxed(header: str, getter: str, unboxing: str, frame: str) -> str:
    return (
        f'java.lang.NullPointerException: Cannot invoke "java.lang.{unboxing}()" because the return value '
        f'of "org.apache.rocketmq.remoting.protocol.header.{header}.{getter}()" is null, '
        f"org.apache.rocketmq.broker.processor.{frame}"
    )


def _extra_info_refused(getter: str, length: int, line: int) -> str:
    return (
        f"java.lang.IllegalArgumentException: {getter} fail, extraInfoStrs length {length}, "
        f"org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil.{getter}(ExtraInfoUtil.java:{line})"
    )


SPLIT_NULL = (
    "java.lang.IllegalArgumentException: split extraInfo is null, "
    "org.apache.rocketmq.remoting.protocol.header.ExtraInfoUtil.split(ExtraInfoUtil.java:40)"
)
ACK_FRAME = "AckMessageProcessor.processRequest(AckMessageProcessor.java:{})"
CHANGE_FRAME = "ChangeInvisibleTimeProcessor.processRequestAsync(ChangeInvisibleTimeProcessor.java:{})"
ACK_OFFSET_NULL = _null_unboxed(
    "AckMessageRequestHeader", "getOffset", "Long.longValue", ACK_FRAME.format(162)
)
CHANGE_INVISIBLE_NULL = _null_unboxed(
    "ChangeInvisibleTimeRequestHeader",
    "getInvisibleTime",
    "Long.longValue",
    "ChangeInvisibleTimeProcessor.appendCheckPointThenAckOrigin(ChangeInvisibleTimeProcessor.java:321)",
)
NOTHING_TO_POP = (ResponseCode.POLLING_TIMEOUT, "NO_MESSAGE_IN_QUEUE")
NOTHING_TO_PEEK = (ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE")
FINE = (ResponseCode.SUCCESS, NOT_SET)

# (request, header changes: None removes the field, expected code and remark); seen on real 5.5.0:
# its POP-family headers are decoded unchecked (a field missing or not a number keeps its Java
# default: 0, or null for a boxed one), so a request fails only where the processor meets the null.
BAD_FIELDS: list[tuple[str, dict[str, str | None], tuple[int, str | None]]] = [
    (
        "pop",
        {"consumerGroup": None},
        (
            ResponseCode.SYSTEM_ERROR,
            "java.lang.NullPointerException, "
            "java.base/java.util.concurrent.ConcurrentHashMap.computeIfAbsent(ConcurrentHashMap.java:1693)",
        ),
    ),
    ("pop", {"topic": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    (
        "pop",
        {"maxMsgNums": "-1"},
        (
            ResponseCode.SYSTEM_ERROR,
            "java.lang.IllegalArgumentException: Illegal Capacity: -1, "
            "java.base/java.util.ArrayList.<init>(ArrayList.java:160)",
        ),
    ),
    ("pop", {"queueId": None, "maxMsgNums": None, "invisibleTime": None, "initMode": None}, NOTHING_TO_POP),
    (
        "pop",
        {"invisibleTime": "abc", "maxMsgNums": "abc", "queueId": "abc", "pollTime": None},
        NOTHING_TO_POP,
    ),
    ("pop", {"invisibleTime": "-1"}, NOTHING_TO_POP),
    ("ack", {"consumerGroup": None}, (ResponseCode.SUCCESS, None)),
    ("ack", {"topic": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    (
        "ack",
        {"queueId": None},
        (
            ResponseCode.SYSTEM_ERROR,
            _null_unboxed("AckMessageRequestHeader", "getQueueId", "Integer.intValue", ACK_FRAME.format(141)),
        ),
    ),
    ("ack", {"offset": None}, (ResponseCode.SYSTEM_ERROR, ACK_OFFSET_NULL)),
    ("ack", {"offset": "abc"}, (ResponseCode.SYSTEM_ERROR, ACK_OFFSET_NULL)),
    ("ack", {"extraInfo": None}, (ResponseCode.SYSTEM_ERROR, SPLIT_NULL)),
    (
        "ack",
        {"extraInfo": "0 1 2"},
        (ResponseCode.SYSTEM_ERROR, _extra_info_refused("getBrokerName", 3, 107)),
    ),
    ("change", {"consumerGroup": None}, FINE),
    ("change", {"invisibleTime": "-1000"}, FINE),
    ("change", {"topic": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    (
        "change",
        {"queueId": None},
        (
            ResponseCode.SYSTEM_ERROR,
            _null_unboxed(
                "ChangeInvisibleTimeRequestHeader", "getQueueId", "Integer.intValue", CHANGE_FRAME.format(120)
            ),
        ),
    ),
    (
        "change",
        {"offset": None},
        (
            ResponseCode.SYSTEM_ERROR,
            _null_unboxed(
                "ChangeInvisibleTimeRequestHeader", "getOffset", "Long.longValue", CHANGE_FRAME.format(141)
            ),
        ),
    ),
    ("change", {"invisibleTime": None}, (ResponseCode.SYSTEM_ERROR, CHANGE_INVISIBLE_NULL)),
    ("change", {"invisibleTime": "abc"}, (ResponseCode.SYSTEM_ERROR, CHANGE_INVISIBLE_NULL)),
    ("change", {"extraInfo": None}, (ResponseCode.SYSTEM_ERROR, SPLIT_NULL)),
    (
        "change",
        {"extraInfo": "garbage"},
        (ResponseCode.SYSTEM_ERROR, _extra_info_refused("getReviveQid", 1, 68)),
    ),
    ("peek", {"consumerGroup": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    ("peek", {"topic": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    ("peek", {"queueId": None, "maxMsgNums": None}, NOTHING_TO_PEEK),
    ("notification", {"consumerGroup": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    ("notification", {"topic": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    ("notification", {"queueId": None, "pollTime": None}, FINE),
    ("polling", {"consumerGroup": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    ("polling", {"topic": None}, (ResponseCode.SYSTEM_ERROR, NULL_KEY)),
    ("polling", {"queueId": None}, FINE),
]


def test_bad_header_fields_are_answered_as_5_5_0_answers_them(
    broker: Broker, unique_name: Callable[[str], str]
) -> None:
    empty, group = _setup(broker, unique_name, "BadHdr", 0)
    held, _ = _setup(broker, unique_name, "BadHdrM", 1)  # ack and change need an offset in the queue
    now = "0"  # replaced by the time of each call
    handle = "0 1 5000 0 0 broker-a 0 0"
    requests: dict[str, tuple[int, dict[str, str]]] = {
        "pop": (
            RequestCode.POP_MESSAGE,
            {
                "consumerGroup": group,
                "topic": empty,
                "queueId": "-1",
                "maxMsgNums": "32",
                "invisibleTime": "5000",
                "pollTime": "0",
                "bornTime": now,
                "initMode": "0",
            },
        ),
        "ack": (
            RequestCode.ACK_MESSAGE,
            {
                "consumerGroup": group,
                "topic": held,
                "queueId": "0",
                "extraInfo": handle,
                "offset": "0",
            },
        ),
        "change": (
            RequestCode.CHANGE_MESSAGE_INVISIBLETIME,
            {
                "consumerGroup": group,
                "topic": held,
                "queueId": "0",
                "extraInfo": handle,
                "offset": "0",
                "invisibleTime": "1000",
            },
        ),
        "peek": (
            RequestCode.PEEK_MESSAGE,
            {
                "consumerGroup": group,
                "topic": empty,
                "queueId": "-1",
                "maxMsgNums": "32",
            },
        ),
        "notification": (
            RequestCode.NOTIFICATION,
            {
                "consumerGroup": group,
                "topic": empty,
                "queueId": "-1",
                "pollTime": "0",
                "bornTime": now,
            },
        ),
        "polling": (RequestCode.POLLING_INFO, {"consumerGroup": group, "topic": empty, "queueId": "-1"}),
    }
    seen = []
    for name, changes, _ in BAD_FIELDS:
        code, ext = requests[name]
        if "bornTime" in ext:  # born now: a loaded machine must not turn these into late pops
            ext = {**ext, "bornTime": str(int(time.time() * 1000))}
        ext = {**ext, **{k: v for k, v in changes.items() if v is not None}}
        for key in (k for k, v in changes.items() if v is None):
            ext.pop(key)
        answer = broker.call(code, ext)
        seen.append((name, changes, (answer.code, answer.remark)))
    assert seen == BAD_FIELDS
    # The connection and the broker are unharmed: a good pop still answers.
    assert pop_request(broker, empty, group, pollTime="0").code == ResponseCode.POLLING_TIMEOUT
