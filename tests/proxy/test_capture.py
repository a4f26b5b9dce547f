from __future__ import annotations

from pathlib import Path

import pytest
from twisted.internet.task import Clock

from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    FLAG_DECODED,
    FLAG_RAW,
    FLAG_REDACTED,
    MAGIC,
    REC_CLOSE,
    REC_FRAME,
    REC_OPEN,
    CaptureFormatError,
    CaptureReader,
    CaptureWriter,
    Endpoint,
    frame_record,
    read_records,
    segment_paths,
)
from rmqtwin.proxy.recorder import Recorder
from tests.proxy.frames import binary_frame, captured, json_frame

CLIENT = Endpoint("127.0.0.1", 50123)
SERVER = Endpoint("::1", 10911)


def rec(frame: bytes, direction: int = DIR_TO_SERVER, conn: int = 1, t: int = 0) -> object:
    return captured(frame, direction, CLIENT, SERVER, mono_ns=t, wall_ns=10**18 + t, conn_id=conn)


def test_round_trip_keeps_every_field_and_the_exact_bytes(tmp_path: Path) -> None:
    frames = [
        json_frame(105, 1, ext={"topic": "T"}),
        binary_frame(0, 1, flag=1, body=b"\x00\x01body"),
        b"\x00\x00\x00\x08\x00\x00\x00\x04{x}]",  # a frame whose header does not decode
    ]
    path = tmp_path / "c.rmqcap"
    with CaptureWriter(path, metadata={"tool": "test"}, wall_ns=123) as writer:
        for i, f in enumerate(frames):
            writer.write(rec(f, direction=i % 2, t=i))  # type: ignore[arg-type]
    reader = CaptureReader(path)
    assert reader.metadata == {"tool": "test"} and reader.created_ns == 123 and reader.version == (1, 0)
    got = list(reader)
    assert [r.data for r in got] == frames
    assert [(r.type, r.direction, r.mono_ns, r.wall_ns) for r in got] == [
        (REC_FRAME, i % 2, i, 10**18 + i) for i in range(3)
    ]
    assert (got[0].code, got[0].opaque, got[0].rpc_flag, got[0].serialize_type) == (105, 1, 0, 0)
    assert (got[1].code, got[1].opaque, got[1].rpc_flag, got[1].serialize_type) == (0, 1, 1, 1)
    assert got[0].flags & FLAG_DECODED and got[1].is_response
    assert not got[2].decoded and got[2].code == -1
    assert got[0].client == CLIENT and got[0].server == SERVER
    assert path.read_bytes()[:8] == MAGIC


def test_credentials_are_redacted_unless_kept(tmp_path: Path) -> None:
    frame = json_frame(10, 1, ext={"AccessKey": "ak", "Signature": "s"})
    r = frame_record(direction=0, mono_ns=0, wall_ns=0, conn_id=1, client=CLIENT, server=SERVER, frame=frame)
    assert r.flags & FLAG_REDACTED and b'"AccessKey":"**"' in r.data and len(r.data) == len(frame)
    kept = frame_record(
        direction=0, mono_ns=0, wall_ns=0, conn_id=1, client=CLIENT, server=SERVER, frame=frame, redact=False
    )
    assert kept.data == frame and not kept.flags & FLAG_REDACTED


def test_rotation_and_cap(tmp_path: Path) -> None:
    path = tmp_path / "c.rmqcap"
    frames = [json_frame(10, i, body=bytes(500)) for i in range(40)]
    with CaptureWriter(path, rotate_bytes=4000, max_segments=3) as writer:
        for i, f in enumerate(frames):
            writer.write(rec(f, t=i))  # type: ignore[arg-type]
        last = writer.segment_index
    segs = segment_paths(path)
    assert len(segs) == 3
    assert [s.name for s in segs] == [f"c.rmqcap.{i}" for i in range(last - 2, last + 1)]
    got = [r.opaque for r in read_records(path)]
    assert got == list(range(40 - len(got), 40))  # the newest records, contiguous, in order
    assert all(s.stat().st_size <= 4000 + 700 for s in segs)


def test_truncated_tail_and_bad_files(tmp_path: Path) -> None:
    path = tmp_path / "c.rmqcap"
    with CaptureWriter(path) as writer:
        for i in range(3):
            writer.write(rec(json_frame(10, i)))  # type: ignore[arg-type]
    path.write_bytes(path.read_bytes()[:-5])
    assert [r.opaque for r in CaptureReader(path)] == [0, 1]
    bad = tmp_path / "bad"
    bad.write_bytes(b"not a capture at all, clearly")
    with pytest.raises(CaptureFormatError):
        CaptureReader(bad)
    with pytest.raises(FileNotFoundError):
        list(read_records(tmp_path / "missing"))


def test_recorder_writes_open_frames_close_in_order(tmp_path: Path) -> None:
    path = tmp_path / "c.rmqcap"
    ticks = iter(range(100, 10_000))
    recorder = Recorder(CaptureWriter(path), mono_ns=lambda: next(ticks), wall_ns=lambda: 5)
    recorder.connection_opened(7, CLIENT, SERVER, {"kind": "broker"})
    recorder.frames(7, CLIENT, SERVER, DIR_TO_SERVER, [json_frame(10, 1), json_frame(10, 2)])
    recorder.frames(7, CLIENT, SERVER, DIR_TO_CLIENT, [b"\x16\x03raw"], FLAG_RAW)
    recorder.connection_closed(7, CLIENT, SERVER, "client closed")
    recorder.close()
    got = list(read_records(path))
    assert [r.type for r in got] == [REC_OPEN, REC_FRAME, REC_FRAME, REC_FRAME, REC_CLOSE]
    assert got[0].meta() == {"kind": "broker"}
    assert [r.opaque for r in got[1:3]] == [1, 2] and got[1].mono_ns == got[2].mono_ns == 101
    assert got[3].flags & FLAG_RAW and got[3].data == b"\x16\x03raw" and got[3].direction == DIR_TO_CLIENT
    assert got[4].data == b"client closed"
    assert recorder.stats.frames == 3 and recorder.error is None


def test_recorder_writes_in_batches_on_the_clock_and_early_when_the_backlog_is_full(tmp_path: Path) -> None:
    path = tmp_path / "c.rmqcap"
    clock = Clock()
    recorder = Recorder(CaptureWriter(path), max_pending=4, interval=0.005, call_later=clock.callLater)
    recorder.frames(1, CLIENT, SERVER, DIR_TO_SERVER, [json_frame(10, 0)])
    recorder.frames(1, CLIENT, SERVER, DIR_TO_SERVER, [json_frame(10, 1)])
    assert list(read_records(path)) == [] and len(clock.getDelayedCalls()) == 1  # one batch pending
    clock.advance(0.005)
    assert [r.opaque for r in read_records(path)] == [0, 1] and recorder.stats.batches == 1
    # a full backlog is written at once, before its batch is due: memory stays bounded
    for i in range(2, 6):
        recorder.frames(1, CLIENT, SERVER, DIR_TO_SERVER, [json_frame(10, i)])
    assert [r.opaque for r in read_records(path)] == [0, 1, 2, 3, 4, 5]
    assert recorder.stats.full_backlogs == 1
    recorder.frames(1, CLIENT, SERVER, DIR_TO_SERVER, [json_frame(10, 6)])
    recorder.close()  # writes what is left; the batch timer finding nothing does no harm
    clock.advance(1)
    assert [r.opaque for r in read_records(path)] == list(range(7)) and recorder.error is None


def test_a_new_capture_is_readable_before_any_record(tmp_path: Path) -> None:
    path = tmp_path / "c.rmqcap"
    writer = CaptureWriter(path, metadata={"k": 1})
    try:
        assert list(read_records(path)) == []
        assert CaptureReader(path).metadata == {"k": 1}
    finally:
        writer.close()
