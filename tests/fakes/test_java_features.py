"""Transaction check-back limits and CHECK_CLIENT_CONFIG with the real Java client, on the twin and on real
RocketMQ (check-back commit/rollback and SQL92 filtering are scenarios of the catalog, conformance/catalog/).

Targets: rmqtwin with the 4.9.8 and 5.5.0 clients, real 4.9.7 (client 4.9.8) and real 5.5.0, every
broker with property filtering on (``FEATURE_CONF``) and the suite's short check-back cadence. Each
scenario asserts the same observation for every target, so a twin/real difference fails here.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import orjson
import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.message import decode_message_records
from tests.fakes.helpers import call
from tests.fakes.java_target import Target, target_fixture

pytestmark = pytest.mark.java

# On top of the suite's shared broker.conf (TWIN_BROKER_CONF mirrors it: half messages checked every second
# after 2 s); the real brokers refuse SQL92 subscriptions without this.
FEATURE_CONF = {"enablePropertyFilter": "true"}

TARGETS = [
    "rmqtwin-client4.9",
    "rmqtwin-client5",
    pytest.param("real-4.9", marks=[pytest.mark.real, pytest.mark.slow]),
    pytest.param("real-5", marks=[pytest.mark.real, pytest.mark.slow]),
]


target = target_fixture(TARGETS, FEATURE_CONF)


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
