"""Fault rules inside the twin: the broker's dispatcher with the fault hook, in memory on a Clock,
and ``rocketmq.faults`` on the ``rocketmq`` fixture's twin over its fault API."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.errors import MessageDecodeError
from rmqtwin.codec.message import decode_message_records
from rmqtwin.fakes.faults import install_faults
from rmqtwin.fakes.pytest_plugin import RunningTwin
from rmqtwin.proxy.faults import FaultEngine
from tests.fakes.helpers import Peer, call, clocked_broker, heartbeat, pull_header, send_v2


@pytest.fixture
def env(tmp_path: Any) -> Any:
    with clocked_broker(tmp_path) as (broker, clock):
        engine = FaultEngine(clock=clock.seconds)
        install_faults(engine, broker.dispatcher, clock, broker.config.broker_addr)
        yield Peer(broker.dispatcher, clock, on_close=broker.channel_closed), engine, clock


def test_twin_answers_busy_in_its_handlers_place_then_stores_again(env: Any) -> None:
    peer, engine, _ = env
    engine.add({"effect": "answer", "codes": ["SEND_MESSAGE_V2"], "topic": "T", "count": 1,
                "answer_code": "SYSTEM_BUSY", "remark": "[PC_SYNCHRONIZED]broker busy"})  # fmt: skip
    busy = send_v2(peer, "T", b"x")
    assert (busy.code, busy.remark) == (ResponseCode.SYSTEM_BUSY, "[PC_SYNCHRONIZED]broker busy")
    stored = send_v2(peer, "T", b"x")
    assert stored.code == ResponseCode.SUCCESS and (stored.ext_fields or {})["queueOffset"] == "0"


def test_twin_delays_drops_and_closes(env: Any) -> None:
    peer, engine, clock = env
    engine.add({"name": "slow", "effect": "latency", "ms": 500, "codes": [310]})
    opaque = peer.send(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "T", "c": "TBW102", "d": 4, "e": 0})
    assert peer.responses() == []
    clock.advance(0.5)
    assert [r.opaque for r in peer.responses()] == [opaque]
    engine.reset()
    engine.add({"effect": "drop", "direction": "response", "codes": [310]})
    send_v2_opaque = peer.send(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "T", "c": "TBW102", "d": 4})
    clock.advance(10)
    assert send_v2_opaque and peer.responses() == []
    assert engine.rules["rule1"].hits == 1
    engine.reset()
    engine.add({"effect": "close", "codes": ["HEART_BEAT"]})
    peer.send(RequestCode.HEART_BEAT, body=b"{}")
    assert peer.transport.disconnecting and peer.responses() == []


def test_twin_corrupts_and_duplicates_pulled_messages(env: Any) -> None:
    peer, engine, _ = env
    send_v2(peer, "T", b"one")
    send_v2(peer, "T", b"two")
    heartbeat(peer, "g1", "T")
    engine.add({"name": "dup", "effect": "duplicate", "codes": ["PULL_MESSAGE"], "count": 1})
    got = peer.call(RequestCode.PULL_MESSAGE, pull_header("g1", "T", 0))
    assert [m.body for m in decode_message_records(got.body or b"")] == [b"one", b"one", b"two"]
    engine.add({"effect": "corrupt", "codes": ["PULL_MESSAGE"], "group": "g1"})
    got = peer.call(RequestCode.PULL_MESSAGE, pull_header("g1", "T", 0))
    with pytest.raises(MessageDecodeError, match="body CRC mismatch"):
        decode_message_records(got.body or b"", check_crc=True)


def test_rocketmq_fixture_takes_rules_and_refuses_bad_ones(rocketmq: RunningTwin) -> None:
    rule = rocketmq.faults.add(effect="answer", codes=["GET_ROUTEINFO_BY_TOPIC"], topic="TBW102",
                               answer_code="TOPIC_NOT_EXIST", remark="No topic route info")  # fmt: skip
    route = call(rocketmq.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    assert (route.code, route.remark) == (ResponseCode.TOPIC_NOT_EXIST, "No topic route info")
    assert rocketmq.faults.get(rule["name"])["hits"] == 1
    rocketmq.faults.disable(rule["name"])
    route = call(rocketmq.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    assert route.code == ResponseCode.SUCCESS
    with pytest.raises(ValueError, match="effect: one of"):
        rocketmq.faults.add(effect="nap")
    rocketmq.faults.add(effect="drop", codes=[105])
    with pytest.raises(socket.timeout):
        host, _, port = rocketmq.namesrv_addr.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=1) as sock:
            from rmqtwin.codec.command import create_request, encode_command

            sock.sendall(encode_command(create_request(105, {"topic": "TBW102"}, opaque=9)))
            sock.recv(100)
    rocketmq.faults.reset()
    assert rocketmq.faults.list() == []
