"""Typed bodies: the shapes in protocol.md, lenient reading, and round trips through the real Java classes.

The Java check feeds every body we write to the real ``RemotingSerializable.decode`` of rocketmq-common
4.9.8 (fastjson 1.2.69) and rocketmq-remoting 5.5.0 (fastjson2) and compares what Java writes back with
our bytes; then we read Java's bytes back. The register body's compressed form goes both ways as well.
"""

from __future__ import annotations

import base64
import dataclasses
import struct
import zlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtwin.codec import bodies as b
from rmqtwin.codec.bodies import MessageQueue
from rmqtwin.codec.errors import BodyError
from rmqtwin.codec.fastjson import ObjectKey
from tests.golden.oracle import run_golden

MQ0 = MessageQueue(topic="TopicTest", broker_name="broker-a", queue_id=0)


# ------------------------------------------------------------------------------------------------ protocol.md


def _route() -> b.TopicRouteData:
    return b.TopicRouteData(
        queue_datas=[
            b.QueueData(
                broker_name="broker-a", read_queue_nums=4, write_queue_nums=4, perm=6, topic_sys_flag=0
            )
        ],
        broker_datas=[
            b.BrokerData(cluster="DefaultCluster", broker_name="broker-a", broker_addrs={0: "10.0.0.5:10911"})
        ],
    )


def test_route_data_standard_form_is_protocol_example() -> None:
    # protocol.md §3.17 (request version >= V4_9_4 or acceptStandardJsonOnly)
    assert _route().encode(standard_json=True) == (
        b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.5:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}],"filterServerTable":{},"queueDatas":[{"brokerName":"broker-a",'
        b'"perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
    )


def test_route_data_legacy_form_has_bare_broker_ids() -> None:
    legacy = _route().encode()
    assert b'"brokerAddrs":{0:"10.0.0.5:10911"}' in legacy
    assert b.TopicRouteData.decode(legacy) == _route()
    assert b.TopicRouteData.decode(_route().encode(standard_json=True)) == _route()


def test_route_data_standard_form_sorts_and_escapes() -> None:
    route = _route()
    route.broker_datas[0].broker_addrs = {10: "h:3", 2: "h:2", 0: "h:1"}
    route.order_topic_conf = "broker-é:4"
    text = route.encode(standard_json=True)
    assert b'"brokerAddrs":{"0":"h:1","2":"h:2","10":"h:3"}' in text
    assert b'"orderTopicConf":"broker-\\u00E9:4"' in text


def test_route_form_follows_client_version_or_header() -> None:
    assert b.route_standard_json(409) and b.route_standard_json(401) and b.route_standard_json(479)
    assert not b.route_standard_json(399) and not b.route_standard_json(317, None)
    assert b.route_standard_json(317, True) and not b.route_standard_json(317, False)


def test_cluster_info_is_protocol_example() -> None:
    # protocol.md §3.18: always plain fastjson
    text = (
        b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.5:10911"},"brokerName":"broker-a",'
        b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
    )
    info = b.ClusterInfo.decode(text)
    assert info.broker_addr_table["broker-a"].broker_addrs == {0: "10.0.0.5:10911"}
    assert info.cluster_addr_table == {"DefaultCluster": ["broker-a"]}
    assert info.encode() == text


def test_register_broker_body_is_protocol_example() -> None:
    text = (
        b'{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"timestamp":1700000000000},'
        b'"topicConfigTable":{"T":{"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",'
        b'"topicName":"T","topicSysFlag":0,"writeQueueNums":4}}}}'
    )
    body = b.RegisterBrokerBody.decode(text)
    config = body.topic_config_serialize_wrapper.topic_config_table["T"]
    assert (config.read_queue_nums, config.perm, config.topic_filter_type) == (4, 6, "SINGLE_TAG")
    assert body.topic_config_serialize_wrapper.data_version == b.DataVersion(
        counter=3, timestamp=1700000000000
    )
    assert body.encode() == text


def test_compressed_register_body_layout() -> None:
    wrapper = b.TopicConfigSerializeWrapper(
        topic_config_table={
            "T": b.TopicConfig(topic_name="T", read_queue_nums=4, write_queue_nums=2, perm=7)
        },
        data_version=b.DataVersion(counter=1, timestamp=2),
    )
    body = b.RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=["f:1"])
    raw = zlib.decompress(body.encode(compressed=True))
    dv = b'{"counter":1,"timestamp":2}'
    line = b"T 4 2 7 SINGLE_TAG"
    filters = b'["f:1"]'
    assert (
        raw
        == (struct.pack(">i", len(dv)) + dv + struct.pack(">i", 1) + struct.pack(">i", len(line)) + line)
        + struct.pack(">i", len(filters))
        + filters
    )
    again = b.RegisterBrokerBody.decode_body(body.encode(compressed=True), compressed=True)
    assert again == body
    v5 = zlib.decompress(body.encode(compressed=True, fastjson2=True))
    assert b"T 4 2 7 SINGLE_TAG " in v5 and v5.endswith(struct.pack(">i", 0))


def test_compressed_register_body_errors() -> None:
    with pytest.raises(BodyError):
        b.RegisterBrokerBody.decode_body(b"not zlib", compressed=True)
    with pytest.raises(BodyError):
        b.RegisterBrokerBody.decode_body(zlib.compress(struct.pack(">i", 99) + b"{}"), compressed=True)


def test_topic_config_line_keeps_attributes_with_spaces() -> None:
    config = b.TopicConfig.decode_line('T 8 8 6 MULTI_TAG {"+message.type":"a b"}')
    assert config.topic_filter_type == "MULTI_TAG"
    assert config.attributes == {"+message.type": "a b"}
    with pytest.raises(BodyError):
        b.TopicConfig.decode_line("T 8 8")


def test_heartbeat_as_the_java_client_sends_it() -> None:
    text = (
        b'{"clientID":"10.0.0.9@4242#1","consumerDataSet":[{"consumeFromWhere":"CONSUME_FROM_LAST_OFFSET",'
        b'"consumeType":"CONSUME_PASSIVELY","groupName":"cg","messageModel":"CLUSTERING","subscriptionDataSet":'
        b'[{"classFilterMode":false,"codeSet":[2598919],"expressionType":"TAG","subString":"TagA",'
        b'"subVersion":1700000000000,"tagsSet":["TagA"],"topic":"TopicTest"}],"unitMode":false}],'
        b'"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"}]}'
    )
    hb = b.HeartbeatData.decode(text)
    assert hb.client_id == "10.0.0.9@4242#1"
    sub = hb.consumer_data_set[0].subscription_data_set[0]
    assert (sub.topic, sub.tags_set, sub.code_set, sub.sub_version) == (
        "TopicTest",
        ["TagA"],
        [2598919],
        1700000000000,
    )
    assert hb.encode() == text


def test_lock_bodies() -> None:
    text = b'{"clientId":"c","consumerGroup":"g","mqSet":[{"brokerName":"b","queueId":0,"topic":"t"}]}'
    lock = b.LockBatchRequestBody.decode(text)
    assert lock.mq_set == [MessageQueue(topic="t", broker_name="b", queue_id=0)]
    assert lock.encode() == text
    response = b.LockBatchResponseBody(lock_okmq_set=lock.mq_set)
    assert response.encode() == b'{"lockOKMQSet":[{"brokerName":"b","queueId":0,"topic":"t"}]}'


def test_stats_tables_keyed_by_message_queue() -> None:
    text = (
        b'{"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:'
        b'{"lastUpdateTimestamp":0,"maxOffset":5,"minOffset":0},{"brokerName":"broker-a","queueId":1,'
        b'"topic":"TopicTest"}:{"lastUpdateTimestamp":9,"maxOffset":105,"minOffset":1}}}'
    )
    stats = b.TopicStatsTable.decode(text)
    assert stats.offset_table[MQ0] == b.TopicOffset(min_offset=0, max_offset=5, last_update_timestamp=0)
    assert stats.encode() == text
    consume = b.ConsumeStats(
        offset_table={MQ0: b.OffsetWrapper(broker_offset=5, consumer_offset=3)}, consume_tps=0.0
    )
    assert consume.encode() == (
        b'{"consumeTps":0.0,"offsetTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:'
        b'{"brokerOffset":5,"consumerOffset":3,"lastTimestamp":0}}}'
    )


def test_object_keys_written_as_json_text_are_read_too() -> None:
    # BrowserCompatible / WriteNonStringKeyAsString write the key object as a quoted JSON string
    text = (
        '{"offsetTable":{"{\\"brokerName\\":\\"broker-a\\",\\"queueId\\":0,\\"topic\\":\\"TopicTest\\"}":7}}'
    )
    assert b.ResetOffsetBody.decode(text).offset_table == {MQ0: 7}


def test_consumer_offsets_with_bare_int_keys() -> None:
    text = b'{"offsetTable":{"TopicTest@cg":{0:12,1:7},"%RETRY%cg@cg":{0:0}}}'
    wrapper = b.ConsumerOffsetSerializeWrapper.decode(text)
    assert wrapper.offset_table == {"TopicTest@cg": {0: 12, 1: 7}, "%RETRY%cg@cg": {0: 0}}
    assert wrapper.encode() == text


def test_unknown_properties_ignored_and_missing_ones_defaulted() -> None:
    route = b.TopicRouteData.decode(b'{"queueDatas":[{"brokerName":"x","perm":6,"future":1}],"extra":{}}')
    assert route.queue_datas == [b.QueueData(broker_name="x", perm=6)]
    assert route.broker_datas == [] and route.order_topic_conf is None
    broker = b.BrokerData.decode(b"{}")
    assert broker.cluster is None and broker.broker_addrs == {}


def test_bad_bodies_raise_body_error() -> None:
    for bad in (b"{", b"[1]", b'{"queueDatas":{}}', b'{"brokerDatas":[{"brokerAddrs":{"x":"y"}}]}'):
        with pytest.raises(BodyError):
            b.TopicRouteData.decode(bad)


def test_consumer_running_info_parses_leniently() -> None:
    text = (
        '{"jstack":"x","mqTable":{{"brokerName":"broker-a","queueId":0,"topic":"TopicTest"}:{"cachedMsgCount":3,'
        '"cachedMsgSizeInMiB":1,"droped":false,"locked":true,"newThing":1}},"properties":{"consumeType":'
        '"CONSUME_PASSIVELY","PROP_CONSUMER_START_TIMESTAMP":"1700000000000"},"statusTable":{"TopicTest":'
        '{"consumeFailedMsgs":0,"consumeFailedTPS":0.0,"consumeOKTPS":1.5,"consumeRT":2.0,"pullRT":0.5,'
        '"pullTPS":3.0}},"subscriptionSet":[{"classFilterMode":false,"codeSet":[],"expressionType":"TAG",'
        '"subString":"*","subVersion":1,"tagsSet":[],"topic":"TopicTest"}],"mqPopTable":{}}'
    )
    info = b.ConsumerRunningInfo.decode(text)
    pq = info.mq_table[MQ0]
    assert (pq.cached_msg_count, pq.cached_msg_size_in_mi_b, pq.locked) == (3, 1, True)
    assert info.status_table["TopicTest"].consume_oktps == 1.5
    assert info.properties["consumeType"] == "CONSUME_PASSIVELY"
    assert info.mq_pop_table == {}


def test_message_queue_is_an_ordered_hashable_value() -> None:
    a = MessageQueue(topic="t", broker_name="b", queue_id=1)
    assert a == MessageQueue.from_key(ObjectKey({"brokerName": "b", "queueId": 1, "topic": "t"}))
    assert sorted([a, MQ0]) == ([MQ0, a] if MQ0.topic < "t" else [a, MQ0])
    assert len({a, MessageQueue(topic="t", broker_name="b", queue_id=1)}) == 1


_mq = st.builds(
    MessageQueue, topic=st.text(min_size=1), broker_name=st.text(), queue_id=st.integers(0, 2**31 - 1)
)


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(_mq, st.integers(-(2**63), 2**63 - 1), max_size=5),
    st.booleans(),
)
def test_reset_offset_body_round_trip(table: dict[MessageQueue, int], fastjson2: bool) -> None:
    body = b.ResetOffsetBody(offset_table=table)
    assert b.ResetOffsetBody.decode(body.encode(fastjson2=fastjson2)) == body


@settings(max_examples=100, deadline=None)
@given(
    st.dictionaries(st.text(), st.dictionaries(st.integers(0, 2**31 - 1), st.integers(0, 2**62), max_size=4)),
    st.lists(st.text(), max_size=4),
)
def test_offsets_and_cluster_round_trip(offsets: dict[str, dict[int, int]], names: list[str]) -> None:
    wrapper = b.ConsumerOffsetSerializeWrapper(offset_table=offsets)
    assert b.ConsumerOffsetSerializeWrapper.decode(wrapper.encode()) == wrapper
    info = b.ClusterInfo(
        broker_addr_table={
            n: b.BrokerData(cluster="c", broker_name=n, broker_addrs={i: f"{n}:{i}" for i in range(3)})
            for n in names
        },
        cluster_addr_table={"c": names},
    )
    assert b.ClusterInfo.decode(info.encode()) == info


# -------------------------------------------------------------------------------------------- real classes


def _cases(line: str) -> list[tuple[str, str, b.Body, str]]:
    """(case, Java class simple name, body, mode); v5 bodies carry the properties 5.x always writes."""
    v5 = line == "v5"
    route = _route()
    route.order_topic_conf = "broker-a:4"
    route.filter_server_table = {"10.0.0.5:10911": ["10.0.0.5:10999"]}
    route.broker_datas[0].broker_addrs = {0: "10.0.0.5:10911", 1: "10.0.0.6:10911"}
    if v5:
        route.broker_datas[0].enable_acting_master = False
    topic = b.TopicConfig(topic_name="TopicTest", read_queue_nums=4, write_queue_nums=4, perm=6, order=True)
    if v5:
        topic.attributes = {}
    version = b.DataVersion(counter=7, timestamp=1700000000999, state_version=0 if v5 else None)
    wrapper = b.TopicConfigSerializeWrapper(topic_config_table={"TopicTest": topic}, data_version=version)
    plain_wrapper = dataclasses.replace(wrapper)
    if v5:  # TopicConfigAndMappingSerializeWrapper
        wrapper.mapping_data_version = b.DataVersion(counter=0, timestamp=1, state_version=0)
        wrapper.topic_queue_mapping_detail_map = {}
        wrapper.topic_queue_mapping_info_map = {}
    register = b.RegisterBrokerBody(topic_config_serialize_wrapper=wrapper, filter_server_list=[])
    sub = b.SubscriptionData(
        topic="TopicTest",
        sub_string="TagA || TagB",
        tags_set=["TagA"],
        code_set=[2598919],
        sub_version=1700000000000,
    )
    consumer = b.ConsumerData(
        group_name="cg",
        consume_type="CONSUME_PASSIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_LAST_OFFSET",
        subscription_data_set=[sub],
    )
    heartbeat = b.HeartbeatData(
        client_id="10.0.0.9@4242#1",
        producer_data_set=[b.ProducerData(group_name="CLIENT_INNER_PRODUCER")],
        consumer_data_set=[consumer],
        heartbeat_fingerprint=0 if v5 else None,
        without_sub=False if v5 else None,
    )
    connection = b.Connection(
        client_id="10.0.0.9@4242#1", client_addr="10.0.0.9:50000", language="JAVA", version=409
    )
    lock = b.LockBatchRequestBody(
        consumer_group="cg", client_id="10.0.0.9@4242#1", mq_set=[MQ0], only_this_broker=False if v5 else None
    )
    unlock = b.UnlockBatchRequestBody(
        consumer_group="cg", client_id="10.0.0.9@4242#1", mq_set=[MQ0], only_this_broker=False if v5 else None
    )
    span = b.QueueTimeSpan(
        message_queue=MQ0,
        min_time_stamp=1,
        max_time_stamp=2,
        consume_time_stamp=3,
        delay_time=4,
    )
    group = b.SubscriptionGroupConfig(group_name="cg", retry_max_times=3)
    if v5:
        group.consume_message_orderly = False
        group.group_sys_flag = 0
        group.consume_timeout_minute = 15
        group.attributes = {}
        group.group_retry_policy = {"type": "CUSTOMIZED"}
    return [
        ("route_legacy", "TopicRouteData", route, "rt"),
        ("route_standard", "TopicRouteData", route, "std"),
        (
            "cluster",
            "ClusterInfo",
            b.ClusterInfo(broker_addr_table={"broker-a": route.broker_datas[0]}),
            "rt",
        ),
        ("data_version", "DataVersion", version, "rt"),
        ("topic_config", "TopicConfig", topic, "rt"),
        ("topic_wrapper", "TopicConfigSerializeWrapper", plain_wrapper, "rt"),
        ("register", "RegisterBrokerBody", register, "rt"),
        ("register_compressed_by_java", "RegisterBrokerBody", register, "rbc"),
        ("register_compressed_by_us", "RegisterBrokerBody", register, "rbd"),
        ("heartbeat", "HeartbeatData", heartbeat, "rt"),
        ("check_client", "CheckClientRequestBody", b.CheckClientRequestBody(client_id="c", group="cg"), "rt"),
        (
            "consumer_connection",
            "ConsumerConnection",
            b.ConsumerConnection(
                connection_set=[connection],
                subscription_table={"TopicTest": sub},
                consume_type="CONSUME_PASSIVELY",
                message_model="CLUSTERING",
                consume_from_where="CONSUME_FROM_FIRST_OFFSET",
            ),
            "rt",
        ),
        (
            "producer_connection",
            "ProducerConnection",
            b.ProducerConnection(connection_set=[connection]),
            "rt",
        ),
        (
            "producer_table",
            "ProducerTableInfo",
            b.ProducerTableInfo(
                data={
                    "PG": [
                        b.ProducerInfo(
                            client_id="127.0.0.1@1",
                            remote_ip="/127.0.0.1:50000",
                            language="JAVA",
                            version=453,
                            last_update_timestamp=1700000000000,
                        )
                    ]
                }
            ),
            "rt",
        ),
        ("lock", "LockBatchRequestBody", lock, "rt"),
        ("unlock", "UnlockBatchRequestBody", unlock, "rt"),
        ("lock_response", "LockBatchResponseBody", b.LockBatchResponseBody(lock_okmq_set=[MQ0]), "rt"),
        ("topic_list", "TopicList", b.TopicList(topic_list=["TopicTest"]), "rt"),
        ("kv_table", "KVTable", b.KVTable(table={"note": "中文 ü\x01"}), "rt"),
        ("group_list", "GroupList", b.GroupList(group_list=["cg"]), "rt"),
        (
            "consumer_ids",
            "GetConsumerListByGroupResponseBody",
            b.GetConsumerListByGroupResponseBody(consumer_id_list=["b@2", "a@1"]),
            "rt",
        ),
        (
            "consume_stats",
            "ConsumeStats",
            b.ConsumeStats(
                offset_table={
                    MQ0: b.OffsetWrapper(
                        broker_offset=50, consumer_offset=40, last_timestamp=9, pull_offset=0 if v5 else None
                    )
                },
                consume_tps=12.5,
            ),
            "rt",
        ),
        (
            "topic_stats",
            "TopicStatsTable",
            b.TopicStatsTable(
                offset_table={MQ0: b.TopicOffset(min_offset=1, max_offset=105, last_update_timestamp=9)},
                topic_put_tps=0.0 if v5 else None,
            ),
            "rt",
        ),
        ("reset_offset", "ResetOffsetBody", b.ResetOffsetBody(offset_table={MQ0: 1 << 40}), "rt"),
        (
            "consumer_offsets",
            "ConsumerOffsetSerializeWrapper",
            b.ConsumerOffsetSerializeWrapper(
                offset_table={"TopicTest@cg": {0: 12}}, data_version=version if v5 else None
            ),
            "rt",
        ),
        (
            "time_span",
            "QueryConsumeTimeSpanBody",
            b.QueryConsumeTimeSpanBody(consume_time_span_set=[span]),
            "rt",
        ),
        ("subscription_group", "SubscriptionGroupConfig", group, "rt"),
        (
            "consume_stats_list",
            "ConsumeStatsList",
            b.ConsumeStatsList(
                consume_stats_list=[
                    {
                        "cg": [
                            b.ConsumeStats(
                                offset_table={
                                    MQ0: b.OffsetWrapper(
                                        broker_offset=7, consumer_offset=2, pull_offset=0 if v5 else None
                                    )
                                }
                            )
                        ]
                    }
                ],
                broker_addr="127.0.0.1:10911",
                total_diff=5,
                total_inflight_diff=0 if v5 else None,
            ),
            "rt",
        ),
        (
            "correction_offsets",
            "QueryCorrectionOffsetBody",
            b.QueryCorrectionOffsetBody(correction_offsets={0: 5, 1: (1 << 63) - 1}),
            "rt",
        ),
        (
            "broker_stats",
            "BrokerStatsData",
            b.BrokerStatsData(
                stats_minute=b.BrokerStatsItem(sum=3, tps=0.05, avgpt=1.5),
                stats_hour=b.BrokerStatsItem(sum=3, tps=3 / 3600, avgpt=1.5),
                stats_day=b.BrokerStatsItem(),
            ),
            "rt",
        ),
        (
            "consume_queue",
            "QueryConsumeQueueResponseBody",
            b.QueryConsumeQueueResponseBody(
                subscription_data=sub,
                filter_data="null",
                queue_data=[b.ConsumeQueueData(physic_offset=1 << 33, physic_size=212, tags_code=-3)],
                max_queue_index=5,
            ),
            "rt",
        ),
        (
            "direct_result",
            "ConsumeMessageDirectlyResult",
            b.ConsumeMessageDirectlyResult(consume_result="CR_SUCCESS", remark="ok", spent_time_mills=3),
            "rt",
        ),
        (
            "running_info",
            "ConsumerRunningInfo",
            b.ConsumerRunningInfo(
                properties={"consumeType": "CONSUME_PASSIVELY"},
                subscription_set=[sub],
                mq_table={MQ0: b.ProcessQueueInfo(commit_offset=5, cached_msg_count=2, locked=True)},
                status_table={"TopicTest": b.ConsumeStatus(pull_rt=1.5, consume_oktps=2.0)},
                mq_pop_table={} if v5 else None,
                user_consumer_info={} if v5 else None,
            ),
            "rt",
        ),
    ]


def _ours(body: b.Body, mode: str, line: str) -> bytes:
    fastjson2 = line == "v5"
    if mode == "std":
        assert isinstance(body, b.TopicRouteData)
        return body.encode(standard_json=True, fastjson2=fastjson2)
    if mode == "rbd":
        assert isinstance(body, b.RegisterBrokerBody)
        return body.encode(compressed=True, fastjson2=fastjson2)
    return body.encode(fastjson2=fastjson2)


@pytest.fixture(scope="module", params=["v4", "v5"])
def java_bodies(request: pytest.FixtureRequest) -> tuple[str, dict[str, tuple[b.Body, str, bytes, bytes]]]:
    """Each case's body as we write it, read and written again by the line's Java body classes (the
    golden build's ``bodies`` command)."""
    line = request.param
    cases = _cases(line)
    requests = []
    for _, java_class, body, mode in cases:
        payload = _ours(body, mode, line)
        requests.append(f"{mode}\t{java_class}\t{base64.b64encode(payload).decode()}")
    rows = run_golden(line, "bodies", stdin="\n".join(requests) + "\n")
    results = {}
    for (name, _, body, mode), (status, answer) in zip(cases, rows, strict=True):
        assert status == "ok", f"{name}: Java failed: {answer}"
        results[name] = (body, mode, _ours(body, mode, line), base64.b64decode(answer))
    return line, results


_CASE_NAMES = [name for name, *_ in _cases("v4")]


@pytest.mark.java
@pytest.mark.parametrize("case", _CASE_NAMES)
def test_java_reads_and_rewrites_our_bodies(java_bodies: tuple[str, dict[str, Any]], case: str) -> None:
    line, results = java_bodies
    body, mode, ours, java = results[case]
    if mode == "rbc":
        # Java compressed what it read from our JSON; we inflate it back to the same body (less what
        # the compressed form does not carry: order and topicSysFlag)
        again = b.RegisterBrokerBody.decode_body(java, compressed=True)
        assert again.topic_config_serialize_wrapper.topic_config_table["TopicTest"].order is False
        assert again == _without_order_and_sys_flag(body)
        return
    if mode == "rbd":
        # Java inflated our compressed body; it writes the same JSON we write for that body
        expected = _without_order_and_sys_flag(body)
        again = b.RegisterBrokerBody.decode(java)
        if line == "v5":  # Java fills a fresh mappingDataVersion (timestamp "now") and empty maps
            wrapper = again.topic_config_serialize_wrapper
            assert wrapper.mapping_data_version is not None and wrapper.topic_queue_mapping_detail_map == {}
            wrapper.mapping_data_version = None
            wrapper.topic_queue_mapping_detail_map = None
        else:
            assert java == expected.encode()
        assert again == expected
        return
    if case == "time_span":
        # Java adds the *TimeStampStr getters (formatted in the JVM's time zone); the rest is ours
        decoded_span = b.QueryConsumeTimeSpanBody.decode(java).consume_time_span_set[0]
        assert isinstance(body, b.QueryConsumeTimeSpanBody)
        assert decoded_span.min_time_stamp_str is not None
        decoded_span.min_time_stamp_str = decoded_span.max_time_stamp_str = None
        decoded_span.consume_time_stamp_str = None
        assert decoded_span == body.consume_time_span_set[0]
        return
    assert java == ours
    decoded = type(body).decode(java)
    assert decoded == body
    assert _ours(decoded, mode, line) == java


def _without_order_and_sys_flag(body: b.Body) -> b.RegisterBrokerBody:
    """The compressed form carries name, queue numbers, perm, filter type (and 5.x attributes) only."""
    assert isinstance(body, b.RegisterBrokerBody)
    wrapper = body.topic_config_serialize_wrapper
    table = {
        name: b.TopicConfig(
            topic_name=c.topic_name,
            read_queue_nums=c.read_queue_nums,
            write_queue_nums=c.write_queue_nums,
            perm=c.perm,
            topic_filter_type=c.topic_filter_type,
            attributes=c.attributes,
        )
        for name, c in wrapper.topic_config_table.items()
    }
    return b.RegisterBrokerBody(
        topic_config_serialize_wrapper=b.TopicConfigSerializeWrapper(
            topic_config_table=table,
            data_version=wrapper.data_version,
            topic_queue_mapping_info_map=wrapper.topic_queue_mapping_info_map,
        ),
        filter_server_list=body.filter_server_list,
    )
