"""The admin requests of issue 20 in memory: group forbidding, topics and subscription of a group,
subscription groups in a batch, expired consume queues, resumed half messages, request-reply, topic
routes registered on the name server.

The same requests raw against real 4.9.7 and 5.5.0 are the catalog scenario ``admin-requests``; the
real Java client's request-reply is ``request-reply``.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from twisted.internet.task import Clock

from rmqtwin.codec.bodies import TopicRouteData
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import create_response
from rmqtwin.codec.message import decode_message_record
from rmqtwin.fakes.dispatch import NULL_KEY_NPE
from rmqtwin.fakes.namesrv.controller import NamesrvController
from tests.fakes.helpers import Peer, clocked_broker, send_v2
from tests.fakes.test_broker import heartbeat, peer, pull_header


@pytest.fixture(params=["4.9", "5.5"])
def env(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    with clocked_broker(tmp_path, request.param) as env:
        yield env


FIVE_ONLY = (
    RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST,
    RequestCode.QUERY_TOPICS_BY_CONSUMER,
    RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER,
    RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN,
)


def test_five_only_group_requests_are_not_supported_as_4_9(env: Any) -> None:
    broker, clock = env
    if broker.config.five:
        pytest.skip("5.x serves them")
    admin = peer(broker, clock)
    for code in FIVE_ONLY:
        got = admin.call(code, {"group": "g", "topic": "t"})
        assert (got.code, got.remark) == (3, f" request type {int(code)} not supported")


def test_a_forbidden_group_cannot_pull_until_allowed_again(env: Any) -> None:
    broker, clock = env
    if not broker.config.five:
        pytest.skip("5.x only")
    admin, consumer = peer(broker, clock), peer(broker, clock)
    send_v2(admin, "TF", b"m")
    heartbeat(consumer, "gf", "TF")
    forbid = admin.call(
        RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN, {"group": "gf", "topic": "TF", "readable": False}
    )
    assert (forbid.code, forbid.remark) == (ResponseCode.SUCCESS, "")
    assert orjson.loads(forbid.body or b"") == {"group": "gf", "readable": False, "topic": "TF"}
    read = admin.call(RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN, {"group": "gf", "topic": "TF"})
    assert orjson.loads(read.body or b"")["readable"] is False
    refused = consumer.call(RequestCode.PULL_MESSAGE, pull_header("gf", "TF", 0, suspend=0, sys_flag=0))
    assert (refused.code, refused.remark) == (
        ResponseCode.NO_PERMISSION,
        "the consumer group[gf] is forbidden for topic[TF]",
    )
    assert (refused.ext_fields or {}).get("forbiddenType") == "5"
    assert "forbiddenTable" in orjson.loads(broker.groups.encode_text())
    allow = admin.call(
        RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN, {"group": "gf", "topic": "TF", "readable": True}
    )
    assert orjson.loads(allow.body or b"")["readable"] is True
    pulled = consumer.call(RequestCode.PULL_MESSAGE, pull_header("gf", "TF", 0, suspend=0, sys_flag=0))
    assert pulled.code == ResponseCode.SUCCESS
    # Real 5.5.0 does not check the header's fields: a group without forbidden topics reads as readable.
    no_topic = admin.call(RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN, {"group": "gf"})
    assert (no_topic.code, no_topic.remark) == (ResponseCode.SUCCESS, "")
    no_group = admin.call(RequestCode.UPDATE_AND_GET_GROUP_FORBIDDEN, {"topic": "TF"})
    assert (no_group.code, no_group.remark) == (ResponseCode.SYSTEM_ERROR, NULL_KEY_NPE)


def test_topics_and_subscription_of_a_group(env: Any) -> None:
    broker, clock = env
    if not broker.config.five:
        pytest.skip("5.x only")
    admin, consumer = peer(broker, clock), peer(broker, clock)
    heartbeat(consumer, "gq", "TQ", sub="TagA || TagB")
    broker.offsets.commit_offset("gq", "TQ", 0, 3)
    broker.offsets.commit_offset("gq", "TQ2", 1, 1)
    topics = admin.call(RequestCode.QUERY_TOPICS_BY_CONSUMER, {"group": "gq"})
    assert orjson.loads(topics.body or b"") == {"brokerAddr": "127.0.0.1:10911", "topicList": ["TQ", "TQ2"]}
    sub = orjson.loads(
        admin.call(RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER, {"group": "gq", "topic": "TQ"}).body or b""
    )
    assert (sub["group"], sub["topic"]) == ("gq", "TQ")
    assert sub["subscriptionData"]["subString"] == "TagA || TagB"
    assert sorted(sub["subscriptionData"]["tagsSet"]) == ["TagA", "TagB"]
    no_group = admin.call(RequestCode.QUERY_TOPICS_BY_CONSUMER)
    assert no_group.code == ResponseCode.SYSTEM_ERROR and "whichTopicByConsumer" in (no_group.remark or "")
    offline = admin.call(RequestCode.QUERY_SUBSCRIPTION_BY_CONSUMER, {"group": "nobody", "topic": "TQ"})
    assert orjson.loads(offline.body or b"") == {"group": "nobody", "topic": "TQ"}


def test_subscription_groups_in_one_request(env: Any) -> None:
    broker, clock = env
    if not broker.config.five:
        pytest.skip("5.x only")
    admin = peer(broker, clock)
    body = {"groupConfigList": [{"groupName": "l1", "retryMaxTimes": 3}, {"groupName": "l2"}]}
    made = admin.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, None, orjson.dumps(body))
    assert (made.code, made.remark) == (ResponseCode.SUCCESS, None)
    assert broker.groups.table["l1"].retry_max_times == 3 and "l2" in broker.groups.table
    bad = {"groupConfigList": [{"groupName": "l3"}, {"groupName": "bad group!"}]}
    refused = admin.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST, None, orjson.dumps(bad))
    assert refused.code == ResponseCode.INVALID_PARAMETER and "bad group!" in (refused.remark or "")
    assert "l3" not in broker.groups.table  # every name is checked before any is written
    empty = admin.call(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST)
    assert empty.code == ResponseCode.SYSTEM_ERROR and "subscriptionGroupList" in (empty.remark or "")


def test_clean_expired_consume_queue_drops_queues_below_the_commitlog(env: Any) -> None:
    broker, clock = env
    admin = peer(broker, clock)
    store = broker.store
    send_v2(admin, "Old", b"x" * 1000)
    # Fill the first commitlog file so the next messages start a second one.
    while len(store.commit_log.mapped_file_queue.mapped_files) < 2:
        send_v2(admin, "Filler", b"y" * 60_000)
    send_v2(admin, "New", b"z")
    assert store.delete_expired_files(force=True) >= 1
    assert store.get_consume_queue("Old", 0) is not None
    cleaned = admin.call(RequestCode.CLEAN_EXPIRED_CONSUMEQUEUE)
    assert (cleaned.code, cleaned.remark) == (ResponseCode.SUCCESS, None)
    assert store.get_consume_queue("Old", 0) is None and "Old" not in store.get_topics()
    assert store.get_consume_queue("New", 0) is not None


def test_resume_check_half_message_puts_it_back_with_check_times_reset(env: Any) -> None:
    broker, clock = env
    admin = peer(broker, clock)
    half = send_v2(
        admin, "TH", b"half", props={"TRAN_MSG": "true", "PGROUP": "pg", "TRANSACTION_CHECK_TIMES": "5"}
    )
    assert half.code == ResponseCode.SUCCESS
    before = broker.store.get_max_offset_in_queue("RMQ_SYS_TRANS_HALF_TOPIC", 0)
    offset_msg_id = broker.store.look_message_by_offset(0)
    assert offset_msg_id is not None
    resumed = admin.call(RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": offset_msg_id.msg_id})
    assert (resumed.code, resumed.remark) == (ResponseCode.SUCCESS, None)
    assert broker.store.get_max_offset_in_queue("RMQ_SYS_TRANS_HALF_TOPIC", 0) == before + 1
    record = broker.store.select_one_message_by_offset(
        broker.store.get_commitlog_offset_in_queue("RMQ_SYS_TRANS_HALF_TOPIC", 0, before)
    )
    msg, _ = decode_message_record(record or b"", 0)
    assert msg.body == b"half" and msg.properties["TRANSACTION_CHECK_TIMES"] == "0"
    assert msg.properties["REAL_TOPIC"] == "TH"
    bad = admin.call(RequestCode.RESUME_CHECK_HALF_MESSAGE, {"msgId": "nonsense"})
    assert (bad.code, bad.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "Exception was thrown when putting message back to RMQ_SYS_TRANS_HALF_TOPIC.",
    )


def _producer_heartbeat(p: Peer, client_id: str) -> None:
    body = orjson.dumps(
        {"clientID": client_id, "consumerDataSet": [], "producerDataSet": [{"groupName": "req"}]}
    )
    assert p.call(RequestCode.HEART_BEAT, None, body, version=409).code == ResponseCode.SUCCESS


def _reply(replier: Peer, to: str | None) -> int:
    props = {"CORRELATION_ID": "c-1", "MSG_TYPE": "reply", "CLUSTER": "DefaultCluster"}
    if to is not None:
        props["REPLY_TO_CLIENT"] = to
    return replier.send(
        RequestCode.SEND_REPLY_MESSAGE,
        {
            "producerGroup": "rep",
            "topic": "DefaultCluster_REPLY_TOPIC",
            "defaultTopic": "TBW102",
            "defaultTopicQueueNums": 4,
            "queueId": 0,
            "sysFlag": 0,
            "bornTimestamp": 1,
            "flag": 0,
            "properties": "\x02".join(f"{k}\x01{v}" for k, v in props.items()) + "\x02",
            "reconsumeTimes": 0,
            "unitMode": False,
        },
        b"the reply",
    )


def test_a_reply_is_pushed_to_the_requester_and_stored(env: Any) -> None:
    broker, clock = env
    requester, replier = peer(broker, clock), peer(broker, clock)
    _producer_heartbeat(requester, "127.0.0.1@req")
    opaque = _reply(replier, "127.0.0.1@req")
    assert replier.responses() == []  # the broker waits for the requester
    requester.responses()
    pushed = requester.requests_from_server[-1]
    assert pushed.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT and pushed.body == b"the reply"
    ext = pushed.ext_fields or {}
    assert ext["topic"] == "DefaultCluster_REPLY_TOPIC" and ext["producerGroup"] == "rep"
    assert "CORRELATION_ID\x01c-1" in ext["properties"] and "PUSH_REPLY_TIME\x01" in ext["properties"]
    requester.client.send_response(pushed, create_response(pushed, ResponseCode.SUCCESS))
    requester.proto.dataReceived(requester.client.data_to_send())
    (answer,) = [r for r in replier.responses() if r.opaque == opaque]
    assert answer.code == ResponseCode.SUCCESS
    assert len((answer.ext_fields or {})["msgId"]) == 32  # the stored reply's offset msgId
    assert broker.store.get_max_offset_in_queue("DefaultCluster_REPLY_TOPIC", 0) == 1


def test_a_reply_nobody_takes(env: Any) -> None:
    broker, clock = env
    requester, replier = peer(broker, clock), peer(broker, clock)
    _producer_heartbeat(requester, "127.0.0.1@silent")
    for to, remark in [
        (None, "reply message properties[REPLY_TO_CLIENT] is null"),
        ("127.0.0.1@gone", "push reply message fail, channel of <127.0.0.1@gone> not found."),
    ]:
        opaque = _reply(replier, to)
        (answer,) = [r for r in replier.responses() if r.opaque == opaque]
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, remark)
    v2 = {"a": "rep", "b": "DefaultCluster_REPLY_TOPIC", "c": "TBW102", "d": 4, "e": 0, "f": 0}
    v2 |= {"g": 1, "h": 0, "i": "", "j": 0, "k": False, "m": False}
    unaddressed = replier.call(RequestCode.SEND_REPLY_MESSAGE_V2, v2, b"v2 reply")
    assert (unaddressed.code, unaddressed.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "reply message properties[REPLY_TO_CLIENT] is null",
    )
    opaque = _reply(replier, "127.0.0.1@silent")
    clock.advance(10)
    (late,) = [r for r in replier.responses() if r.opaque == opaque]
    assert (late.code, late.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "push reply message to 127.0.0.1@silentfail.",
    )
    # stored all the same (storeReplyMessageEnable)
    assert broker.store.get_max_offset_in_queue("DefaultCluster_REPLY_TOPIC", 0) == 4


@pytest.mark.parametrize("five", [True, False])
def test_register_topic_in_namesrv(five: bool) -> None:
    clock = Clock()
    namesrv = NamesrvController(clock, five=five)
    client = Peer(namesrv.dispatcher, clock)
    namesrv.routes.broker_addr_table["broker-a"] = _broker_data("broker-a")
    queue = {"brokerName": "broker-a", "perm": 6, "readQueueNums": 2, "topicSysFlag": 0, "writeQueueNums": 2}
    route = orjson.dumps({"queueDatas": [queue]})
    if not five:
        client.send(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "R"}, route)
        assert client.responses() == []  # 4.9.7's name server leaves it unanswered
        return
    done = client.call(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "R"}, route)
    assert (done.code, done.remark) == (ResponseCode.SUCCESS, None)
    assert set(namesrv.routes.topic_queue_table["R"]) == {"broker-a"}
    unknown = orjson.dumps({"queueDatas": [queue, {**queue, "brokerName": "nope"}]})
    assert client.call(RequestCode.REGISTER_TOPIC_IN_NAMESRV, {"topic": "R2"}, unknown).code == 0
    assert "R2" not in namesrv.routes.topic_queue_table  # one unknown broker: nothing registered
    assert TopicRouteData.decode(route).queue_datas[0].broker_name == "broker-a"


def _broker_data(name: str) -> Any:
    from rmqtwin.codec.bodies import BrokerData

    return BrokerData(cluster="c", broker_name=name, broker_addrs={0: "127.0.0.1:10911"})
