"""The sans-IO proxy session, playbook style: bytes in on one side, the exact commands out."""

from __future__ import annotations

import struct

import pytest

import rmqtwin.proxy.session as session_module
from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER, FLAG_RAW, FLAG_REWRITTEN
from rmqtwin.proxy.session import (
    Close,
    Command,
    Heads,
    Hook,
    ProxySession,
    Record,
    RecordHook,
    RewriteHook,
    Send,
)
from rmqtwin.proxy.wire import FrameHead, read_head
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

    def frame(self, direction: int, frame: bytes, head: FrameHead | None, out: list[Command]) -> bytes | None:
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


class Seeing(Hook):
    """Holds the answers if ``holding``; notes the heads it is handed, changes ANSWER to ``change_to``."""

    def __init__(self, *, reads_heads: bool, holding: bool = False, change_to: bytes | None = None) -> None:
        self.reads_heads = reads_heads
        self.holding = holding
        self.change_to = change_to
        self.held: list[tuple[int, int] | None] = []
        self.watched: list[list[tuple[int, int] | None] | None] = []

    def holds(self, direction: int) -> bool:
        return self.holding and direction == S2C

    def frame(self, direction: int, frame: bytes, head: FrameHead | None, out: list[Command]) -> bytes | None:
        self.held.append(None if head is None else (head.code, head.opaque))
        return self.change_to if self.change_to is not None and frame == ANSWER else frame

    def observe(
        self, direction: int, frames: list[bytes], heads: Heads | None, flags: int, out: list[Command]
    ) -> None:
        self.watched.append(None if heads is None else [h and (h.code, h.opaque) for h in heads])


def test_each_frames_head_is_read_once_and_handed_to_the_hooks_that_read_heads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reads: list[bytes] = []

    def counted(frame: bytes) -> FrameHead | None:
        reads.append(frame)
        return read_head(frame)

    monkeypatch.setattr(session_module, "read_head", counted)
    changed = json_frame(7, 1, flag=1, ext={"msgId": "Y"})
    changer = Seeing(reads_heads=True, holding=True, change_to=changed)
    after = Seeing(reads_heads=True, holding=True)
    blind = Seeing(reads_heads=False)
    watcher = Seeing(reads_heads=True)
    session = ProxySession([changer, after, blind, watcher])
    garbage = struct.pack(">II", 12, 8) + b"\xff" * 8  # a whole frame whose header cannot be read
    play(session, (C2S, REQUEST + garbage), (S2C, ANSWER))
    # the request and the unreadable frame once each (when watched), the answer once before the
    # holders, and once more as changed for the holder after the change: never once per hook
    assert reads == [REQUEST, garbage, ANSWER, changed]
    assert changer.held == [(0, 1)]
    assert after.held == [(7, 1)]  # the frame as the hook before it changed it
    assert blind.held == []
    # watching hooks see the frames as they arrived, with their own heads
    assert watcher.watched == [[(10, 1), None], [(0, 1)]]


def test_no_head_is_read_when_no_hook_reads_heads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "read_head", lambda frame: pytest.fail("a head was read"))
    hook = Seeing(reads_heads=False, holding=True)
    play(ProxySession([hook, RecordHook()]), (C2S, REQUEST), (S2C, ANSWER))
    assert hook.held == [None] and hook.watched == [None, None]
