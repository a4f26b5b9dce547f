"""Fault rules on the proxy session (playbook style), their validation and the HTTP API."""

from __future__ import annotations

import io
import struct

import orjson
import pytest
from twisted.web.test.requesthelper import DummyRequest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import decode_whole_frame
from rmqtwin.codec.errors import MessageDecodeError
from rmqtwin.codec.message import (
    MessageExt,
    decode_message_records,
    encode_message_record,
)
from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER
from rmqtwin.proxy.fault_api import FaultApi
from rmqtwin.proxy.faults import FaultEngine, FaultHook, FaultRule, RuleError, quick_code
from rmqtwin.proxy.session import Close, Delay, ProxySession, Record, RecordHook, Send
from tests.proxy.frames import binary_frame, json_frame, play

C2S, S2C = DIR_TO_SERVER, DIR_TO_CLIENT
SEND = json_frame(310, 7, ext={"a": "PG", "b": "T", "c": "TBW102"}, body=b"hello")
PULL = json_frame(11, 8, ext={"consumerGroup": "CG", "topic": "T", "queueId": "0"})


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def setup(*rules: dict[str, object]) -> tuple[FaultEngine, ProxySession, Clock]:
    clock = Clock()
    engine = FaultEngine(clock=clock)
    for rule in rules:
        engine.add(rule)
    hook = FaultHook(engine, "127.0.0.1:50000", "10.0.0.1:10911")
    return engine, ProxySession([hook, RecordHook()]), clock


def test_without_rules_nothing_is_held_or_decoded() -> None:
    _, session, _ = setup()
    assert play(session, (C2S, SEND[:9])) == [Send(C2S, SEND[:9])]
    assert session.holders(C2S) == [] and session.holders(S2C) == []


def test_answer_in_the_brokers_place_with_code_and_remark_for_one_topic_only() -> None:
    engine, session, _ = setup(
        {"name": "busy", "effect": "answer", "codes": ["SEND_MESSAGE_V2"], "topic": "T",
         "answer_code": "SYSTEM_BUSY", "remark": "[TIMEOUT_CLEAN_QUEUE]broker busy", "count": 1}
    )  # fmt: skip
    out = play(session, (C2S, SEND))
    assert out[1:] == [Record(C2S, [SEND])]
    assert isinstance(out[0], Send) and out[0].to == S2C
    answer = decode_whole_frame(out[0].data)
    assert (answer.code, answer.opaque, answer.remark, answer.is_response) == (
        ResponseCode.SYSTEM_BUSY, 7, "[TIMEOUT_CLEAN_QUEUE]broker busy", True,
    )  # fmt: skip
    # count 1: the next send goes through; a send to another topic never matched
    assert play(session, (C2S, SEND)) == [Send(C2S, SEND), Record(C2S, [SEND])]
    other = json_frame(310, 9, ext={"a": "PG", "b": "U"})
    assert play(session, (C2S, other)) == [Send(C2S, other), Record(C2S, [other])]
    assert engine.rules["busy"].hits == 1


def test_frames_no_rule_may_match_are_passed_undecoded_and_odd_names_still_match() -> None:
    """The prefilter reads the code where Java writes it and searches plain names as bytes; a name a
    JSON header would escape is not searched for, so such a rule still sees every frame of its codes."""
    assert quick_code(SEND, 0, struct.unpack_from(">I", SEND, 4)[0]) == 310
    assert quick_code(binary_frame(11, 1), 1, 30) == 11
    reordered = b'{"opaque":1,"code":310}'
    assert (
        quick_code(struct.pack(">II", 4 + len(reordered), len(reordered)) + reordered, 0, len(reordered))
        is None
    )
    engine, session, _ = setup(
        {"effect": "drop", "codes": ["SEND_MESSAGE_V2"], "topic": 'quo"ted'},
        {"effect": "drop", "codes": ["SEND_MESSAGE_V2"], "topic": "主题"},
    )
    hook = session.hooks[0]
    assert isinstance(hook, FaultHook)
    assert hook.connection_filter().by_code[310] is None  # no name searched for: every send decoded
    unicode_send = json_frame(310, 11, ext={"a": "PG", "b": "主题"})
    assert play(session, (C2S, unicode_send)) == [Record(C2S, [unicode_send])]
    quoted_send = json_frame(310, 12, ext={"a": "PG", "b": 'quo"ted'})
    assert play(session, (C2S, quoted_send)) == [Record(C2S, [quoted_send])]
    assert [r.hits for r in engine.rules.values()] == [1, 1]
    engine.reset()
    engine.add({"effect": "drop", "codes": ["SEND_MESSAGE_V2"], "topic": "Elsewhere"})
    assert not hook.connection_filter().admits(SEND) and play(session, (C2S, SEND))[0] == Send(C2S, SEND)


def test_rules_for_other_addresses_leave_a_connection_unheld_and_codes_no_rule_names_pass() -> None:
    """Each connection works its filter out once per rule set for its own client and broker."""
    engine, session, _ = setup(
        {"effect": "answer", "codes": ["HEART_BEAT"], "client": "192.0.2.1"},
        {"effect": "drop", "direction": "response", "broker": "192.0.2.1"},
    )
    hook = session.hooks[0]
    assert isinstance(hook, FaultHook)
    assert play(session, (C2S, SEND)) == [Send(C2S, SEND), Record(C2S, [SEND])]
    assert session.holders(C2S) == [] and not hook.requests
    engine.add({"name": "mine", "effect": "drop", "codes": ["SEND_MESSAGE_V2"], "client": "127.0.0.1"})
    rules = hook.connection_filter()
    assert (rules.requests, rules.responses, rules.other, rules.by_code) == (True, False, (), {310: None})
    assert play(session, (C2S, PULL), (C2S, SEND)) == [
        Send(C2S, PULL), Record(C2S, [PULL]), Record(C2S, [SEND]),
    ]  # fmt: skip
    assert engine.rules["mine"].hits == 1


def test_binary_requests_are_answered_in_their_serialization() -> None:
    _, session, _ = setup({"effect": "answer", "codes": [310], "answer_code": 17})
    request = binary_frame(310, 3, ext={"b": "T"})
    out = play(session, (C2S, request))
    assert isinstance(out[0], Send)
    assert out[0].data[4] == 1  # ROCKETMQ serialize type
    assert decode_whole_frame(out[0].data).code == ResponseCode.TOPIC_NOT_EXIST


def test_dropped_response_matched_by_the_request_it_answers() -> None:
    _, session, _ = setup(
        {"effect": "drop", "direction": "response", "codes": ["PULL_MESSAGE"], "group": "CG"}
    )
    answer = json_frame(19, 8, flag=1)
    assert play(session, (C2S, PULL), (S2C, answer)) == [
        Send(C2S, PULL), Record(C2S, [PULL]), Record(S2C, [answer]),
    ]  # fmt: skip
    # an answer to a request the rule does not match passes
    other = json_frame(0, 7, flag=1)
    assert play(session, (C2S, SEND), (S2C, other)) == [
        Send(C2S, SEND), Record(C2S, [SEND]), Send(S2C, other), Record(S2C, [other]),
    ]  # fmt: skip


def test_latency_delays_the_frame_and_skip_lets_the_first_matches_pass() -> None:
    _, session, _ = setup({"effect": "latency", "ms": 250, "skip": 1})
    assert play(session, (C2S, SEND)) == [Send(C2S, SEND), Record(C2S, [SEND])]
    assert play(session, (C2S, SEND)) == [Delay(C2S, 0.25), Send(C2S, SEND), Record(C2S, [SEND])]


def test_bandwidth_close_reset_and_the_time_limit() -> None:
    _, session, clock = setup({"effect": "reset", "codes": [11], "duration": 5})
    assert play(session, (C2S, PULL)) == [Close("fault rule1: reset", abort=True), Record(C2S, [PULL])]
    clock.now += 5
    assert play(session, (C2S, PULL)) == [Send(C2S, PULL), Record(C2S, [PULL])]
    _, session, _ = setup({"effect": "bandwidth", "kbps": 8})
    assert play(session, (C2S, SEND)) == [Delay(C2S, len(SEND) / 1000), Send(C2S, SEND), Record(C2S, [SEND])]


def test_probability_is_reproducible_with_a_seed() -> None:
    def hits() -> int:
        engine, session, _ = setup({"effect": "drop", "probability": 0.5, "seed": 42})
        play(session, *[(C2S, SEND)] * 100)
        return engine.rules["rule1"].hits

    first = hits()
    assert 30 < first < 70 and hits() == first


def _pull_answer(bodies: list[bytes]) -> bytes:
    records = b""
    for i, body in enumerate(bodies):
        msg = MessageExt(topic="T", body=body, queue_id=0, queue_offset=i, commitlog_offset=i * 100)
        msg.born_host, msg.store_host = ("127.0.0.1", 5000), ("10.0.0.1", 10911)
        records += encode_message_record(msg)
    return json_frame(0, 8, flag=1, ext={"nextBeginOffset": str(len(bodies))}, body=records)


def _records(frame: bytes) -> list[MessageExt]:
    return decode_message_records(decode_whole_frame(frame).body or b"", check_crc=False)


def test_corrupt_breaks_the_first_bodys_crc_and_duplicate_delivers_it_twice() -> None:
    answer = _pull_answer([b"one", b"two"])
    _, session, _ = setup({"effect": "corrupt", "codes": ["PULL_MESSAGE"]})
    out = play(session, (C2S, PULL), (S2C, answer))
    sent = next(c for c in out if isinstance(c, Send) and c.to == S2C).data
    assert len(sent) == len(answer)
    with pytest.raises(MessageDecodeError, match="body CRC mismatch"):
        decode_message_records(decode_whole_frame(sent).body or b"", check_crc=True)
    _, session, _ = setup({"effect": "duplicate", "codes": ["PULL_MESSAGE"]})
    out = play(session, (C2S, PULL), (S2C, answer))
    sent = next(c for c in out if isinstance(c, Send) and c.to == S2C).data
    assert [(m.body, m.queue_offset) for m in _records(sent)] == [(b"one", 0), (b"one", 0), (b"two", 1)]
    assert struct.unpack_from(">I", sent)[0] == len(sent) - 4


def test_a_pull_answer_without_messages_does_not_use_up_a_body_rule() -> None:
    """``count=1`` means one changed delivery: an empty answer (PULL_NOT_FOUND) is passed and not counted."""
    engine, session, _ = setup({"effect": "duplicate", "codes": ["PULL_MESSAGE"], "count": 1})
    empty = json_frame(19, 8, flag=1, ext={"nextBeginOffset": "0"})
    assert play(session, (C2S, PULL), (S2C, empty))[2:] == [Send(S2C, empty), Record(S2C, [empty])]
    assert (engine.rules["rule1"].seen, engine.rules["rule1"].hits) == (0, 0)
    out = play(session, (C2S, PULL), (S2C, _pull_answer([b"one"])))
    sent = next(c for c in out if isinstance(c, Send) and c.to == S2C).data
    assert [m.body for m in _records(sent)] == [b"one", b"one"] and engine.rules["rule1"].hits == 1


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        ({"effect": "explode"}, "effect: one of"),
        ({"effect": "latency"}, "ms: a number is needed"),
        ({"effect": "answer", "answer_code": "NOPE"}, "unknown ResponseCode 'NOPE'"),
        ({"effect": "drop", "codes": ["NOT_A_CODE"]}, "unknown RequestCode"),
        ({"effect": "duplicate", "direction": "request"}, "direction must be 'response'"),
        ({"effect": "drop", "probability": 2}, "probability: must be <= 1"),
        ({"effect": "drop", "colour": "red"}, "unknown field(s): colour"),
        ({"effect": "drop", "count": 0}, "count: must be >= 1"),
    ],
)
def test_invalid_rules_say_why(spec: dict[str, object], reason: str) -> None:
    with pytest.raises(RuleError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        FaultRule.parse(spec, default_name="r")


def _call(api: FaultApi, method: bytes, path: str, body: object = None) -> tuple[int, object]:
    request = DummyRequest([p.encode() for p in path.strip("/").split("/")])
    request.method = method
    request.path = path.encode()
    request.content = io.BytesIO(
        b"" if body is None else body if isinstance(body, bytes) else orjson.dumps(body)
    )
    raw = api.render(request)
    return request.responseCode or 200, orjson.loads(raw)


def test_http_api_adds_lists_toggles_removes_and_refuses_bad_rules_with_400() -> None:
    engine = FaultEngine()
    api = FaultApi(engine)
    status, rule = _call(api, b"POST", "/rules", {"name": "slow", "effect": "latency", "ms": 5})
    assert status == 201 and isinstance(rule, dict) and rule["name"] == "slow"
    assert engine.holding["request"]
    assert _call(api, b"POST", "/rules", {"effect": "latency"}) == (
        400,
        {"error": "ms: a number is needed, got None"},
    )
    assert _call(api, b"POST", "/rules", b"{not json")[0] == 400
    assert _call(api, b"POST", "/rules", {"name": "slow", "effect": "drop"})[0] == 400
    status, listed = _call(api, b"GET", "/rules")
    assert status == 200 and isinstance(listed, list) and [r["name"] for r in listed] == ["slow"]
    assert _call(api, b"POST", "/rules/slow", {"enabled": False})[1] == {**rule, "enabled": False}
    assert not engine.holding["request"]
    assert _call(api, b"POST", "/rules/slow", {"enabled": "no"})[0] == 400
    assert _call(api, b"DELETE", "/rules/nope")[0] == 404
    assert _call(api, b"DELETE", "/rules/slow")[0] == 200 and not engine.rules
    engine.add({"effect": "drop"})
    assert _call(api, b"POST", "/reset") == (200, {"rules": 0}) and not engine.rules
    assert _call(api, b"GET", "/elsewhere")[0] == 404
    assert RequestCode.PULL_MESSAGE == 11
