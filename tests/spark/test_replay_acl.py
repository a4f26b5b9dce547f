"""Re-signing: a signed client's session, recorded by the proxy with its credentials redacted (the default),
replayed against a target with plain ACL (the twin's ``--acl-file``; real 4.9.7 with the launcher's
``plain_acl.yml``, ``tests/fakes/acl_accounts.py``). With ``--access-key/--secret-key`` the
target accepts every replayed request and the consumer pulls the replayed bodies; without them it
refuses every signed one (AclException), and the target's offsets cannot even be asked."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.fakes.broker.acl import sign_request
from rmqtwin.fakes.pytest_plugin import RunningTwin, start_subprocess
from rmqtwin.probe import invoke_sync
from rmqtwin.proxy.process import start_proxy
from rmqtwin.spark.replay.engine import RequestResult, replay_connections
from rmqtwin.spark.replay.plan import load_plan
from rmqtwin.spark.replay.target import TargetError, prepare_context
from rmqtwin.spark.replay.translate import ReplayContext
from tests.fakes.acl_accounts import ADMIN, GROUP_OK, PLAIN_ACL_YML, TOPIC_OK, USER
from tests.spark import traffic

PRODUCER_ID = "127.0.0.1@4242#acl-producer"
CONSUMER_ID = "127.0.0.1@4343#acl-consumer"


def _signed(request: RemotingCommand, account: dict[str, str] = USER) -> RemotingCommand:
    sign_request(request, account["accessKey"], account["secretKey"])
    return request


def _send(index: int) -> RemotingCommand:
    request = traffic.send_request(b"signed %d" % index, 0, 7000 + index)
    assert request.ext_fields is not None
    request.ext_fields |= {"a": "PG_acl", "b": TOPIC_OK}
    return _signed(request)


def _prepare(broker: str) -> None:
    """The topic (created by the admin account) holding two older messages, so offsets translate."""
    create = {
        "topic": TOPIC_OK,
        "defaultTopic": "TBW102",
        "readQueueNums": "2",
        "writeQueueNums": "2",
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
    }
    answer = invoke_sync(broker, _signed(create_request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), ADMIN))
    assert answer.code == ResponseCode.SUCCESS, answer
    for i in range(2):
        sent = invoke_sync(broker, _send(100 + i))
        assert sent.code == ResponseCode.SUCCESS, sent
    # a real broker dispatches to the consume queue a moment after the answer: the replay's offset base
    # (GET_MAX_OFFSET) must count both
    stored = int(sent.ext("queueOffset") or 0) + 1
    ask = {"topic": TOPIC_OK, "queueId": "0"}
    deadline = time.monotonic() + 10
    while (
        int(invoke_sync(broker, _signed(create_request(RequestCode.GET_MAX_OFFSET, ask))).ext("offset") or 0)
        < stored
    ):
        assert time.monotonic() < deadline, "the prefilled messages never reached the consume queue"
        time.sleep(0.05)


def _acl_twin(base: Path) -> RunningTwin:
    base.mkdir(parents=True, exist_ok=True)
    (base / "plain_acl.yml").write_text(PLAIN_ACL_YML, encoding="utf-8")
    twin = start_subprocess(
        str(base / "twin"),
        broker_conf={"aclEnable": True},
        serve_args=["--acl-file", str(base / "plain_acl.yml")],
    )
    _prepare(twin.broker_addr)
    return twin


@pytest.fixture(scope="module")
def signed_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Route, heartbeats, three pipelined sends, a consumer's pull of them and its offset commit, every
    request signed as the ACL user, through a proxy (redacting) in front of an ACL twin."""
    base = tmp_path_factory.mktemp("acl-record")
    twin = _acl_twin(base)
    capture = base / "signed.rmqcap"
    try:
        proxy = start_proxy(twin.namesrv_addr, capture)
        try:
            namesrv = traffic.Client(proxy.namesrv)
            route = namesrv.call(
                _signed(create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC_OK}))
            )
            assert route.code == ResponseCode.SUCCESS, route
            addrs = fastjson.loads(route.body or b"")["brokerDatas"][0]["brokerAddrs"]
            broker = addrs.get(0) or addrs["0"]
            producer = traffic.Client(broker)
            beat = _signed(traffic.heartbeat(PRODUCER_ID, consumer=False))
            assert producer.call(beat).code == ResponseCode.SUCCESS
            sent = [producer.send(_send(i)) for i in range(3)]
            offsets = [int(producer.answer(op).ext("queueOffset") or -1) for op in sent]
            assert offsets == [2, 3, 4]
            consumer = traffic.Client(broker)
            beat = _signed(traffic.heartbeat(CONSUMER_ID, consumer=True, group=GROUP_OK, topic=TOPIC_OK))
            assert consumer.call(beat).code == ResponseCode.SUCCESS
            pull = traffic.pull_request(0, offsets[0])
            assert pull.ext_fields is not None
            pull.ext_fields |= {"consumerGroup": GROUP_OK, "topic": TOPIC_OK}
            pulled = consumer.call(_signed(pull))
            assert pulled.code == ResponseCode.SUCCESS, pulled
            commit = {"consumerGroup": GROUP_OK, "topic": TOPIC_OK, "queueId": "0", "commitOffset": "5"}
            answer = consumer.call(_signed(create_request(RequestCode.UPDATE_CONSUMER_OFFSET, commit)))
            assert answer.code == ResponseCode.SUCCESS, answer
            for client in (namesrv, producer, consumer):
                client.close()
        finally:
            proxy.stop()
    finally:
        twin.stop()
    return capture


def _replay(
    capture: Path, namesrv: str, *, resign: bool
) -> tuple[list[RequestResult], list[tuple[int, bool]]]:
    """The replay at 4x, re-signed as the ACL user or sent as recorded (redacted)."""
    plan = load_plan(capture)
    ctx = ReplayContext(
        namesrv=namesrv,
        brokers={},
        speed=4.0,
        access_key=USER["accessKey"],
        secret_key=USER["secretKey"],
        run_id="signed" if resign else "redacted",
    )
    prepare_context(plan, ctx, {})
    if not resign:
        ctx = dataclasses.replace(ctx, access_key=None, secret_key=None)
    results, queues, _ = replay_connections(plan.connections, ctx)
    return results, [(q.replayed_messages, q.same_bodies_in_order) for q in queues]


def _broker_codes(results: list[RequestResult]) -> dict[str, set[int | None]]:
    codes: dict[str, set[int | None]] = {}
    for r in results:
        if r.code != RequestCode.GET_ROUTEINFO_BY_TOPIC:
            codes.setdefault(r.code_name, set()).add(r.replayed_code)
    return codes


def _check(capture: Path, namesrv: str, *, as_recorded: bool) -> None:
    """``as_recorded``: the target is the recorded one's kind (a twin), so every verdict is ``same``."""
    plan = load_plan(capture)
    frames = b"".join(step.frame for conn in plan.connections for step in conn.steps)
    assert USER["accessKey"].encode() not in frames and b"*" * len(USER["accessKey"]) in frames  # redacted
    names = ["HEART_BEAT", "SEND_MESSAGE_V2", "PULL_MESSAGE", "UPDATE_CONSUMER_OFFSET"]

    with pytest.raises(
        TargetError, match=r"refused GET_MAX_OFFSET of TopicAclOk: .*AclException.*--access-key"
    ):
        prepare_context(plan, ReplayContext(namesrv=namesrv, brokers={}), {})

    results, queues = _replay(capture, namesrv, resign=True)
    assert _broker_codes(results) == {name: {ResponseCode.SUCCESS} for name in names}
    # the replayed consumer pulled three messages: the replayed bodies in their order, not the older two
    assert queues == [(3, True)]
    if as_recorded:
        assert [(r.code_name, r.detail) for r in results if r.verdict != "same"] == []

    results, queues = _replay(capture, namesrv, resign=False)
    assert _broker_codes(results) == {name: {ResponseCode.SYSTEM_ERROR} for name in names}
    refused = [r for r in results if r.code != RequestCode.GET_ROUTEINFO_BY_TOPIC]
    assert all("AclException" in (r.replayed_remark or "") for r in refused), refused
    assert queues == [(0, False)]


def test_a_redacted_capture_re_signed_is_accepted_by_an_acl_twin_and_refused_unsigned(
    signed_capture: Path, tmp_path: Path
) -> None:
    twin = _acl_twin(tmp_path)
    try:
        _check(signed_capture, twin.namesrv_addr, as_recorded=True)
    finally:
        twin.stop()


@pytest.fixture
def real_acl_broker(real_rocketmq_factory: Any) -> Iterator[Any]:
    """Real 4.9.7 with ``aclEnable`` and the ACL test's plain_acl.yml (the same conf: the same shared
    instance when both run in one session)."""
    broker = real_rocketmq_factory(
        "4.9", broker_conf_overrides={"aclEnable": True}, conf_files={"plain_acl.yml": PLAIN_ACL_YML}
    )
    _prepare(broker.broker_addr)
    yield broker


@pytest.mark.slow  # a real broker of its own conf (shared with test_java_acl only on the same worker)
def test_a_redacted_capture_re_signed_is_accepted_by_real_4_9_7_with_acl_and_refused_unsigned(
    signed_capture: Path, real_acl_broker: Any
) -> None:
    _check(signed_capture, real_acl_broker.namesrv_addr, as_recorded=False)
