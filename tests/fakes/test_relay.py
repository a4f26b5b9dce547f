"""Broker → client relays in memory: an admin connection asks, a consumer connection answers (or not).

The same requests against the real Java client and real 4.9.7 / 5.5.0 are in test_java_admin.py.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from twisted.internet.task import Clock

from rmqtwin.codec import fastjson
from rmqtwin.codec.bodies import (
    CreateTopicListRequestBody,
    GetConsumerStatusBody,
    MessageQueue,
    ResetOffsetBody,
    TopicConfig,
)
from rmqtwin.codec.codes import CURRENT_VERSION_5, RequestCode, ResponseCode
from rmqtwin.codec.command import create_response
from rmqtwin.fakes.dispatch import NULL_KEY_NPE
from rmqtwin.fakes.namesrv.controller import NamesrvController
from tests.fakes.helpers import Peer, clocked_broker, heartbeat, peer, pull_header, send_v2


@pytest.fixture(params=["4.9", "5.5"])
def env(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    with clocked_broker(tmp_path, request.param) as env:
        yield env


def answer(consumer: Peer, code: int, body: bytes | None = None) -> None:
    """The consumer answers the last request the broker sent it."""
    asked = consumer.requests_from_server[-1]
    consumer.client.send_response(asked, create_response(asked, code, body=body))
    consumer.proto.dataReceived(consumer.client.data_to_send())


def test_consumer_running_info_is_relayed_to_the_client_and_back(env: Any) -> None:
    broker, clock = env
    consumer, admin = peer(broker, clock), peer(broker, clock)
    heartbeat(consumer, "g1", "T1", client_id="127.0.0.1@c1")
    consumer.requests_from_server.clear()
    ext = {"consumerGroup": "g1", "clientId": "127.0.0.1@c1", "jstackEnable": "false"}
    opaque = admin.send(RequestCode.GET_CONSUMER_RUNNING_INFO, ext)
    assert admin.responses() == []
    consumer.responses()
    relayed = consumer.requests_from_server[-1]
    assert relayed.code == RequestCode.GET_CONSUMER_RUNNING_INFO and relayed.ext_fields == ext
    answer(consumer, ResponseCode.SUCCESS, b'{"properties":{"a":"b"}}')
    (got,) = [r for r in admin.responses() if r.opaque == opaque]
    assert (got.code, got.body) == (ResponseCode.SUCCESS, b'{"properties":{"a":"b"}}')


def test_relay_to_an_unknown_or_silent_client(env: Any) -> None:
    broker, clock = env
    consumer, admin = peer(broker, clock), peer(broker, clock)
    heartbeat(consumer, "g1", "T1", client_id="127.0.0.1@c1")
    gone = admin.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "g1", "clientId": "nobody"})
    assert (gone.code, gone.remark) == (ResponseCode.SYSTEM_ERROR, "The Consumer <g1> <nobody> not online")
    no_group = admin.call(RequestCode.GET_CONSUMER_RUNNING_INFO, {"clientId": "x"})
    assert (no_group.code, no_group.remark) == (ResponseCode.SYSTEM_ERROR, NULL_KEY_NPE)
    opaque = admin.send(
        RequestCode.GET_CONSUMER_RUNNING_INFO, {"consumerGroup": "g1", "clientId": "127.0.0.1@c1"}
    )
    clock.advance(10)
    (late,) = [r for r in admin.responses() if r.opaque == opaque]
    assert late.code == ResponseCode.CONSUME_MSG_TIMEOUT
    assert (late.remark or "").startswith("consumer <g1> <127.0.0.1@c1> Timeout: ")
    no_ext = admin.call(RequestCode.CONSUME_MESSAGE_DIRECTLY)
    assert no_ext.code == ResponseCode.SYSTEM_ERROR and "getExtFields()" in (no_ext.remark or "")


def test_consume_message_directly_carries_the_stored_record(env: Any) -> None:
    broker, clock = env
    consumer, admin = peer(broker, clock), peer(broker, clock)
    sent = send_v2(admin, "T2", b"hello")
    heartbeat(consumer, "g2", "T2", client_id="127.0.0.1@c2")
    consumer.requests_from_server.clear()
    msg_id = sent.ext_fields["msgId"]
    ext = {"consumerGroup": "g2", "clientId": "127.0.0.1@c2", "msgId": msg_id}
    admin.send(RequestCode.CONSUME_MESSAGE_DIRECTLY, ext)
    consumer.responses()
    relayed = consumer.requests_from_server[-1]
    assert relayed.ext_fields == {**ext, "brokerName": "broker-a"}
    assert b"hello" in (relayed.body or b"")


def test_consumer_status_gathers_each_members_queues(env: Any) -> None:
    broker, clock = env
    consumer, admin = peer(broker, clock), peer(broker, clock)
    heartbeat(consumer, "g3", "T3", client_id="127.0.0.1@c3")
    consumer.requests_from_server.clear()
    opaque = admin.send(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": "T3", "group": "g3"})
    consumer.responses()
    assert consumer.requests_from_server[-1].code == RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT
    mq = MessageQueue(topic="T3", broker_name="broker-a", queue_id=0)
    answer(consumer, ResponseCode.SUCCESS, GetConsumerStatusBody(message_queue_table={mq: 7}).encode())
    (got,) = [r for r in admin.responses() if r.opaque == opaque]
    assert GetConsumerStatusBody.decode(got.body or b"").consumer_table == {"127.0.0.1@c3": {mq: 7}}
    missing = admin.call(RequestCode.INVOKE_BROKER_TO_GET_CONSUMER_STATUS, {"topic": "T3", "group": "nope"})
    assert missing.code == ResponseCode.SYSTEM_ERROR and "getConsumerGroupInfo" in (missing.remark or "")


def test_reset_offset_as_each_line_does_it(env: Any) -> None:
    broker, clock = env
    consumer, admin = peer(broker, clock), peer(broker, clock)
    for n in range(3):
        send_v2(admin, "T4", f"m{n}".encode())
    heartbeat(consumer, "g4", "T4", client_id="127.0.0.1@c4")
    broker.groups.find("g4")  # auto-created, as the first pull creates it
    for queue_id in range(4):
        broker.offsets.commit_offset(
            "g4", "T4", queue_id, broker.store.get_max_offset_in_queue("T4", queue_id)
        )
    consumer.requests_from_server.clear()
    ext = {"topic": "T4", "group": "g4", "timestamp": "0", "isForce": "true"}
    reset = admin.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, ext)
    assert reset.code == ResponseCode.SUCCESS
    table = ResetOffsetBody.decode(reset.body or b"").offset_table
    assert set(table.values()) == {0}
    consumer.responses()
    if not broker.config.five:
        told = consumer.requests_from_server[-1]
        assert told.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET and told.is_oneway
        assert ResetOffsetBody.decode(told.body or b"").offset_table == table
        return
    # 5.5: the next pull of a reset queue moves the client there.
    queue = next(q for q in range(4) if broker.store.get_max_offset_in_queue("T4", q) > 0)
    moved = consumer.call(RequestCode.PULL_MESSAGE, pull_header("g4", "T4", 1, queue_id=queue, sys_flag=0))
    assert (moved.code, moved.remark) == (ResponseCode.PULL_OFFSET_MOVED, "OFFSET_RESET")
    assert (moved.ext_fields or {})["nextBeginOffset"] == "0"
    again = consumer.call(RequestCode.PULL_MESSAGE, pull_header("g4", "T4", 0, queue_id=queue, sys_flag=0))
    assert again.code == ResponseCode.SUCCESS
    unknown = admin.call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, {**ext, "group": "never-seen"})
    assert unknown.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST


def test_the_4_9_name_server_leaves_unknown_codes_unanswered() -> None:
    clock = Clock()
    for five, expected in ((True, [ResponseCode.REQUEST_CODE_NOT_SUPPORTED]), (False, [])):
        namesrv = NamesrvController(clock, five=five)
        client = Peer(namesrv.dispatcher, clock)
        client.send(RequestCode.GET_CONSUMER_RUNNING_INFO)
        assert [r.code for r in client.responses()] == expected
        unit = client.call(RequestCode.GET_UNIT_TOPIC_LIST)
        assert orjson.loads(unit.body or b"") == {"topicList": []}


def test_offset_tables_time_spans_and_broker_consume_stats(env: Any) -> None:
    broker, clock = env
    admin = peer(broker, clock)
    for n in range(2):
        send_v2(admin, "T5", f"m{n}".encode())
    broker.groups.find("g5")
    broker.offsets.commit_offset("g5", "T5", 0, 1)
    offsets = fastjson.loads(admin.call(RequestCode.GET_ALL_CONSUMER_OFFSET).body or b"")
    assert offsets["offsetTable"]["T5@g5"] == {0: 1}
    assert ("dataVersion" in offsets) == broker.config.five
    delay = admin.call(RequestCode.GET_ALL_DELAY_OFFSET)
    assert delay.code == ResponseCode.SUCCESS and b"offsetTable" in (delay.body or b"")
    span = admin.call(RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "T5", "group": "g5"})
    spans = fastjson.loads(span.body or b"")["consumeTimeSpanSet"]
    assert len(spans) == 4 and spans[0]["consumeTimeStamp"] == spans[0]["maxTimeStamp"] > 0
    missing = admin.call(RequestCode.QUERY_CONSUME_TIME_SPAN, {"topic": "Nope", "group": "g5"})
    assert (missing.code, missing.remark) == (ResponseCode.TOPIC_NOT_EXIST, "topic[Nope] not exist")
    stats = admin.call(RequestCode.GET_BROKER_CONSUME_STATS, {"isOrder": "false"}).body or b""
    assert b'"totalDiff":1' in stats and b"g5" in stats
    correction = admin.call(RequestCode.QUERY_CORRECTION_OFFSET, {"topic": "T5", "compareGroup": "other"})
    assert fastjson.loads(correction.body or b"") == {"correctionOffsets": {0: 1}}
    broker.topics.delete("T5")
    assert admin.call(RequestCode.CLEAN_UNUSED_TOPIC).code == ResponseCode.SUCCESS
    assert "T5" not in broker.store.get_topics()
    assert admin.call(RequestCode.DELETE_EXPIRED_COMMITLOG).code == ResponseCode.SUCCESS


def test_stats_items_and_consume_queue_entries(env: Any) -> None:
    broker, clock = env
    admin = peer(broker, clock)
    heartbeat(admin, "g6", "T6", client_id="127.0.0.1@c6")
    for n in range(3):
        send_v2(admin, "T6", f"m{n}".encode())
    pulled = admin.call(RequestCode.PULL_MESSAGE, pull_header("g6", "T6", 0, sys_flag=0))
    assert pulled.code == ResponseCode.SUCCESS
    put = admin.call(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "T6"})
    data = fastjson.loads(put.body or b"")
    assert data["statsMinute"]["sum"] == data["statsDay"]["sum"] == 3 and data["statsMinute"]["avgpt"] == 1.0
    got = admin.call(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "GROUP_GET_NUMS", "statsKey": "T6@g6"})
    assert fastjson.loads(got.body or b"")["statsHour"]["sum"] == 3
    clock.advance(61)
    later = fastjson.loads(
        admin.call(RequestCode.VIEW_BROKER_STATS_DATA, {"statsName": "TOPIC_PUT_NUMS", "statsKey": "T6"}).body
        or b""
    )
    assert (later["statsMinute"]["sum"], later["statsHour"]["sum"]) == (0, 3)
    none = admin.call(RequestCode.VIEW_BROKER_STATS_DATA)
    assert (none.code, none.remark) == (ResponseCode.SYSTEM_ERROR, "The stats <null> <null> not exist")
    cq = admin.call(
        RequestCode.QUERY_CONSUME_QUEUE,
        {"topic": "T6", "queueId": 0, "index": 1, "count": 5, "consumerGroup": "g6"},
    )
    body = fastjson.loads(cq.body or b"")
    assert (body["minQueueIndex"], body["maxQueueIndex"], len(body["queueData"])) == (0, 3, 2)
    assert body["subscriptionData"]["topic"] == "T6"
    absent = admin.call(
        RequestCode.QUERY_CONSUME_QUEUE, {"topic": "T6", "queueId": 3, "index": 0, "count": 1}
    )
    assert (absent.code, absent.remark) == (ResponseCode.SYSTEM_ERROR, "3@T6 is not exist!")
    past = admin.call(
        RequestCode.QUERY_CONSUME_QUEUE, {"topic": "T6", "queueId": 0, "index": 99999, "count": 1}
    )
    assert (past.code, past.remark, past.body) == (
        ResponseCode.SUCCESS,
        "Index 99999 of 0@T6 is not exist!",
        None,
    )


def test_all_producer_info_lists_each_producer_channel(env: Any) -> None:
    broker, clock = env
    producer = peer(broker, clock)
    heartbeat(producer, "g7", "T7", client_id="127.0.0.1@p7")
    table = fastjson.loads(producer.call(RequestCode.GET_ALL_PRODUCER_INFO).body or b"")
    (info,) = table["data"]["CLIENT_INNER_PRODUCER"]
    assert (info["clientId"], info["language"], info["version"]) == ("127.0.0.1@p7", "JAVA", 409)
    assert info["remoteIP"].startswith("/127.0.0.1:") and info["lastUpdateTimestamp"] == 1_700_000_000_000


def test_update_and_create_topic_list(env: Any) -> None:
    broker, clock = env
    admin = peer(broker, clock)
    body = CreateTopicListRequestBody(
        topic_config_list=[
            TopicConfig(topic_name=name, read_queue_nums=2, write_queue_nums=2) for name in ("L1", "L2")
        ]
    ).encode()
    made = admin.call(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, None, body, version=CURRENT_VERSION_5)
    if not broker.config.five:  # 4.9.7 has no such request, whoever asks
        assert made.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
        return
    assert (made.code, made.remark) == (ResponseCode.SUCCESS, "not set any response code")
    assert broker.topics.get("L2") is not None and broker.topics.get("L2").write_queue_nums == 2
    bad = CreateTopicListRequestBody(topic_config_list=[TopicConfig(topic_name="bad topic!")]).encode()
    refused = admin.call(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, None, bad, version=CURRENT_VERSION_5)
    assert refused.code == ResponseCode.INVALID_PARAMETER
    empty = admin.call(RequestCode.UPDATE_AND_CREATE_TOPIC_LIST, version=CURRENT_VERSION_5)
    assert empty.code == ResponseCode.SYSTEM_ERROR and '"requestBody" is null' in (empty.remark or "")
