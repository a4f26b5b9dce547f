"""Transaction check-back and SQL92 filtering with the real Java client, on the twin and on real RocketMQ.

Targets: rmqtwin with the 4.9.8 and 5.5.0 clients, real 4.9.7 (client 4.9.8) and real 5.5.0, every
broker with property filtering on (``FEATURE_CONF``) and the suite's short check-back cadence. Each
scenario asserts the same observation for every target, so a twin/real difference fails here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.fakes.broker.sql92 import compile_selector, matches
from tests.fakes.test_java_conformance import TWIN_CONF, Target

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
    name = str(request.param)
    if name.startswith("rmqtwin"):
        line = name.removeprefix("rmqtwin-client")
        twin = getattr(request.session, "_rmqtwin_features_twin", None)
        if twin is None:
            twin = rocketmq_factory(broker_conf={**TWIN_CONF, **FEATURE_CONF}, broker_name="broker-a")
            request.session._rmqtwin_features_twin = twin  # type: ignore[attr-defined]
        return Target(name, twin.namesrv_addr, twin.broker_addr, java_client_factory(line))
    line = name.removeprefix("real-")
    real = request.getfixturevalue("real_rocketmq_factory")(line, broker_conf_overrides=FEATURE_CONF)
    return Target(name, real.namesrv_addr, real.broker_addr, java_client_factory(line))


def test_unknown_local_transactions_are_resolved_by_the_check_back(
    target: Target, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("Tx")
    target.create_topic(topic)
    messages = [
        {"body": "tx-checked-commit", "keys": "TXC", "transaction": "unknown", "check": "commit"},
        {"body": "tx-checked-rollback", "keys": "TXR", "transaction": "unknown", "check": "rollback"},
        {"body": "tx-direct-commit", "keys": "TXD", "transaction": "commit"},
        {"body": "tx-direct-rollback", "keys": "TXX", "transaction": "rollback"},
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
    # One check per unresolved message: the answer resolves it, so the broker never asks again.
    assert sorted(e["index"] for e in checks) == [0, 1]
    for event in checks:
        assert event["topic"] == topic
        assert event["properties"]["TRANSACTION_CHECK_TIMES"] == "1"
        assert event["properties"]["REAL_TOPIC"] == topic
        assert event["transactionId"] == event["properties"]["UNIQ_KEY"]
    assert {e["answer"] for e in checks} == {"COMMIT_MESSAGE", "ROLLBACK_MESSAGE"}

    got = target.client.push_consumer(
        target.namesrv_addr, topic, group=unique_name("txc"), expect=2, timeoutMs=60000, settleMs=3000
    )
    assert sorted(e["body"] for e in got.received) == ["tx-checked-commit", "tx-direct-commit"], got.stderr[
        -2000:
    ]


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
