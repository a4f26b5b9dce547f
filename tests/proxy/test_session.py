"""The sans-IO proxy session, playbook style: bytes in on one side, the exact commands out."""

from __future__ import annotations

from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER, FLAG_RAW, FLAG_REWRITTEN
from rmqtwin.proxy.session import (
    Close,
    Command,
    Hook,
    ProxySession,
    Record,
    RecordHook,
    RewriteHook,
    Send,
)
from tests.proxy.frames import json_frame, play

C2S = DIR_TO_SERVER
S2C = DIR_TO_CLIENT
REQUEST = json_frame(10, 1, ext={"topic": "T"}, body=b"hello")
ANSWER = json_frame(0, 1, flag=1, ext={"msgId": "X"})


def test_without_hooks_bytes_pass_as_they_come_unsplit() -> None:
    session = ProxySession([])
    assert play(session, (C2S, REQUEST[:3]), (S2C, b"xyz")) == [Send(C2S, REQUEST[:3]), Send(S2C, b"xyz")]


def test_recording_forwards_each_read_at_once_and_records_whole_frames_when_complete() -> None:
    session = ProxySession([RecordHook()])
    two = REQUEST + REQUEST
    assert play(session, (C2S, two[:10])) == [Send(C2S, two[:10])]
    assert play(session, (C2S, two[10:])) == [Send(C2S, two[10:]), Record(C2S, [REQUEST, REQUEST])]


def test_rewriting_holds_upstream_frames_until_whole_and_records_the_original() -> None:
    rewritten = json_frame(0, 1, flag=1, ext={"msgId": "Y"})
    session = ProxySession([RewriteHook(lambda f: rewritten if f == ANSWER else None), RecordHook()])
    other = json_frame(0, 2, flag=1)
    assert play(session, (S2C, ANSWER[:5])) == []
    assert play(session, (S2C, ANSWER[5:] + other)) == [
        Send(S2C, rewritten),
        Send(S2C, other),
        Record(S2C, [other]),
        Record(S2C, [ANSWER], FLAG_REWRITTEN),
    ]
    # the client's direction is not held by a rewriter
    assert play(session, (C2S, REQUEST[:4])) == [Send(C2S, REQUEST[:4])]


def test_forward_leaves_what_the_watching_hooks_see_to_watch() -> None:
    session = ProxySession([RewriteHook(lambda f: None), RecordHook()])
    assert session.forward(C2S, REQUEST) == [Send(C2S, REQUEST)]
    assert session.forward(S2C, ANSWER) == [Send(S2C, ANSWER)]
    assert session.watch() == [Record(C2S, [REQUEST]), Record(S2C, [ANSWER])]
    assert session.watch() == []


def test_an_impossible_length_word_turns_the_direction_raw_for_good() -> None:
    session = ProxySession([RewriteHook(lambda f: None), RecordHook()])
    tls = b"\x16\x03\x01\x02\x00" + b"\x01" * 20
    assert play(session, (S2C, ANSWER + tls)) == [  # all the read forwarded before it is watched
        Send(S2C, ANSWER),
        Send(S2C, tls),
        Record(S2C, [ANSWER]),
        Record(S2C, [tls], FLAG_RAW),
    ]
    assert play(session, (S2C, ANSWER)) == [Send(S2C, ANSWER), Record(S2C, [ANSWER], FLAG_RAW)]


def test_unframed_streams_are_forwarded_and_recorded_raw() -> None:
    session = ProxySession([RecordHook()], framed=False)
    assert play(session, (C2S, b"ha")) == [Send(C2S, b"ha"), Record(C2S, [b"ha"], FLAG_RAW)]


class Answering(Hook):
    """Answers requests of code 10 in the upstream's place; closes on code 11; holds when on."""

    def __init__(self) -> None:
        self.on = False

    def holds(self, direction: int) -> bool:
        return self.on and direction == C2S

    def frame(self, direction: int, frame: bytes, out: list[Command]) -> bytes | None:
        if frame == REQUEST:
            out.append(Send(S2C, ANSWER))
            return None
        out.append(Close("fault"))
        return frame


def test_a_hook_starts_holding_on_the_next_frame_boundary_and_may_answer_or_close() -> None:
    hook = Answering()
    session = ProxySession([hook, RecordHook()])
    assert play(session, (C2S, REQUEST[:7])) == [Send(C2S, REQUEST[:7])]
    hook.on = True  # mid-frame: the frame whose first bytes left is not held
    assert play(session, (C2S, REQUEST[7:])) == [Send(C2S, REQUEST[7:]), Record(C2S, [REQUEST])]
    assert play(session, (C2S, REQUEST[:7])) == []
    assert play(session, (C2S, REQUEST[7:])) == [Send(S2C, ANSWER), Record(C2S, [REQUEST])]
    other = json_frame(11, 2)
    assert play(session, (C2S, other)) == [Close("fault"), Send(C2S, other), Record(C2S, [other])]
    hook.on = False
    assert play(session, (C2S, REQUEST[:7])) == [Send(C2S, REQUEST[:7])]
