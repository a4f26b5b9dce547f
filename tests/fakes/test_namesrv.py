"""Name server handlers over an in-memory connection, time on a Clock."""

from __future__ import annotations

import zlib

import orjson
import pytest
from twisted.internet.task import Clock

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request, decode_command, encode_command
from rmqtwin.codec.frame import FrameDecoder
from rmqtwin.fakes.namesrv.controller import NamesrvController
from tests.fakes.helpers import Peer


def register_body(topics: dict[str, int], counter: int = 1, perms: dict[str, int] | None = None) -> bytes:
    table = {
        name: {
            "order": False,
            "perm": (perms or {}).get(name, 6),
            "readQueueNums": n,
            "topicFilterType": "SINGLE_TAG",
            "topicName": name,
            "topicSysFlag": 0,
            "writeQueueNums": n,
        }
        for name, n in topics.items()
    }
    return orjson.dumps(
        {
            "filterServerList": [],
            "topicConfigSerializeWrapper": {
                "dataVersion": {"counter": counter, "timestamp": 1700000000000},
                "topicConfigTable": table,
            },
        }
    )


def register(
    peer: Peer, body: bytes, *, name: str = "broker-a", addr: str = "10.0.0.5:10911", crc: int | None = None
) -> RemotingCommand:
    return peer.call(
        RequestCode.REGISTER_BROKER,
        {
            "brokerAddr": addr,
            "brokerId": 0,
            "brokerName": name,
            "clusterName": "DefaultCluster",
            "haServerAddr": "10.0.0.5:10912",
            "compressed": False,
            "bodyCrc32": zlib.crc32(body) & 0x7FFFFFFF if crc is None else crc,
        },
        body,
        version=409,
    )


@pytest.fixture
def namesrv() -> tuple[NamesrvController, Clock]:
    clock = Clock()
    controller = NamesrvController(clock)
    controller.start()
    return controller, clock


def test_register_then_route_in_the_client_versions_encoding(
    namesrv: tuple[NamesrvController, Clock],
) -> None:
    controller, clock = namesrv
    broker = Peer(controller.dispatcher, clock, on_close=controller.channel_closed)
    assert register(broker, register_body({"TopicA": 4})).code == ResponseCode.SUCCESS

    client = Peer(controller.dispatcher, clock)
    new = client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}, version=409)
    assert new.code == ResponseCode.SUCCESS
    assert b'"brokerAddrs":{"0":"10.0.0.5:10911"}' in (new.body or b"")
    old = client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}, version=317)
    assert b'"brokerAddrs":{0:"10.0.0.5:10911"}' in (old.body or b"")
    asked = client.call(
        RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA", "acceptStandardJsonOnly": True}, version=317
    )
    assert asked.body == new.body
    route = fastjson.loads(old.body or b"")
    assert route["queueDatas"] == [
        {"brokerName": "broker-a", "perm": 6, "readQueueNums": 4, "topicSysFlag": 0, "writeQueueNums": 4}
    ]


def test_unknown_topic_and_unknown_code(namesrv: tuple[NamesrvController, Clock]) -> None:
    controller, clock = namesrv
    client = Peer(controller.dispatcher, clock)
    missing = client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"})
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    assert (missing.remark or "").startswith("No topic route info in name server for the topic: Nope")
    unknown = client.call(9999)
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert unknown.remark == " request type 9999 not supported"


@pytest.mark.parametrize("five", [True, False])
def test_route_and_remarks_as_the_emulated_line(five: bool) -> None:
    """5.5.0's name server keeps ``enableActingMaster`` (false for a broker that does not send it) in
    every BrokerData and links its own FAQ page; 4.9.7's has neither field and links the old page (seen
    in a real-Java-client capture of 5.5.0 replayed on the twin)."""
    clock = Clock()
    controller = NamesrvController(clock, five=five)
    broker = Peer(controller.dispatcher, clock, on_close=controller.channel_closed)
    assert register(broker, register_body({"TopicA": 4})).code == ResponseCode.SUCCESS
    client = Peer(controller.dispatcher, clock)
    route = fastjson.loads(client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}).body or b"")
    cluster = fastjson.loads(client.call(RequestCode.GET_BROKER_CLUSTER_INFO).body or b"")
    acting = [route["brokerDatas"][0].get("enableActingMaster")]
    acting.append(cluster["brokerAddrTable"]["broker-a"].get("enableActingMaster"))
    assert acting == ([False, False] if five else [None, None])
    missing = client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Nope"})
    link = (
        "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
        if five
        else "http://rocketmq.apache.org/docs/faq/"
    )
    assert (
        missing.remark
        == f"No topic route info in name server for the topic: Nope\nSee {link} for further details."
    )


def test_crc_mismatch_is_refused(namesrv: tuple[NamesrvController, Clock]) -> None:
    controller, clock = namesrv
    broker = Peer(controller.dispatcher, clock)
    answer = register(broker, register_body({"T": 1}), crc=12345)
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "crc32 not match")
    assert controller.routes.pickup_topic_route_data("T") is None


def test_broker_expires_after_120_seconds_of_silence(namesrv: tuple[NamesrvController, Clock]) -> None:
    controller, clock = namesrv
    broker = Peer(controller.dispatcher, clock)
    register(broker, register_body({"TopicA": 4}))
    client = Peer(controller.dispatcher, clock)
    clock.advance(110)
    register(broker, register_body({"TopicA": 4}))  # periodic re-registration keeps it alive
    clock.advance(110)
    assert client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}).code == ResponseCode.SUCCESS
    for _ in range(3):
        clock.advance(10)  # the scan runs every 10 s and drops what is older than 120 s
    assert (
        client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}).code
        == ResponseCode.TOPIC_NOT_EXIST
    )
    info = fastjson.loads(client.call(RequestCode.GET_BROKER_CLUSTER_INFO).body or b"")
    assert info == {"brokerAddrTable": {}, "clusterAddrTable": {}}


def test_disconnect_removes_the_broker(namesrv: tuple[NamesrvController, Clock]) -> None:
    controller, clock = namesrv
    broker = Peer(controller.dispatcher, clock, on_close=controller.channel_closed)
    register(broker, register_body({"TopicA": 4}))
    broker.close()
    client = Peer(controller.dispatcher, clock)
    assert (
        client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TopicA"}).code
        == ResponseCode.TOPIC_NOT_EXIST
    )


def test_cluster_info_uses_bare_integer_keys(namesrv: tuple[NamesrvController, Clock]) -> None:
    controller, clock = namesrv
    broker = Peer(controller.dispatcher, clock)
    register(broker, register_body({"TopicA": 4}))
    body = Peer(controller.dispatcher, clock).call(RequestCode.GET_BROKER_CLUSTER_INFO).body or b""
    assert b'"brokerAddrs":{0:"10.0.0.5:10911"}' in body
    assert fastjson.loads(body)["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}


def test_topic_list_delete_and_unregister(namesrv: tuple[NamesrvController, Clock]) -> None:
    controller, clock = namesrv
    broker = Peer(controller.dispatcher, clock)
    register(broker, register_body({"A": 1, "B": 2}))
    client = Peer(controller.dispatcher, clock)
    topics = orjson.loads(client.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body or b"")
    assert sorted(topics["topicList"]) == ["A", "B"]
    assert client.call(RequestCode.DELETE_TOPIC_IN_NAMESRV, {"topic": "A"}).code == ResponseCode.SUCCESS
    topics = orjson.loads(client.call(RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER).body or b"")
    assert topics["topicList"] == ["B"]
    header = {
        "brokerAddr": "10.0.0.5:10911",
        "brokerId": 0,
        "brokerName": "broker-a",
        "clusterName": "DefaultCluster",
    }
    assert broker.call(RequestCode.UNREGISTER_BROKER, header).code == ResponseCode.SUCCESS
    assert (
        client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "B"}).code == ResponseCode.TOPIC_NOT_EXIST
    )


def test_kv_config(namesrv: tuple[NamesrvController, Clock]) -> None:
    controller, clock = namesrv
    client = Peer(controller.dispatcher, clock)
    key = {"namespace": "ORDER_TOPIC_CONFIG", "key": "T"}
    missing = client.call(RequestCode.GET_KV_CONFIG, key)
    assert (missing.code, missing.remark) == (
        ResponseCode.QUERY_NOT_FOUND,
        "No config item, Namespace: ORDER_TOPIC_CONFIG Key: T",
    )
    assert client.call(RequestCode.PUT_KV_CONFIG, {**key, "value": "broker-a:4"}).code == ResponseCode.SUCCESS
    found = client.call(RequestCode.GET_KV_CONFIG, key)
    assert found.code == ResponseCode.SUCCESS and (found.ext_fields or {}).get("value") == "broker-a:4"
    # A broker registering now gets the ORDER_TOPIC_CONFIG namespace back.
    answer = register(Peer(controller.dispatcher, clock), register_body({"T": 4}))
    assert orjson.loads(answer.body or b"") == {"table": {"T": "broker-a:4"}}
    assert client.call(RequestCode.DELETE_KV_CONFIG, key).code == ResponseCode.SUCCESS
    assert client.call(RequestCode.GET_KV_CONFIG, key).code == ResponseCode.QUERY_NOT_FOUND


def test_broken_frame_closes_only_that_connection(namesrv: tuple[NamesrvController, Clock]) -> None:
    controller, clock = namesrv
    bad = Peer(controller.dispatcher, clock)
    good = Peer(controller.dispatcher, clock)
    bad.proto.dataReceived(b"\x7f\xff\xff\xff garbage")  # a length word far above 16 MiB
    assert bad.transport.disconnecting
    assert not good.transport.disconnecting
    assert good.call(RequestCode.GET_BROKER_CLUSTER_INFO).code == ResponseCode.SUCCESS


def test_good_frames_before_a_broken_one_are_answered_then_the_connection_closes(
    namesrv: tuple[NamesrvController, Clock],
) -> None:
    """One chunk: a whole request, then an oversize length word. The request is answered, then the close."""
    controller, clock = namesrv
    peer = Peer(controller.dispatcher, clock)
    request = create_request(RequestCode.GET_BROKER_CLUSTER_INFO, None, None, opaque=7)
    peer.proto.dataReceived(encode_command(request) + b"\x7f\xff\xff\xff")
    answers = [decode_command(frame) for frame in FrameDecoder().feed(peer.transport.value())]
    assert [(a.opaque, a.code, a.is_response) for a in answers] == [(7, ResponseCode.SUCCESS, True)]
    assert peer.transport.disconnecting


def test_typed_header_answers(namesrv: tuple[NamesrvController, Clock]) -> None:
    """Missing fields get the Java processors' answers; typed response headers carry the results."""
    controller, clock = namesrv
    client = Peer(controller.dispatcher, clock)
    no_topic = client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {}, version=409)
    assert no_topic.code == ResponseCode.TOPIC_NOT_EXIST
    assert (no_topic.remark or "").startswith("No topic route info in name server for the topic: null")
    no_key = client.call(RequestCode.PUT_KV_CONFIG, {"namespace": "N", "value": "v"})
    assert (no_key.code, no_key.remark) == (ResponseCode.SYSTEM_ERROR, "namespace or key is null")
    no_value = client.call(RequestCode.PUT_KV_CONFIG, {"namespace": "N", "key": "k"})
    assert (no_value.code, no_value.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "java.lang.NullPointerException, the custom field <value> is null",
    )
    bad_id = client.call(
        RequestCode.UNREGISTER_BROKER,
        {"brokerName": "b", "brokerAddr": "a", "clusterName": "c", "brokerId": "zero"},
    )
    assert (bad_id.code, bad_id.remark) == (
        ResponseCode.SYSTEM_ERROR,
        'java.lang.NumberFormatException: For input string: "zero"',
    )
    answer = register(Peer(controller.dispatcher, clock), register_body({"T": 4}))
    assert answer.code == ResponseCode.SUCCESS and answer.ext_fields == {}
    wipe = client.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert (wipe.code, wipe.ext_fields) == (ResponseCode.SUCCESS, {"wipeTopicCount": "1"})
    version = client.call(
        RequestCode.QUERY_DATA_VERSION,
        {
            "brokerName": "broker-a",
            "brokerAddr": "10.0.0.5:10911",
            "clusterName": "DefaultCluster",
            "brokerId": 0,
        },
        orjson.dumps({"counter": 1, "timestamp": 1700000000000}),
    )
    assert (version.code, version.ext_fields) == (ResponseCode.SUCCESS, {"changed": "false"})


def test_add_write_perm_sets_read_and_write_whatever_the_perm_was(
    namesrv: tuple[NamesrvController, Clock],
) -> None:
    # RouteInfoManager.operateWritePermOfBroker (4.9.7 and 5.5.0): wipe clears PERM_WRITE, add sets
    # PERM_READ | PERM_WRITE, so a write-only topic comes back readable and an inheritable one plain.
    controller, clock = namesrv
    client = Peer(controller.dispatcher, clock)
    perms = {"W": 2, "I": 7, "RW": 6}
    register(Peer(controller.dispatcher, clock), register_body({"W": 1, "I": 1, "RW": 1}, perms=perms))

    def perm(topic: str) -> int:
        route = client.call(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
        return int(fastjson.loads(route.body)["queueDatas"][0]["perm"])

    wipe = client.call(RequestCode.WIPE_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert wipe.ext_fields == {"wipeTopicCount": "3"}
    assert {t: perm(t) for t in perms} == {"W": 0, "I": 5, "RW": 4}
    add = client.call(RequestCode.ADD_WRITE_PERM_OF_BROKER, {"brokerName": "broker-a"})
    assert add.ext_fields == {"addTopicCount": "3"}
    assert {t: perm(t) for t in perms} == {"W": 6, "I": 6, "RW": 6}


@pytest.mark.parametrize("five", [True, False])
def test_update_namesrv_config_refuses_the_paths_it_writes_to(five: bool) -> None:
    # 4.9.7: "Can not update config path" for kvConfigPath / configStorePath; 5.5.0: its configBlackList.
    clock = Clock()
    controller = NamesrvController(clock, five=five)
    client = Peer(controller.dispatcher, clock)
    update = RequestCode.UPDATE_NAMESRV_CONFIG
    refused = client.call(update, {}, body=b"kvConfigPath=/tmp/elsewhere\n")
    remark = "Can not update config in black list." if five else "Can not update config path"
    assert (refused.code, refused.remark) == (ResponseCode.NO_PERMISSION, remark)
    bad = client.call(update, {}, body=b"k=\\u12\n")
    assert (bad.code, bad.remark) == (ResponseCode.SYSTEM_ERROR, "string2Properties error")
    assert client.call(update, {}, body=b"orderMessageEnable=true\n").code == ResponseCode.SUCCESS
    config = client.call(RequestCode.GET_NAMESRV_CONFIG, {})
    assert b"orderMessageEnable=true" in (config.body or b"") and b"elsewhere" not in (config.body or b"")
