"""Broker handlers over an in-memory connection, a real store in a temp dir, time on a Clock."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from twisted.internet.task import Clock

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.headers import CreateTopicRequestHeader, to_ext_fields
from rmqtwin.codec.message import Message, decode_message_records, encode_batch
from rmqtwin.fakes.broker.send import BATCH_TOO_LARGE_REMARK
from tests.fakes.helpers import clocked_broker, heartbeat, make_broker, peer, pull_header, send_v2

FAST_DELAYS = " ".join(["1s"] * 18)


@pytest.fixture
def env(tmp_path: Any) -> Any:
    with clocked_broker(tmp_path, "4.9", messageDelayLevel=FAST_DELAYS) as env:
        yield env


def test_send_then_pull_returns_the_stored_record(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    sent = send_v2(p, "TopicA", b"hello", tags="TagA", keys="K1")
    assert sent.code == ResponseCode.SUCCESS
    ext = sent.ext_fields or {}
    assert ext["queueId"] == "0" and ext["queueOffset"] == "0"
    assert ext["MSG_REGION"] == "DefaultRegion" and ext["TRACE_ON"] == "true"
    assert len(ext["msgId"]) == 32
    heartbeat(p, "g1", "TopicA")
    got = p.call(RequestCode.PULL_MESSAGE, pull_header("g1", "TopicA", 0))
    assert got.code == ResponseCode.SUCCESS and got.remark == "FOUND"
    assert (got.ext_fields or {})["nextBeginOffset"] == "1"
    (msg,) = decode_message_records(got.body or b"")
    assert msg.body == b"hello" and msg.topic == "TopicA"
    assert msg.properties["CLUSTER"] == "DefaultCluster" and "WAIT" not in msg.properties


def test_long_poll_is_answered_when_a_message_arrives(env: Any) -> None:
    broker, clock = env
    consumer, producer = peer(broker, clock), peer(broker, clock)
    send_v2(producer, "TopicL", b"first")
    heartbeat(consumer, "g1", "TopicL")
    opaque = consumer.send(RequestCode.PULL_MESSAGE, pull_header("g1", "TopicL", 1))
    assert consumer.responses() == []  # parked: nothing new after offset 1
    clock.advance(5)
    assert consumer.responses() == []
    send_v2(producer, "TopicL", b"second")
    (answer,) = consumer.responses()
    assert answer.opaque == opaque and answer.code == ResponseCode.SUCCESS
    assert [m.body for m in decode_message_records(answer.body or b"")] == [b"second"]


def test_long_poll_times_out_with_pull_not_found(env: Any) -> None:
    broker, clock = env
    consumer = peer(broker, clock)
    send_v2(consumer, "TopicT", b"only")
    heartbeat(consumer, "g1", "TopicT")
    opaque = consumer.send(RequestCode.PULL_MESSAGE, pull_header("g1", "TopicT", 1, suspend=15000))
    clock.advance(14.9)
    assert consumer.responses() == []
    clock.advance(0.2)
    (answer,) = consumer.responses()
    assert (answer.opaque, answer.code, answer.remark) == (
        opaque,
        ResponseCode.PULL_NOT_FOUND,
        "OFFSET_OVERFLOW_ONE",
    )
    assert (answer.ext_fields or {})["nextBeginOffset"] == "1"


def test_pull_without_suspend_flag_answers_at_once(env: Any) -> None:
    broker, clock = env
    consumer = peer(broker, clock)
    heartbeat(consumer, "g1", "TopicE")
    send_v2(consumer, "TopicE", b"x")
    answer = consumer.call(RequestCode.PULL_MESSAGE, pull_header("g1", "TopicE", 1, sys_flag=0))
    assert answer.code == ResponseCode.PULL_NOT_FOUND
    moved = consumer.call(RequestCode.PULL_MESSAGE, pull_header("g1", "TopicE", 7, sys_flag=0))
    assert (moved.code, moved.remark) == (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_OVERFLOW_BADLY")


def test_tag_filter_skips_other_tags(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    for tag in ("TagA", "TagB", "TagA"):
        send_v2(p, "TopicF", tag.encode(), tags=tag)
    heartbeat(p, "gf", "TopicF", sub="TagB")
    got = p.call(RequestCode.PULL_MESSAGE, pull_header("gf", "TopicF", 0))
    assert [m.body for m in decode_message_records(got.body or b"")] == [b"TagB"]
    assert (got.ext_fields or {})["nextBeginOffset"] == "3"


def test_pull_needs_a_heartbeat_subscription(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_v2(p, "TopicS", b"x")
    answer = p.call(RequestCode.PULL_MESSAGE, pull_header("nobody", "TopicS", 0))
    assert answer.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    assert (answer.remark or "").startswith("the consumer's group info not exist")


@pytest.mark.parametrize("line", ["4.9", "5.5"])
def test_heartbeat_and_pull_answers_carry_the_emulated_lines_fields(env: Any, line: str) -> None:
    """5.5.0 offers heartbeat v2 in every v1 heartbeat answer and reports topicSysFlag/groupSysFlag in
    every pull answer from the store, suspended ones included; 4.9.7 has neither, and links its FAQ
    (seen in a real-Java-client capture of 5.5.0 replayed on the twin)."""
    broker, clock = env
    broker.config.rocketmq_version = line
    five = line == "5.5"
    p = peer(broker, clock)
    send_v2(p, "TopicV", b"x")
    heartbeat(p, "gv", "TopicV")
    beat = p.call(RequestCode.HEART_BEAT, None, b'{"clientID":"c"}', version=409)
    v2 = {"IS_SUPPORT_HEART_BEAT_V2": "true", "IS_SUB_CHANGE": "true"}
    assert (beat.ext_fields or {}) == (v2 if five else {})
    flags = {"topicSysFlag": "0", "groupSysFlag": "0"} if five else {}
    found = p.call(RequestCode.PULL_MESSAGE, pull_header("gv", "TopicV", 0))
    assert found.code == ResponseCode.SUCCESS
    assert {k: v for k, v in (found.ext_fields or {}).items() if k.endswith("SysFlag")} == flags
    opaque = p.send(RequestCode.PULL_MESSAGE, pull_header("gv", "TopicV", 1, suspend=1000))
    clock.advance(1.1)
    (held,) = p.responses()
    assert (held.opaque, held.code) == (opaque, ResponseCode.PULL_NOT_FOUND)
    assert {k: v for k, v in (held.ext_fields or {}).items() if k.endswith("SysFlag")} == flags
    missing = p.call(RequestCode.PULL_MESSAGE, pull_header("gv", "NoSuchTopic", 0))
    link = (
        "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
        if five
        else "http://rocketmq.apache.org/docs/faq/"
    )
    assert (missing.remark or "").endswith(f"\nSee {link} for further details.")


@pytest.mark.parametrize("line", ["4.9", "5.5"])
def test_send_rejections_use_the_brokers_codes_and_remarks(env: Any, line: str) -> None:
    broker, clock = env
    broker.config.rocketmq_version = line
    # Real 4.9.7 answers SYSTEM_ERROR, real 5.5.0 INVALID_PARAMETER naming the topic (bad_inputs run).
    param = ResponseCode.SYSTEM_ERROR if line == "4.9" else ResponseCode.INVALID_PARAMETER
    p = peer(broker, clock)
    bad = send_v2(p, "bad topic!", b"x")
    assert bad.code == param
    assert bad.remark == (
        "The specified topic contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        if line == "4.9"
        else "The specified topic: bad topic!, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    )
    long = send_v2(p, "T" * 128, b"x")
    assert (long.code, long.remark) == (
        param,
        "The specified topic is longer than topic max length."
        if line == "4.9"
        else f"The specified topic: {'T' * 128}, is longer than topic max length: 127",
    )
    forbidden = send_v2(p, "SCHEDULE_TOPIC_XXXX", b"x")
    assert (forbidden.code, forbidden.remark) == (
        ResponseCode.NO_PERMISSION,
        "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden.",
    )
    send_v2(p, "TopicQ", b"x")
    queue = send_v2(p, "TopicQ", b"x", queue_id=9)
    assert queue.code == param
    assert (queue.remark or "").startswith(
        "request queueId[9] is illegal, TopicConfig [topicName=TopicQ, readQueueNums=4"
    )
    big = send_v2(p, "TopicQ", b"x" * (4 * 1024 * 1024 + 1))
    assert big.code == ResponseCode.MESSAGE_ILLEGAL
    missing = p.call(RequestCode.SEND_MESSAGE_V2, {"b": "TopicQ"}, b"x")
    assert missing.code == ResponseCode.SYSTEM_ERROR
    unknown = p.call(4242)
    assert (unknown.code, unknown.remark) == (
        ResponseCode.REQUEST_CODE_NOT_SUPPORTED,
        " request type 4242 not supported",
    )
    assert send_v2(p, "TopicQ", b"still fine").code == ResponseCode.SUCCESS


def test_auto_created_topic_takes_min_of_request_and_template(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_v2(p, "TopicAuto", b"x")
    config = broker.topics.get("TopicAuto")
    assert config is not None
    assert (config.read_queue_nums, config.write_queue_nums, config.perm) == (4, 4, 6)


def test_batch_send_stores_each_message(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_v2(p, "TopicBatch", b"warm")
    body = encode_batch(
        [
            Message(topic="TopicBatch", body=f"m{i}".encode(), properties={"UNIQ_KEY": f"U{i}"})
            for i in range(3)
        ]
    )
    header = {
        "a": "pg",
        "b": "TopicBatch",
        "c": "TBW102",
        "d": 4,
        "e": 1,
        "f": 0,
        "g": 0,
        "h": 0,
        "i": "WAIT\x01true",
        "j": 0,
        "k": False,
        "m": True,
    }
    answer = p.call(RequestCode.SEND_BATCH_MESSAGE, header, body, version=409)
    assert answer.code == ResponseCode.SUCCESS
    assert len((answer.ext_fields or {})["msgId"].split(",")) == 3
    assert broker.store.get_max_offset_in_queue("TopicBatch", 1) == 3


@pytest.mark.parametrize("line", ["4.9", "5.5"])
def test_a_batch_over_max_message_size_is_refused_as_each_line_refuses_it(env: Any, line: str) -> None:
    # Five 0.9 MiB bodies: 4.9.7's store answers MESSAGE_ILLEGAL, 5.5.0's encoder throws (SYSTEM_ERROR).
    broker, clock = env
    broker.config.rocketmq_version = line
    p = peer(broker, clock)
    body = encode_batch([Message(topic="TopicBig", body=b"x" * 943718) for _ in range(5)])
    header = {"a": "pg", "b": "TopicBig", "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 0, "h": 0, "i": ""}
    answer = p.call(RequestCode.SEND_BATCH_MESSAGE, {**header, "j": 0, "k": False, "m": True}, body)
    if line == "5.5":
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, BATCH_TOO_LARGE_REMARK)
    else:
        assert answer.code == ResponseCode.MESSAGE_ILLEGAL
    assert broker.store.get_max_offset_in_queue("TopicBig", 0) == 0


def test_consumer_offsets_query_update_and_persist(env: Any, tmp_path: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_v2(p, "TopicO", b"x")
    header = {"consumerGroup": "go", "topic": "TopicO", "queueId": 0}
    first = p.call(RequestCode.QUERY_CONSUMER_OFFSET, header)
    assert (first.code, (first.ext_fields or {}).get("offset")) == (ResponseCode.SUCCESS, "0")
    assert (
        p.call(RequestCode.UPDATE_CONSUMER_OFFSET, {**header, "commitOffset": 1}).code == ResponseCode.SUCCESS
    )
    assert (p.call(RequestCode.QUERY_CONSUMER_OFFSET, header).ext_fields or {})["offset"] == "1"
    clock.advance(5)  # the 5-second offset persister
    with open(broker.offsets.config_file_path, "rb") as fh:
        raw = fh.read()
    # fastjson's pretty layout, as a real broker writes it (integer keys inline after the brace)
    assert raw == b'{\n\t"offsetTable":{\n\t\t"TopicO@go":{0:1\n\t\t}\n\t}\n}'


def test_heartbeat_registers_consumers_and_notifies_the_group(env: Any) -> None:
    broker, clock = env
    a, b = peer(broker, clock), peer(broker, clock)
    heartbeat(a, "gn", "TopicN", client_id="127.0.0.1@a")  # a new member: every member is told (Java too)
    assert [r.code for r in a.requests_from_server] == [RequestCode.NOTIFY_CONSUMER_IDS_CHANGED]
    heartbeat(a, "gn", "TopicN", client_id="127.0.0.1@a")  # nothing changed: no notification
    assert len(a.requests_from_server) == 1
    heartbeat(b, "gn", "TopicN", client_id="127.0.0.1@b")
    a.responses()
    assert [r.code for r in a.requests_from_server] == [RequestCode.NOTIFY_CONSUMER_IDS_CHANGED] * 2
    assert a.requests_from_server[1].is_oneway and a.requests_from_server[1].ext_fields == {
        "consumerGroup": "gn"
    }
    ids = orjson.loads(a.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "gn"}).body or b"")
    assert sorted(ids["consumerIdList"]) == ["127.0.0.1@a", "127.0.0.1@b"]
    assert broker.topics.get("%RETRY%gn") is not None
    b.close()
    ids = orjson.loads(a.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "gn"}).body or b"")
    assert ids["consumerIdList"] == ["127.0.0.1@a"]
    a.call(RequestCode.UNREGISTER_CLIENT, {"clientID": "127.0.0.1@a", "consumerGroup": "gn"})
    none = a.call(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "gn"})
    assert (none.code, none.remark) == (ResponseCode.SYSTEM_ERROR, "no consumer for this group, gn")
    assert none.ext_fields == {}  # GetConsumerListByGroupResponseHeader, a header without fields


def test_send_back_redelivers_through_the_retry_topic_after_the_delay(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    heartbeat(p, "gr", "TopicR")
    send_v2(p, "TopicR", b"again", keys="K")
    (msg,) = decode_message_records(
        p.call(RequestCode.PULL_MESSAGE, pull_header("gr", "TopicR", 0)).body or b""
    )
    back = {
        "offset": msg.commitlog_offset,
        "group": "gr",
        "delayLevel": 0,
        "originMsgId": "X",
        "originTopic": "TopicR",
        "maxReconsumeTimes": 16,
    }
    assert p.call(RequestCode.CONSUMER_SEND_MSG_BACK, back, version=409).code == ResponseCode.SUCCESS
    assert (
        broker.store.get_max_offset_in_queue("SCHEDULE_TOPIC_XXXX", 2) == 1
    )  # level 3 = 3 + reconsumeTimes 0
    assert broker.store.get_max_offset_in_queue("%RETRY%gr", 0) == 0
    clock.advance(0.5)
    assert broker.store.get_max_offset_in_queue("%RETRY%gr", 0) == 0
    clock.advance(1.0)
    assert broker.store.get_max_offset_in_queue("%RETRY%gr", 0) == 1
    got = p.call(
        RequestCode.PULL_MESSAGE, {**pull_header("gr", "%RETRY%gr", 0, sys_flag=6), "subscription": "*"}
    )
    (retry,) = decode_message_records(got.body or b"")
    assert retry.body == b"again" and retry.reconsume_times == 1
    assert retry.properties["RETRY_TOPIC"] == "TopicR"
    assert retry.properties["ORIGIN_MESSAGE_ID"] == msg.offset_msg_id
    assert retry.properties["DELAY"] == "3"  # 4.9.8 keeps the parked properties on re-delivery


def test_send_back_past_max_reconsume_goes_to_dlq(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    heartbeat(p, "gd", "TopicD")
    send_v2(p, "TopicD", b"dead")
    (msg,) = decode_message_records(
        p.call(RequestCode.PULL_MESSAGE, pull_header("gd", "TopicD", 0)).body or b""
    )
    back = {"offset": msg.commitlog_offset, "group": "gd", "delayLevel": 0, "maxReconsumeTimes": 0}
    assert p.call(RequestCode.CONSUMER_SEND_MSG_BACK, back, version=409).code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset_in_queue("%DLQ%gd", 0) == 1


def test_send_back_of_a_message_at_int_max_reconsume_times_wraps_as_a_java_int(env: Any) -> None:
    """consumerSendMsgBack adds one to reconsumeTimes, a Java int: Integer.MAX_VALUE (past any maximum,
    so to the DLQ) is stored as Integer.MIN_VALUE, not a failure in the handler."""
    broker, clock = env
    p = peer(broker, clock)
    heartbeat(p, "gw", "TopicW")
    send_v2(p, "TopicW", b"wrap", reconsume_times=2**31 - 1)
    (msg,) = decode_message_records(
        p.call(RequestCode.PULL_MESSAGE, pull_header("gw", "TopicW", 0)).body or b""
    )
    assert msg.reconsume_times == 2**31 - 1
    back = {"offset": msg.commitlog_offset, "group": "gw", "delayLevel": 0, "maxReconsumeTimes": 16}
    assert p.call(RequestCode.CONSUMER_SEND_MSG_BACK, back, version=409).code == ResponseCode.SUCCESS
    got = p.call(
        RequestCode.PULL_MESSAGE, {**pull_header("gw", "%DLQ%gw", 0, sys_flag=6), "subscription": "*"}
    )
    (dead,) = decode_message_records(got.body or b"")
    assert (dead.body, dead.reconsume_times) == (b"wrap", -(2**31))


def test_query_by_key_and_view_by_offset(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_v2(p, "TopicK", b"keyed", keys="order-1")
    found = p.call(
        RequestCode.QUERY_MESSAGE,
        {"topic": "TopicK", "key": "order-1", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2**62},
    )
    assert found.code == ResponseCode.SUCCESS
    (msg,) = decode_message_records(found.body or b"")
    assert msg.body == b"keyed"
    none = p.call(
        RequestCode.QUERY_MESSAGE,
        {"topic": "TopicK", "key": "nope", "maxNum": 32, "beginTimestamp": 0, "endTimestamp": 2**62},
    )
    assert (none.code, none.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        "can not find message, maybe time range not correct",
    )
    view = p.call(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": msg.commitlog_offset})
    assert view.code == ResponseCode.SUCCESS and decode_message_records(view.body or b"")[0].body == b"keyed"
    gone = p.call(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": 999999})
    assert (gone.code, gone.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "can not find message by the offset, 999999",
    )


def test_admin_topic_create_stats_and_delete(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    create = {
        "topic": "AdminT",
        "defaultTopic": "TBW102",
        "readQueueNums": 2,
        "writeQueueNums": 2,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "order": False,
    }
    assert p.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create).code == ResponseCode.SUCCESS
    conflict = p.call(RequestCode.UPDATE_AND_CREATE_TOPIC, {**create, "topic": "TBW102"})
    assert (conflict.code, conflict.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "The topic[TBW102] is conflict with system topic.",
    )
    send_v2(p, "AdminT", b"x", queue_id=1)
    stats = fastjson.loads(p.call(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "AdminT"}).body or b"")
    offsets = {key["queueId"]: value["maxOffset"] for key, value in stats["offsetTable"].items()}
    assert offsets == {0: 0, 1: 1}
    assert p.call(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "AdminT"}).code == ResponseCode.SUCCESS
    missing = p.call(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "AdminT"})
    assert (missing.code, missing.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[AdminT] not exist")


@pytest.mark.parametrize("line", ["4.9", "5.5"])
def test_topic_stats_of_a_shrunk_topic_list_the_write_queues_on_4_9_and_every_queue_on_5(
    env: Any, line: str
) -> None:
    # writeQueueNums 4, readQueueNums 8 (the shrink procedure): real 4.9.7 lists 4 queues, 5.5.0 all 8.
    broker, clock = env
    broker.config.rocketmq_version = line
    p = peer(broker, clock)
    create = {
        "topic": "Shrunk",
        "defaultTopic": "TBW102",
        "readQueueNums": 8,
        "writeQueueNums": 4,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "order": False,
    }
    assert p.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create).code == ResponseCode.SUCCESS
    stats = fastjson.loads(p.call(RequestCode.GET_TOPIC_STATS_INFO, {"topic": "Shrunk"}).body or b"")
    assert sorted(key["queueId"] for key in stats["offsetTable"]) == list(range(4 if line == "4.9" else 8))


@pytest.mark.parametrize("line", ["4.9", "5.5"])
def test_consume_stats_carry_how_far_the_group_pulled_on_5(env: Any, line: str) -> None:
    # 5.5.0 remembers each pull's next offset (pullOffsetTable) and reports it beside the committed
    # offset (consumerProgress's #Inflight, 2 pulled - 0 committed here); 4.9.7 has no pullOffset.
    broker, clock = env
    broker.config.rocketmq_version = line
    p = peer(broker, clock)
    send_v2(p, "TopicP", b"a")
    send_v2(p, "TopicP", b"b")
    heartbeat(p, "gp", "TopicP")
    assert (
        p.call(RequestCode.PULL_MESSAGE, pull_header("gp", "TopicP", 0, sys_flag=1)).code
        == ResponseCode.SUCCESS
    )
    stats = fastjson.loads(p.call(RequestCode.GET_CONSUME_STATS, {"consumerGroup": "gp"}).body or b"")
    wrapper = next(v for k, v in stats["offsetTable"].items() if k["queueId"] == 0)
    assert wrapper.get("pullOffset") == (2 if line == "5.5" else None)
    assert wrapper["consumerOffset"] == 0


def test_silent_client_channels_expire_after_120_seconds(env: Any) -> None:
    broker, clock = env
    a = peer(broker, clock)
    heartbeat(a, "ge", "TopicX", client_id="127.0.0.1@quiet")
    clock.advance(110)
    heartbeat(a, "ge", "TopicX", client_id="127.0.0.1@quiet")  # the 30-second heartbeat keeps it
    clock.advance(110)
    assert "ge" in broker.consumers.groups
    for _ in range(3):
        clock.advance(10)  # housekeeping every 10 s drops what has been silent for 120 s
    assert "ge" not in broker.consumers.groups
    assert "CLIENT_INNER_PRODUCER" not in broker.producers.groups
    assert a.transport.disconnecting  # and the broker closes the channel


def test_lock_batch_mq_gives_each_queue_one_owner(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    mqs = [{"brokerName": "broker-a", "queueId": q, "topic": "TopicO"} for q in range(2)]

    def lock(client_id: str) -> list[Any]:
        body = orjson.dumps({"clientId": client_id, "consumerGroup": "go", "mqSet": mqs})
        return orjson.loads(p.call(RequestCode.LOCK_BATCH_MQ, None, body).body or b"")["lockOKMQSet"]

    assert lock("c1") == mqs
    assert lock("c2") == []
    clock.advance(61)  # a lock not renewed for 60 s may be taken over
    assert lock("c2") == mqs
    unlock = orjson.dumps({"clientId": "c2", "consumerGroup": "go", "mqSet": mqs[:1]})
    assert p.call(RequestCode.UNLOCK_BATCH_MQ, None, unlock).code == ResponseCode.SUCCESS
    assert lock("c1") == mqs[:1]


def test_a_5x_client_gets_5x_property_handling(env: Any) -> None:
    """5.5.0 keeps WAIT, adds MSG_REGION/TRACE_ON, and stores batch messages with their own properties."""
    broker, clock = env
    broker.config.rocketmq_version = "5.5"
    p = peer(broker, clock)
    header = {
        "a": "pg",
        "b": "Topic5",
        "c": "TBW102",
        "d": 4,
        "e": 0,
        "f": 0,
        "g": 0,
        "h": 0,
        "j": 0,
        "k": False,
    }
    single = p.call(
        RequestCode.SEND_MESSAGE_V2,
        {**header, "i": "WAIT\x01true\x02UNIQ_KEY\x01S1", "m": False},
        b"one",
        version=479,
    )
    assert single.code == ResponseCode.SUCCESS
    items = [
        Message(topic="Topic5", body=f"b{i}".encode(), properties={"UNIQ_KEY": f"U{i}"}) for i in range(2)
    ]
    batch_header = {**header, "i": "WAIT\x01true\x02UNIQ_KEY\x01BATCH", "m": True}
    assert p.call(RequestCode.SEND_BATCH_MESSAGE, batch_header, encode_batch(items), version=479).code == 0
    heartbeat(p, "g5", "Topic5")
    got = decode_message_records(p.call(RequestCode.PULL_MESSAGE, pull_header("g5", "Topic5", 0)).body or b"")
    first, *batch = got
    assert first.properties["WAIT"] == "true" and first.properties["MSG_REGION"] == "DefaultRegion"
    assert first.properties["TRACE_ON"] == "true" and first.properties["CLUSTER"] == "DefaultCluster"
    assert [m.properties for m in batch] == [{"UNIQ_KEY": "U0"}, {"UNIQ_KEY": "U1"}]


def _v2_send_fields(topic: str) -> dict[str, Any]:
    return {"a": "pg", "b": topic, "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 1, "h": 0}


def test_bad_send_headers_get_the_java_processors_answers(env: Any) -> None:
    """Java's decoder only logs a missing field; the processor then fails on the null (NPE) or on the
    number it cannot parse, and NettyRemotingAbstract answers SYSTEM_ERROR with the exception text."""
    broker, clock = env
    p = peer(broker, clock)
    no_queue = {k: v for k, v in _v2_send_fields("TopicH").items() if k != "e"}
    missing = p.call(RequestCode.SEND_MESSAGE_V2, no_queue, b"x", version=409)
    assert (missing.code, missing.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "java.lang.NullPointerException, the custom field <e> is null",
    )
    bad = p.call(RequestCode.SEND_MESSAGE_V2, {**_v2_send_fields("TopicH"), "d": "x"}, b"x", version=409)
    assert (bad.code, bad.remark) == (
        ResponseCode.SYSTEM_ERROR,
        'java.lang.NumberFormatException: For input string: "x"',
    )
    # 4.9's msgCheck meets the null topic first (seen on a real 4.9.7); 5.5.0 fails with an NPE,
    # whatever the client's version.
    no_topic = {k: v for k, v in _v2_send_fields("TopicH").items() if k != "b"}
    blank = p.call(RequestCode.SEND_MESSAGE_V2, no_topic, b"x", version=409)
    assert (blank.code, blank.remark) == (ResponseCode.SYSTEM_ERROR, "The specified topic is blank.")
    assert (blank.ext_fields or {}).get("MSG_REGION") == "DefaultRegion"
    unparsable = p.call(RequestCode.SEND_MESSAGE_V2, {**no_topic, "g": "now"}, b"x", version=409)
    assert unparsable.remark == 'java.lang.NumberFormatException: For input string: "now"'
    broker.config.rocketmq_version = "5.5"
    for version in (409, 453):
        five = p.call(RequestCode.SEND_MESSAGE_V2, no_topic, b"x", version=version)
        assert (five.code, five.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "java.lang.NullPointerException, the custom field <b> is null",
        )
    broker.config.rocketmq_version = "4.9"
    v1 = {"producerGroup": "pg", "topic": "TopicH", "defaultTopic": "TBW102", "queueId": 0, "sysFlag": 0}
    v1_missing = p.call(RequestCode.SEND_MESSAGE, {**v1, "bornTimestamp": 1}, b"x", version=409)
    assert (
        v1_missing.remark
        == "java.lang.NullPointerException, the custom field <defaultTopicQueueNums> is null"
    )
    # the connection and the broker carry on
    assert send_v2(p, "TopicH", b"fine").code == ResponseCode.SUCCESS
    ok = p.call(RequestCode.SEND_MESSAGE_V2, _v2_send_fields("TopicH"), b"x", version=409)
    assert ok.code == ResponseCode.SUCCESS
    assert set(ok.ext_fields or {}) == {"msgId", "queueId", "queueOffset", "MSG_REGION", "TRACE_ON"}


def test_bad_pull_and_offset_headers_get_the_java_processors_answers(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_v2(p, "TopicB", b"x")
    header = {k: v for k, v in pull_header("gb", "TopicB", 0).items() if k != "queueOffset"}
    # PullMessageProcessor checks the consumer before it reads queueOffset (24 on a real 4.9.7 too)
    unknown = p.call(RequestCode.PULL_MESSAGE, header)
    assert unknown.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
    heartbeat(p, "gb", "TopicB")
    pull = p.call(RequestCode.PULL_MESSAGE, header)
    assert (pull.code, pull.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "java.lang.NullPointerException, the custom field <queueOffset> is null",
    )
    # a number that does not parse fails in the header's own decode, before any check
    bad = p.call(RequestCode.PULL_MESSAGE, {**pull_header("nobody", "TopicB", 0), "maxMsgNums": "many"})
    assert (bad.code, bad.remark) == (
        ResponseCode.SYSTEM_ERROR,
        'java.lang.NumberFormatException: For input string: "many"',
    )
    assert p.call(RequestCode.PULL_MESSAGE, pull_header("gb", "TopicB", 0)).code == ResponseCode.SUCCESS
    max_offset = p.call(RequestCode.GET_MAX_OFFSET, {"topic": "TopicB", "queueId": "x"})
    assert (max_offset.code, max_offset.remark) == (
        ResponseCode.SYSTEM_ERROR,
        'java.lang.NumberFormatException: For input string: "x"',
    )
    back = p.call(RequestCode.CONSUMER_SEND_MSG_BACK, {"group": "gb", "offset": 0})
    assert back.remark == "java.lang.NullPointerException, the custom field <delayLevel> is null"
    found = p.call(RequestCode.GET_MAX_OFFSET, {"topic": "TopicB", "queueId": 0})
    assert (found.code, found.ext_fields) == (ResponseCode.SUCCESS, {"offset": "1"})


def test_restart_reads_back_topics_offsets_and_groups_in_the_brokers_layout(tmp_path: Any) -> None:
    clock = Clock()
    clock.advance(1_700_000_000)
    broker = make_broker(tmp_path, clock, rocketmq_version="4.9")  # 4.9's topics.json has no attributes
    p = peer(broker, clock)
    create = to_ext_fields(
        CreateTopicRequestHeader(
            topic="Kept",
            default_topic="TBW102",
            read_queue_nums=2,
            write_queue_nums=3,
            perm=6,
            topic_filter_type="SINGLE_TAG",
            order=False,
        )
    )
    assert p.call(RequestCode.UPDATE_AND_CREATE_TOPIC, create).code == ResponseCode.SUCCESS
    group = orjson.dumps({"groupName": "gk", "retryMaxTimes": 3, "consumeBroadcastEnable": False})
    assert p.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, None, group).code == ResponseCode.SUCCESS
    offset = {"consumerGroup": "gk", "topic": "Kept", "queueId": 2, "commitOffset": 7}
    assert p.call(RequestCode.UPDATE_CONSUMER_OFFSET, offset).code == ResponseCode.SUCCESS
    broker.shutdown()

    config_dir = tmp_path / "store" / "config"
    topics = (config_dir / "topics.json").read_text()
    assert (
        '\t\t"Kept":{\n\t\t\t"order":false,\n\t\t\t"perm":6,\n\t\t\t"readQueueNums":2,\n'
        '\t\t\t"topicFilterType":"SINGLE_TAG",\n\t\t\t"topicName":"Kept",\n\t\t\t"topicSysFlag":0,\n'
        '\t\t\t"writeQueueNums":3\n\t\t}'
    ) in topics
    assert (config_dir / "topics.json.bak").exists()  # the previous content, as MixAll.string2File keeps it
    groups = (config_dir / "subscriptionGroup.json").read_text()
    assert '\t\t"gk":{\n\t\t\t"brokerId":0,\n\t\t\t"consumeBroadcastEnable":false,' in groups
    assert '"__MONITOR_CONSUMER"' not in groups and '"SELF_TEST_C_GROUP"' in groups  # Java's built-ins
    offsets = (config_dir / "consumerOffset.json").read_text()
    assert offsets == '{\n\t"offsetTable":{\n\t\t"Kept@gk":{2:7\n\t\t}\n\t}\n}'
    assert (config_dir / "delayOffset.json").read_text() == '{\n\t"offsetTable":{}\n}'

    again = make_broker(tmp_path, clock, rocketmq_version="4.9")
    try:
        kept = again.topics.get("Kept")
        assert kept is not None
        assert (kept.read_queue_nums, kept.write_queue_nums) == (2, 3)
        assert again.topics.data_version.counter == broker.topics.data_version.counter
        group_config = again.groups.find("gk")
        assert group_config is not None
        assert (group_config.retry_max_times, group_config.consume_broadcast_enable) == (3, False)
        q = peer(again, clock)
        query = q.call(
            RequestCode.QUERY_CONSUMER_OFFSET, {"consumerGroup": "gk", "topic": "Kept", "queueId": 2}
        )
        assert (query.code, query.ext_fields) == (ResponseCode.SUCCESS, {"offset": "7"})
        listed = orjson.loads(q.call(RequestCode.GET_ALL_SUBSCRIPTIONGROUP_CONFIG).body or b"")
        assert listed["subscriptionGroupTable"]["gk"]["retryMaxTimes"] == 3
    finally:
        again.shutdown()


def test_an_unreadable_config_file_falls_back_to_its_bak(tmp_path: Any) -> None:
    clock = Clock()
    broker = make_broker(tmp_path, clock)
    p = peer(broker, clock)
    send_v2(p, "TopicF", b"x")
    heartbeat(p, "gf", "TopicF")  # 5.x commits offsets only for a group and topic it has
    offset = {"consumerGroup": "gf", "topic": "TopicF", "queueId": 0, "commitOffset": 3}
    assert p.call(RequestCode.UPDATE_CONSUMER_OFFSET, offset).code == ResponseCode.SUCCESS
    broker.persist_all()
    broker.offsets.commit_offset("gf", "TopicF", 0, 4)
    broker.shutdown()
    path = tmp_path / "store" / "config" / "consumerOffset.json"
    path.write_text("{not json")
    again = make_broker(tmp_path, clock)
    try:
        assert again.offsets.query_offset("gf", "TopicF", 0) == 3
    finally:
        again.shutdown()
