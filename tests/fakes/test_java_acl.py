"""Plain ACL with the real Java client (4.9.8): rmqtwin and a real 4.9.7 broker, each with
``aclEnable=true`` and the same plain_acl.yml, refuse and accept the same requests with the same
answers.

One ``AclProbe`` run per target holds every refusal case (each case a client with credentials of
its own); mqadmin updateTopic signs with a non-admin tools.yml; a signed producer (over the VIP
channel) and a signed push consumer then show the right credentials send and consume.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.codec.connection import RemotingConnection, ResponseReceived
from rmqtwin.fakes.broker.acl import sign_request
from rmqtwin.fakes.pytest_plugin import RunningTwin, start_subprocess
from tests.fakes.acl_accounts import (
    ADMIN,
    GROUP_DENY,
    GROUP_OK,
    PLAIN_ACL_YML,
    SUB_ONLY,
    TOPIC_DENY,
    TOPIC_NEW,
    TOPIC_OK,
    UNKNOWN_KEY,
    USER,
    WRONG_SECRET,
)

CASES: list[dict[str, Any]] = [
    {"name": "admin creates", "action": "updateTopic", "topic": TOPIC_OK, "acl": ADMIN},
    {"name": "admin creates deny", "action": "updateTopic", "topic": TOPIC_DENY, "acl": ADMIN},
    {"name": "user updateTopic", "action": "updateTopic", "topic": TOPIC_NEW, "acl": USER},
    {"name": "user sends", "action": "send", "topic": TOPIC_OK, "acl": USER},
    {"name": "wrong secret", "action": "send", "topic": TOPIC_OK, "acl": WRONG_SECRET},
    {"name": "unknown key", "action": "send", "topic": TOPIC_OK, "acl": UNKNOWN_KEY},
    {"name": "no credentials", "action": "send", "topic": TOPIC_OK},
    {"name": "sub only sends", "action": "send", "topic": TOPIC_OK, "acl": SUB_ONLY},
    {"name": "deny topic send", "action": "send", "topic": TOPIC_DENY, "acl": USER},
    {"name": "sub only pulls", "action": "pull", "topic": TOPIC_OK, "group": GROUP_OK, "acl": SUB_ONLY},
    {"name": "deny topic pull", "action": "pull", "topic": TOPIC_DENY, "group": GROUP_OK, "acl": USER},
    {"name": "deny group pull", "action": "pull", "topic": TOPIC_OK, "group": GROUP_DENY, "acl": USER},
    # Both refused: Java reports the first in HashMap order, here the group (added second).
    {"name": "deny both pull", "action": "pull", "topic": TOPIC_DENY, "group": GROUP_DENY, "acl": USER},
]

ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException: "
REFUSALS = {
    "user updateTopic": (
        f"Need admin permission for request code=17, but accessKey={USER['accessKey']} is not"
    ),
    "wrong secret": f"Check signature failed for accessKey={USER['accessKey']}",
    "unknown key": "No acl config for NoSuchKey1",
    "no credentials": "No accessKey is configured",
    "sub only sends": f"No default permission for topic:{TOPIC_OK}",
    "deny topic send": f"No default permission for topic:{TOPIC_DENY}",
    "deny topic pull": f"No default permission for topic:{TOPIC_DENY}",
    "deny group pull": f"No default permission for group:{GROUP_DENY}",
    "deny both pull": f"No default permission for group:{GROUP_DENY}",
}
"""What ``PlainPermissionManager`` (4.9.x) says for each refused case; the others succeed."""

_VOLATILE = [
    (re.compile(r"\d+\.\d+\.\d+\.\d+:\d+"), "ADDR"),
    (re.compile(r"cost \[\d+\]ms"), "cost [N]ms"),
]


def _outcome(event: dict[str, Any]) -> tuple[Any, ...]:
    """What the client saw, without addresses and timings."""
    if event["ok"]:
        return (True, event.get("found") is not None and event["found"] > 0)
    text = event.get("remark") or event["message"]
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return (False, event["responseCode"], event["exception"], text)


def run_scenario(java_client: Any, namesrv: str, broker_addr: str) -> dict[str, Any]:
    cases = probe(java_client, namesrv, broker_addr)
    # mqadmin itself, signing with the non-admin account of its conf/tools.yml.
    tools_yml = f"accessKey: {USER['accessKey']}\nsecretKey: {USER['secretKey']}\n"
    mqadmin = java_client.mqadmin(
        namesrv, "updateTopic", "-b", broker_addr, "-t", TOPIC_NEW, conf_files={"tools.yml": tools_yml}
    )
    sent = java_client.producer(
        namesrv, TOPIC_OK, count=3, acl=USER, vipChannel=True, group="PG_acl", retryTimes=0
    ).check()
    consumed = java_client.push_consumer(
        namesrv,
        TOPIC_OK,
        GROUP_OK,
        acl=USER,
        expect=4,
        consumeFromWhere="CONSUME_FROM_FIRST_OFFSET",
        timeoutMs=60_000,
    )
    return {"cases": cases, "sent": sent, "consumed": consumed, "mqadmin": _caused_by(mqadmin.stderr)}


def _caused_by(stderr: str) -> str:
    """The exception under mqadmin's ``SubCommandException``: its line and the next (the FAQ link)."""
    lines = stderr.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("Caused by: "):
            return "\n".join(lines[i : i + 2])
    return stderr


def check_acl_semantics(result: dict[str, Any]) -> None:
    cases = result["cases"]
    assert set(cases) == {c["name"] for c in CASES}
    for name, event in cases.items():
        expected = REFUSALS.get(name)
        if expected is None:
            assert event["ok"], event
            continue
        assert not event["ok"], event
        assert event["responseCode"] == 1, event  # SYSTEM_ERROR
        text = event.get("remark") or event["message"]
        assert ACL_EXCEPTION + expected + ", org.apache.rocketmq.acl.plain." in text, event
    assert cases["sub only pulls"]["found"] >= 1
    assert result["mqadmin"].startswith(
        "Caused by: org.apache.rocketmq.client.exception.MQClientException: CODE: 1  DESC: "
    )
    assert ACL_EXCEPTION + REFUSALS["user updateTopic"] + ", org.apache" in result["mqadmin"]
    assert [e["status"] for e in result["sent"].sent] == ["SEND_OK"] * 3
    assert result["consumed"].summary["consumed"] >= 4, result["consumed"].summary


def _write_acl(directory: Path) -> Path:
    path = directory / "plain_acl.yml"
    path.write_text(PLAIN_ACL_YML, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTwin]:
    base = tmp_path_factory.mktemp("acl-twin")
    running = start_subprocess(
        str(base / "twin"),
        broker_conf={"aclEnable": True},
        serve_args=["--acl-file", str(_write_acl(base))],
    )
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def twin_result(twin: RunningTwin, java_client_factory: Any) -> dict[str, Any]:
    return run_scenario(java_client_factory("4.9"), twin.namesrv_addr, twin.broker_addr)


def _real_with_acl(real_rocketmq_factory: Any, version: str) -> Any:
    return real_rocketmq_factory(
        version,
        broker_conf_overrides={"aclEnable": True},
        conf_files={"plain_acl.yml": PLAIN_ACL_YML},
    )


@pytest.fixture(scope="module")
def real_acl(real_rocketmq_factory: Any) -> Any:
    return _real_with_acl(real_rocketmq_factory, "4.9")


@pytest.fixture(scope="module")
def real_result(real_acl: Any, java_client_factory: Any) -> dict[str, Any]:
    return run_scenario(java_client_factory("4.9"), real_acl.namesrv_addr, real_acl.broker_addr)


def probe(java_client: Any, namesrv: str, broker_addr: str) -> dict[str, dict[str, Any]]:
    result = java_client.run("acl_probe", {"namesrv": namesrv, "brokerAddr": broker_addr, "cases": CASES})
    assert result.returncode == 0, result.stderr[-3000:]
    return {e["name"]: e for e in result.of("case")}


@pytest.mark.java
def test_twin_enforces_plain_acl(twin_result: dict[str, Any]) -> None:
    check_acl_semantics(twin_result)


@pytest.mark.java
@pytest.mark.real
@pytest.mark.xdist_group("real-4.9")
def test_real_4_9_enforces_plain_acl(real_result: dict[str, Any]) -> None:
    check_acl_semantics(real_result)


@pytest.mark.java
@pytest.mark.real
@pytest.mark.xdist_group("real-4.9")
def test_twin_answers_acl_as_real_4_9(twin_result: dict[str, Any], real_result: dict[str, Any]) -> None:
    """Every case: the same success, or the same response code, exception and remark (with its
    Java stack frame)."""
    twin = {name: _outcome(e) for name, e in twin_result["cases"].items()}
    real = {name: _outcome(e) for name, e in real_result["cases"].items()}
    assert twin == real
    assert twin_result["mqadmin"] == real_result["mqadmin"]


@pytest.mark.java
@pytest.mark.real
@pytest.mark.slow
@pytest.mark.xdist_group("real-4.9")
def test_5x_client_signs_for_the_twin_as_for_real_4_9(
    twin: RunningTwin,
    twin_result: dict[str, Any],
    real_result: dict[str, Any],
    real_rocketmq_factory: Any,
    java_client_factory: Any,
) -> None:
    """The 5.5.0 client's AclClientRPCHook (rocketmq-client, not rocketmq-acl) against both, after the
    4.9 scenario made the topics: the same outcomes as each other and as the 4.9.8 client's."""
    client = java_client_factory("5")
    real = _real_with_acl(real_rocketmq_factory, "4.9")
    on_twin = probe(client, twin.namesrv_addr, twin.broker_addr)
    on_real = probe(client, real.namesrv_addr, real.broker_addr)
    assert {n: _outcome(e) for n, e in on_twin.items()} == {n: _outcome(e) for n, e in on_real.items()}
    check_acl_semantics({**twin_result, "cases": on_twin})


@pytest.mark.java
@pytest.mark.real
@pytest.mark.slow
@pytest.mark.xdist_group("real-5")
def test_real_5_5_ignores_acl_enable_and_plain_acl_yml(
    real_rocketmq_factory: Any, java_client_factory: Any
) -> None:
    """ACL 1.0 is gone from 5.3.3 on: the same broker.conf + plain_acl.yml refuse nothing on 5.5.0,
    which is why rmqtwin follows 4.9.x for ``aclEnable``."""
    real = _real_with_acl(real_rocketmq_factory, "5")
    cases = probe(java_client_factory("5"), real.namesrv_addr, real.broker_addr)
    assert {name: e["ok"] for name, e in cases.items()} == {c["name"]: True for c in CASES}


def raw_exchange(addr: str, requests: list[RemotingCommand], quiet: float = 1.0) -> list[RemotingCommand]:
    """Send ``requests`` on one connection; every response that arrives until all two-way ones are
    answered and then ``quiet`` seconds pass without another frame."""
    host, _, port = addr.rpartition(":")
    conn = RemotingConnection()
    for request in requests:
        conn.send_request(request, now=0, timeout=60)
    answers: list[RemotingCommand] = []
    wanted = sum(1 for r in requests if not r.flag & 2)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(conn.data_to_send())
        while True:
            if len(answers) >= wanted:
                sock.settimeout(quiet)
            try:
                data = sock.recv(65536)
            except TimeoutError:
                break
            if not data:
                break
            answers += [e.command for e in conn.receive_data(data) if isinstance(e, ResponseReceived)]
    return answers


_PARSE_FAILED = re.compile(
    r"(AclException: ).*(, org\.apache\.rocketmq\.acl\.plain\.PlainAccessValidator\.parse\()"
)


def _without_json_error(remark: str | None) -> str | None:
    """The refusal of an unreadable body, without the JSON parser's message: rmqtwin does not word
    its errors as fastjson does ("error parse new")."""
    return None if remark is None else _PARSE_FAILED.sub(r"\1<json error>\2", remark)


def raw_cases() -> list[RemotingCommand]:
    heartbeat = create_request(RequestCode.HEART_BEAT, None, b"not json")
    sign_request(heartbeat, ADMIN["accessKey"], ADMIN["secretKey"])
    unregister = create_request(RequestCode.UNREGISTER_CLIENT, {"clientID": "c1"}, oneway=True)
    acl_config = create_request(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
    sign_request(acl_config, USER["accessKey"], USER["secretKey"])
    return [
        unregister,  # refused oneway: no answer at all
        create_request(RequestCode.GET_BROKER_CONFIG),  # no ext fields at all
        create_request(9999, {"AccessKey": USER["accessKey"], "Signature": "bad"}),  # unknown code
        heartbeat,  # a body parse cannot read
        acl_config,  # the accounts as the broker lists them (mqadmin getAclConfig)
    ]


@pytest.mark.java
@pytest.mark.real
@pytest.mark.xdist_group("real-4.9")
def test_raw_requests_answered_as_real_4_9(twin: RunningTwin, real_acl: Any) -> None:
    """Requests no Java client sends: a refused oneway, a request without ext fields, an unknown
    code, an unreadable heartbeat body, GET_BROKER_CLUSTER_ACL_CONFIG; the same answers (opaque,
    code, remark, ext fields, body bytes) from both."""

    def answers(addr: str) -> list[tuple[Any, ...]]:
        got = raw_exchange(addr, raw_cases())
        return sorted((a.opaque, a.code, _without_json_error(a.remark), a.ext_fields, a.body) for a in got)

    on_twin = answers(twin.broker_addr)
    on_real = answers(real_acl.broker_addr)
    assert on_twin == on_real
    assert [answer[0] for answer in on_real] == [1, 2, 3, 4]  # nothing for the oneway (opaque 0)
    assert on_real[3][1] == 0 and b"RocketMQSubOnly" in on_real[3][4]
