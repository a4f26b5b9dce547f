"""``rmqtwin capture tail``: records read as the writer appends and rotates, filtered RocketMQ-wise."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqtwin.cli import main
from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER, CaptureWriter, Endpoint
from rmqtwin.proxy.tail import CaptureFollower, FrameFilter, tail
from tests.proxy.frames import captured, json_frame

CLIENT, SERVER = Endpoint("127.0.0.1", 50000), Endpoint("127.0.0.1", 10911)
PULL = json_frame(11, 1, ext={"consumerGroup": "CG", "topic": "Orders", "queueId": "0"})
PULL_ANSWER = json_frame(19, 1, flag=1, remark="no new message")
SEND = json_frame(310, 2, ext={"a": "PG", "b": "Audit"})
SEND_ANSWER = json_frame(0, 2, flag=1)
STREAM = (
    (PULL, DIR_TO_SERVER),
    (SEND, DIR_TO_SERVER),
    (SEND_ANSWER, DIR_TO_CLIENT),
    (PULL_ANSWER, DIR_TO_CLIENT),
)


def write(writer: CaptureWriter, direction: int, frame: bytes, conn_id: int = 1) -> None:
    writer.write(captured(frame, direction, CLIENT, SERVER, mono_ns=1, wall_ns=1, conn_id=conn_id))


def test_the_follower_reads_whole_records_as_they_come_and_moves_to_the_next_segment(tmp_path: Path) -> None:
    path = tmp_path / "c.rmqcap"
    follower = CaptureFollower(path)
    assert follower.poll() == []  # nothing there yet
    writer = CaptureWriter(path, rotate_bytes=400)
    assert follower.poll() == []
    write(writer, DIR_TO_SERVER, PULL)
    writer.flush()
    assert [r.code for r in follower.poll()] == [11]
    assert follower.poll() == []
    for frame, direction in (
        (PULL_ANSWER, DIR_TO_CLIENT),
        (SEND, DIR_TO_SERVER),
        (SEND_ANSWER, DIR_TO_CLIENT),
    ):
        write(writer, direction, frame)
    writer.flush()
    assert writer.segment_index >= 1
    assert [r.code for r in follower.poll()] == [19, 310, 0]
    writer.close()


def test_filters_show_matching_requests_with_their_answers(tmp_path: Path) -> None:
    path = tmp_path / "c.rmqcap"
    with CaptureWriter(path) as writer:
        for frame, direction in STREAM:
            write(writer, direction, frame)
    lines: list[str] = []
    assert tail(path, FrameFilter.of(["PULL_MESSAGE"]), follow=False, emit=lines.append) == 2
    assert "REQUEST PULL_MESSAGE(11)" in lines[0] and "topic=Orders" in lines[0] and "group=CG" in lines[0]
    assert "RESPONSE PULL_NOT_FOUND(19)" in lines[1] and "remark='no new message'" in lines[1]
    lines.clear()
    assert tail(path, FrameFilter.of(group="PG"), follow=False, emit=lines.append) == 2
    assert "SEND_MESSAGE_V2" in lines[0] and "topic=Audit" in lines[0]
    assert tail(path, FrameFilter.of(), follow=False, emit=lambda _: None) == 4


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.rmqcap"
    with CaptureWriter(path) as writer:
        write(writer, DIR_TO_SERVER, SEND)
    assert main(["capture", "tail", str(path), "--topic", "Audit"]) == 0
    assert "REQUEST SEND_MESSAGE_V2(310)" in capsys.readouterr().out
    assert main(["capture", "tail", str(path), "--code", "NOPE"]) == 2
