"""SQL92 subscriptions on the broker: pull filtering by stored properties, CHECK_CLIENT_CONFIG, errors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from twisted.internet.task import Clock

from rmqtwin.codec.bodies import SubscriptionData, from_value
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.message import decode_message_records
from rmqtwin.fakes.broker.controller import BrokerController
from rmqtwin.fakes.broker.filter import (
    FilterError,
    SqlMessageFilter,
    build_subscription_data,
    message_filter_for,
)
from rmqtwin.fakes.broker.sql92 import compile_selector
from tests.fakes.helpers import Peer, clocked_broker, make_broker, peer, send_v2

TOPIC = "SqlTopic"
GROUP = "sql_group"


@pytest.fixture
def env(tmp_path: Any) -> Iterator[tuple[BrokerController, Clock]]:
    with clocked_broker(tmp_path, enablePropertyFilter="true") as env:
        yield env


def sql_subscription(topic: str, sql: str) -> dict[str, Any]:
    return {
        "classFilterMode": False,
        "codeSet": [],
        "expressionType": "SQL92",
        "subString": sql,
        "subVersion": 1,
        "tagsSet": [],
        "topic": topic,
    }


def sql_data(topic: str, sql: str) -> SubscriptionData:
    return from_value(SubscriptionData, sql_subscription(topic, sql))


def heartbeat(p: Peer, group: str, subscription: dict[str, Any], version: int = 409) -> None:
    body = orjson.dumps(
        {
            "clientID": "127.0.0.1@sql",
            "consumerDataSet": [
                {
                    "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                    "consumeType": "CONSUME_PASSIVELY",
                    "groupName": group,
                    "messageModel": "CLUSTERING",
                    "subscriptionDataSet": [subscription],
                    "unitMode": False,
                }
            ],
            "producerDataSet": [],
        }
    )
    assert p.call(RequestCode.HEART_BEAT, None, body, version=version).code == ResponseCode.SUCCESS


def pull(p: Peer, group: str, topic: str, *, sys_flag: int = 0, version: int = 409, **extra: Any) -> Any:
    return p.call(
        RequestCode.PULL_MESSAGE,
        {
            "consumerGroup": group,
            "topic": topic,
            "queueId": 0,
            "queueOffset": 0,
            "maxMsgNums": 32,
            "sysFlag": sys_flag,
            "commitOffset": 0,
            "suspendTimeoutMillis": 0,
            "subVersion": 0,
            **extra,
        },
        version=version,
    )


def send_all(p: Peer) -> None:
    for i, (a, b) in enumerate([("1", "x"), ("6", "x"), ("7", "y"), ("9", "x"), ("abc", "x")]):
        send_v2(p, TOPIC, f"m{i}".encode(), props={"a": a, "b": b})
    send_v2(p, TOPIC, b"no-props")


def bodies(answer: Any) -> list[bytes]:
    assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
    return [m.body for m in decode_message_records(answer.body or b"")]


def test_pull_with_a_heartbeat_sql_subscription_returns_only_matching_messages(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_all(p)
    heartbeat(p, GROUP, sql_subscription(TOPIC, "a > 5 AND b = 'x'"))
    assert bodies(pull(p, GROUP, TOPIC)) == [b"m1", b"m3"]


def test_pull_with_the_subscription_in_the_request(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_all(p)
    heartbeat(p, GROUP, sql_subscription(TOPIC, "TRUE"))
    answer = pull(p, GROUP, TOPIC, sys_flag=4, subscription="b = 'y' OR a IS NULL", expressionType="SQL92")
    assert bodies(answer) == [b"m2", b"no-props"]


@pytest.mark.parametrize("client_version", [477, 409])
@pytest.mark.parametrize(
    ("line", "delivered"),
    # 4.9: STARTSWITH is a property name, so the selector is "b" cast to boolean: never TRUE
    [("5.5", [b"m2"]), ("4.9", None)],
)
def test_the_emulated_line_picks_the_grammar_whatever_the_client(
    env: Any, line: str, delivered: list[bytes] | None, client_version: int
) -> None:
    broker, clock = env
    broker.config.rocketmq_version = line
    p = peer(broker, clock)
    send_all(p)
    answer = pull(
        p,
        GROUP,
        TOPIC,
        sys_flag=4,
        subscription="b STARTSWITH 'y'",
        expressionType="SQL92",
        version=client_version,
    )
    if delivered is None:
        assert answer.code == ResponseCode.PULL_RETRY_IMMEDIATELY
    else:
        assert bodies(answer) == delivered


def test_unparsable_subscription_in_the_pull_delivers_everything_unless_strict(env: Any) -> None:
    """Real 4.9.7 answers FOUND with every message (``ConsumerFilterManager.build`` returns null);
    ``rejectUnparsableSql92=true`` gives the stricter SUBSCRIPTION_PARSE_FAILED."""
    broker, clock = env
    p = peer(broker, clock)
    send_all(p)
    answer = pull(p, GROUP, TOPIC, sys_flag=4, subscription="a >", expressionType="SQL92")
    assert len(bodies(answer)) == 6
    broker.config.reject_unparsable_sql92 = True
    answer = pull(p, GROUP, TOPIC, sys_flag=4, subscription="a >", expressionType="SQL92")
    assert (answer.code, answer.remark) == (
        ResponseCode.SUBSCRIPTION_PARSE_FAILED,
        "parse the consumer's subscription failed",
    )


def test_unparsable_heartbeat_subscription_has_no_filter_data(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_all(p)
    heartbeat(p, GROUP, sql_subscription(TOPIC, "a = NULL"))
    answer = pull(p, GROUP, TOPIC)
    assert answer.code == ResponseCode.FILTER_DATA_NOT_EXIST
    assert answer.remark == "The broker's consumer filter data is not exist!Your expression may be wrong!"


def test_sql_pull_without_property_filtering_enabled(tmp_path: Any) -> None:
    clock = Clock()
    broker = make_broker(tmp_path, clock)
    try:
        p = peer(broker, clock)
        send_all(p)
        heartbeat(p, GROUP, sql_subscription(TOPIC, "a > 5"))
        answer = pull(p, GROUP, TOPIC)
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "The broker does not support consumer to filter message by SQL92",
        )
    finally:
        broker.shutdown()


def check_client_config(p: Peer, subscription: dict[str, Any], version: int = 409) -> Any:
    body = orjson.dumps({"clientId": "127.0.0.1@sql", "group": GROUP, "subscriptionData": subscription})
    return p.call(RequestCode.CHECK_CLIENT_CONFIG, None, body, version=version)


def test_check_client_config_compiles_the_expression(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    assert check_client_config(p, sql_subscription(TOPIC, "a > 5")).code == ResponseCode.SUCCESS
    tag = {**sql_subscription(TOPIC, "*"), "expressionType": "TAG"}
    assert check_client_config(p, tag).code == ResponseCode.SUCCESS
    bad = check_client_config(p, sql_subscription(TOPIC, "a > 'x'"))
    assert bad.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert bad.remark == "java.lang.RuntimeException: Value ''x'' cannot be compared."
    bad = check_client_config(p, sql_subscription(TOPIC, "a CONTAINS 'x'"), version=409)
    assert bad.code == ResponseCode.SUCCESS, "4.9 reads CONTAINS as trailing tokens"
    assert check_client_config(p, sql_subscription(TOPIC, "contains = 'x'"), version=477).code == (
        ResponseCode.SUBSCRIPTION_PARSE_FAILED
    )


def test_check_client_config_without_property_filtering(tmp_path: Any) -> None:
    clock = Clock()
    broker = make_broker(tmp_path, clock)
    try:
        answer = check_client_config(peer(broker, clock), sql_subscription(TOPIC, "a > 5"))
        assert (answer.code, answer.remark) == (
            ResponseCode.SYSTEM_ERROR,
            "The broker does not support consumer to filter message by SQL92",
        )
    finally:
        broker.shutdown()


def test_message_filter_for_picks_by_expression_type() -> None:
    tag = message_filter_for(build_subscription_data(TOPIC, "*"), False, from_request=False)
    assert type(tag).__name__ == "TagMessageFilter"
    sql = message_filter_for(sql_data(TOPIC, "a = 1"), False, from_request=False)
    assert isinstance(sql, SqlMessageFilter)
    assert sql.is_matched_by_consume_queue(123) is True
    assert sql.is_matched_by_commit_log(None, {"a": "1"}) is True
    assert sql.is_matched_by_commit_log(None, {"a": "x"}) is False, "a failed conversion is no match"
    unfiltered = message_filter_for(sql_data(TOPIC, "a ="), False, from_request=True)
    assert unfiltered.is_matched_by_commit_log(None, {"a": "x"}) is True, "as the reals: no filter"
    with pytest.raises(FilterError) as raised:
        message_filter_for(sql_data(TOPIC, "a ="), False, from_request=True, strict=True)
    assert raised.value.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert compile_selector("a = 1", 4) is compile_selector("a = 1", 4), "compiled once, like Java's cache"


def test_unknown_expression_type(env: Any) -> None:
    broker, clock = env
    p = peer(broker, clock)
    send_all(p)
    other = {**sql_subscription(TOPIC, "a > 5"), "expressionType": "FOO"}
    answer = check_client_config(p, other)
    assert answer.code == ResponseCode.SUBSCRIPTION_PARSE_FAILED
    assert "FilterFactory.get(String)" in (answer.remark or "")
    # Sent with the pull, Java builds no filter data and filters nothing.
    answer = pull(p, GROUP, TOPIC, sys_flag=4, subscription="a > 5", expressionType="FOO")
    assert len(bodies(answer)) == 6
    heartbeat(p, GROUP, other)
    assert pull(p, GROUP, TOPIC).code == ResponseCode.FILTER_DATA_NOT_EXIST


@pytest.mark.parametrize("topic", ["T", "T" * 200], ids=["v1-record", "v2-record"])
@pytest.mark.parametrize("v6", [False, True], ids=["ipv4", "ipv6"])
def test_record_properties_reads_what_the_full_decoder_reads(topic: str, v6: bool) -> None:
    from rmqtwin.codec.message import (
        MESSAGE_MAGIC_CODE,
        MESSAGE_MAGIC_CODE_V2,
        MessageExt,
        decode_message_record,
        encode_message_record,
        read_record_properties,
    )

    host = ("::1", 7) if v6 else ("127.0.0.1", 7)
    msg = MessageExt(
        topic=topic,
        body=b"body" * 10,
        properties={"a": "6", "b": "x", "UNIQ_KEY": "U"},
        born_host=host,
        store_host=host,
        magic=MESSAGE_MAGIC_CODE_V2 if len(topic) > 127 else MESSAGE_MAGIC_CODE,
    )
    record = encode_message_record(msg)
    assert read_record_properties(record) == decode_message_record(record)[0].properties == msg.properties
    assert read_record_properties(record[:-3]) is None
