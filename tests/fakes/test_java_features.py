"""Transaction check-back and SQL92 filtering with the real Java client, on the twin and on real RocketMQ.

Targets: rmqtwin with the 4.9.8 and 5.5.0 clients, real 4.9.7 (client 4.9.8) and real 5.5.0, every
broker with property filtering on (``FEATURE_CONF``) and the suite's short check-back cadence. Each
scenario asserts the same observation for every target, so a twin/real difference fails here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.message import decode_message_records
from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.fakes.broker.sql92 import compile_selector, matches
from tests.fakes.test_java_conformance import Target, make_target
from tests.fakes.test_serve import call

pytestmark = pytest.mark.java

# On top of the suite's shared broker.conf (TWIN_CONF mirrors it: half messages checked every second
# after 2 s); the real brokers refuse SQL92 subscriptions without this.
FEATURE_CONF = {"enablePropertyFilter": "true"}

TARGETS = [
    "rmqtwin-client4.9",
    "rmqtwin-client5",
    pytest.param("real-4.9", marks=[pytest.mark.real, pytest.mark.slow]),
    pytest.param("real-5", marks=[pytest.mark.real, pytest.mark.slow]),
]


@pytest.fixture(scope="session", params=TARGETS)
def target(
    request: pytest.FixtureRequest,
    java_client_factory: Callable[[str], JavaClient],
    rocketmq_factory: Any,
) -> Target:
    return make_target(request, java_client_factory, rocketmq_factory, FEATURE_CONF)


def test_unknown_local_transactions_are_resolved_by_the_check_back(
    target: Target, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("Tx")
    target.create_topic(topic)
    # Every message's checker agrees with its local answer: 5.5.0 writes op records in batches every
    # 3 s (transactionOpBatchInterval), so with the suite's 2 s timeout it may check messages that were
    # already resolved, or check one again after its answer (and then store the commit twice); which
    # messages are delivered must not depend on that.
    messages = [
        {"body": "tx-checked-commit", "keys": "TXC", "transaction": "unknown", "check": "commit"},
        {"body": "tx-checked-rollback", "keys": "TXR", "transaction": "unknown", "check": "rollback"},
        {"body": "tx-direct-commit", "keys": "TXD", "transaction": "commit", "check": "commit"},
        {"body": "tx-direct-rollback", "keys": "TXX", "transaction": "rollback", "check": "rollback"},
    ]
    produced = target.client.producer(
        target.namesrv_addr,
        topic,
        mode="transaction",
        group=unique_name("txp"),
        messages=messages,
        expectChecks=2,
        timeoutMs=60000,
    ).check()
    assert produced.summary["sent"] == 4 and not produced.summary["timedOut"], produced.stderr[-3000:]
    states = {e["index"]: e["localTransactionState"] for e in produced.sent}
    assert states == {0: "UNKNOW", 1: "UNKNOW", 2: "COMMIT_MESSAGE", 3: "ROLLBACK_MESSAGE"}
    checks = produced.of("check")
    assert {0, 1} <= {e["index"] for e in checks}, checks
    for event in checks:
        assert event["topic"] == topic
        assert int(event["properties"]["TRANSACTION_CHECK_TIMES"]) >= 1
        assert event["properties"]["REAL_TOPIC"] == topic
        assert event["transactionId"] == event["properties"]["UNIQ_KEY"]
    first = {e["index"]: e for e in reversed(checks)}
    assert first[0]["properties"]["TRANSACTION_CHECK_TIMES"] == "1"
    assert (first[0]["answer"], first[1]["answer"]) == ("COMMIT_MESSAGE", "ROLLBACK_MESSAGE")

    got = target.client.push_consumer(
        target.namesrv_addr, topic, group=unique_name("txc"), expect=2, timeoutMs=60000, settleMs=3000
    )
    # A set: 5.5.0's second check of an answered message (see above) can commit it twice.
    assert {e["body"] for e in got.received} == {"tx-checked-commit", "tx-direct-commit"}, got.stderr[-2000:]


@pytest.mark.slow  # 15 check-back rounds, about 20 s per target
def test_a_message_never_resolved_is_parked_after_transaction_check_max(
    target: Target, unique_name: Callable[[str], str]
) -> None:
    """15 checks answered UNKNOW (default ``transactionCheckMax``), then TRANS_CHECK_MAX_TIME_TOPIC."""
    topic, key = unique_name("TxMax"), unique_name("K")
    target.create_topic(topic)
    produced = target.client.producer(
        target.namesrv_addr,
        topic,
        mode="transaction",
        group=unique_name("txm"),
        messages=[{"body": "tx-never", "keys": key, "transaction": "unknown", "check": "unknown"}],
        expectChecks=15,
        timeoutMs=90000,
    ).check()
    checks = produced.of("check")
    assert [e["properties"]["TRANSACTION_CHECK_TIMES"] for e in checks] == [str(n) for n in range(1, 16)]
    deadline = time.monotonic() + 30
    while True:
        answer = call(
            target.broker_addr,
            RequestCode.QUERY_MESSAGE,
            {
                "topic": "TRANS_CHECK_MAX_TIME_TOPIC",
                "key": key,
                "maxNum": "32",
                "beginTimestamp": "0",
                "endTimestamp": str(2**62),
            },
        )
        if answer.code == ResponseCode.SUCCESS or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
    [parked] = decode_message_records(answer.body or b"")
    assert (parked.topic, parked.body) == ("TRANS_CHECK_MAX_TIME_TOPIC", b"tx-never")
    assert parked.properties["TRANSACTION_CHECK_TIMES"] == "15"
    assert parked.properties["REAL_TOPIC"] == topic


SQL = "a > 5 AND b = 'x'"
PROPERTY_SETS = [
    {"a": "1", "b": "x"},
    {"a": "6", "b": "x"},
    {"a": "7", "b": "y"},
    {"a": "9", "b": "x"},
    {"a": "abc", "b": "x"},
    {"a": "6.5", "b": "x"},
    {"b": "x"},
    {"a": "10"},
    {"a": "+8", "b": "x"},
]


def test_sql92_push_consumer_gets_only_matching_messages(
    target: Target, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("Sql")
    target.create_topic(topic)
    messages = [{"body": f"m{i}", "properties": props} for i, props in enumerate(PROPERTY_SETS)]
    target.client.producer(
        target.namesrv_addr, topic, mode="sync", messages=messages, timeoutMs=30000
    ).check()
    expression = compile_selector(SQL, 5 if target.client.version.line == "5" else 4)
    expected = sorted(m["body"] for m in messages if matches(expression, m["properties"]))
    assert expected == ["m1", "m3", "m8"], "the selector's reading of these properties"
    got = target.client.push_consumer(
        target.namesrv_addr,
        topic,
        group=unique_name("sqlg"),
        sql=SQL,
        expect=3,
        timeoutMs=60000,
        settleMs=3000,
    )
    assert got.returncode == 0 and not got.of("fatal"), got.stderr[-3000:]
    assert sorted(e["body"] for e in got.received) == expected


def test_sql92_subscription_that_does_not_compile_fails_the_consumer_start(
    target: Target, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("SqlBad")
    target.create_topic(topic)
    got = target.client.push_consumer(
        target.namesrv_addr, topic, group=unique_name("sqlb"), sql="a > 'x'", expect=1, timeoutMs=5000
    )
    [fatal] = got.of("fatal")
    # CHECK_CLIENT_CONFIG answers SUBSCRIPTION_PARSE_FAILED with the compile error as its remark.
    assert fatal["responseCode"] == 23, fatal
    assert fatal["message"].startswith(
        "CODE: 23  DESC: java.lang.RuntimeException: Value ''x'' cannot be compared."
    )


CHECK_CLIENT_CONFIG_CASES = [
    # (expression type, expression, response code, remark or the start of it)
    ("SQL92", "a > 5 AND b = 'x'", 0, None),
    ("TAG", "*", 0, None),
    ("SQL92", "a > 'x'", 23, "java.lang.RuntimeException: Value ''x'' cannot be compared."),
    ("SQL92", "a = NULL", 23, "java.lang.RuntimeException: 'NULL' cannot be compared."),
    ("SQL92", "a > 0.0", 23, "java.lang.RuntimeException: 0.0 is less than 4.9E-324"),
    ("SQL92", "a BETWEEN 2 AND 1", 23, "java.lang.RuntimeException: Illegal values of between"),
    (
        "SQL92",
        "a >",
        23,
        'org.apache.rocketmq.filter.parser.ParseException: Encountered "<EOF>" at line 1, column 3.',
    ),
    ("FOO", "a > 5", 23, 'Cannot invoke "org.apache.rocketmq.filter.FilterSpi.compile(String)"'),
]


def test_check_client_config_answers(target: Target, unique_name: Callable[[str], str]) -> None:
    """CHECK_CLIENT_CONFIG straight to the broker: SUCCESS, or SUBSCRIPTION_PARSE_FAILED and the error."""
    topic = unique_name("Ccc")
    for expression_type, expression, code, remark in CHECK_CLIENT_CONFIG_CASES:
        subscription = {
            "classFilterMode": False,
            "codeSet": [],
            "expressionType": expression_type,
            "subString": expression,
            "subVersion": 1,
            "tagsSet": [],
            "topic": topic,
        }
        body = orjson.dumps(
            {"clientId": "127.0.0.1@ccc", "group": "ccc_group", "subscriptionData": subscription}
        )
        answer = call(target.broker_addr, RequestCode.CHECK_CLIENT_CONFIG, None, body)
        assert answer.code == code, (expression, answer.remark)
        if remark is None:
            assert answer.remark is None
        else:
            assert (answer.remark or "").startswith(remark), (expression, answer.remark)
