"""The table builders and the capture planner without Spark: the same functions the ``mapInArrow``
stages run, fed Arrow batches of capture records directly."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from rmqtwin.proxy.capture import read_records  # noqa: E402
from rmqtwin.proxy.stats import CaptureStats, percentile  # noqa: E402
from rmqtwin.proxy.synth import synthesize  # noqa: E402
from rmqtwin.spark.sources import plan_capture, read_segment_part  # noqa: E402
from rmqtwin.spark.tables import exchanges_of, frames_of, messages_of  # noqa: E402


def _ordered(path: Path, split_bytes: int = 1 << 20) -> pa.Table:
    plan = plan_capture(str(path), split_bytes)
    table = pa.Table.from_batches([b for p in plan.parts for b in read_segment_part(p)])
    keep = pa.compute.greater(table["type"], 0)
    return table.filter(keep).sort_by(
        [("conn_id", "ascending"), ("segment", "ascending"), ("pos", "ascending")]
    )


def _run(fn, table: pa.Table) -> pa.Table:  # type: ignore[no-untyped-def]
    return pa.Table.from_batches(list(fn(iter(table.to_batches(max_chunksize=1000)))))


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("synth") / "c.rmqcap"
    synthesize(path, frames=3000, seed=7, rotate_bytes=2 << 20)
    return path


def test_split_segments_give_every_record_once(capture: Path) -> None:
    plan = plan_capture(str(capture), split_bytes=256 * 1024)
    assert len(plan.parts) > len({p.path for p in plan.parts}) > 1  # rotated and split
    assert not plan.skips
    rows = sum(b.num_rows for p in plan.parts for b in read_segment_part(p))
    assert rows == sum(1 for _ in read_records(capture))


def test_exchanges_match_capture_stats(capture: Path) -> None:
    stats = CaptureStats.of(capture)
    ex = _run(exchanges_of, _ordered(capture)).to_pylist()
    assert len(_run(frames_of, _ordered(capture))) == stats.frames
    by_code: dict[int, list[int]] = {}
    counts: dict[int, int] = {}
    for row in ex:
        counts[row["request_code"]] = counts.get(row["request_code"], 0) + 1
        if row["latency_ns"] is not None:
            by_code.setdefault(row["request_code"], []).append(row["latency_ns"])
    assert counts == {code: row.count for code, row in stats.by_code.items()}
    for code, row in stats.by_code.items():
        mine, theirs = sorted(by_code.get(code, [])), sorted(row.latencies)
        assert mine == theirs
        if theirs:
            assert [percentile(mine, q) for q in (50, 90, 99)] == [
                percentile(theirs, q) for q in (50, 90, 99)
            ]


def test_messages_sent_carry_the_brokers_offsets(capture: Path) -> None:
    rows = _run(messages_of, _ordered(capture)).to_pylist()
    sent = [r for r in rows if r["event"] == "sent" and r["queue_offset"] is not None]
    delivered = {(r["topic"], r["queue_id"], r["queue_offset"]): r for r in rows if r["event"] == "delivered"}
    assert sent and delivered
    for r in sent:
        d = delivered.get((r["topic"], r["queue_id"], r["queue_offset"]))
        if d is not None:  # delivered before the capture ended
            assert (d["msg_id"], d["offset_msg_id"], d["body"]) == (
                r["msg_id"],
                r["offset_msg_id"],
                r["body"],
            )


def _damage(path: Path, how: str) -> None:
    data = bytearray(path.read_bytes())
    if how == "truncated":
        del data[-10:]
    elif how == "version":
        struct.pack_into("<H", data, 8, 2)
    elif how == "length":
        meta_len = struct.unpack_from("<I", data, 24)[0]
        first = 28 + meta_len
        second = first + 4 + struct.unpack_from("<I", data, first)[0]
        struct.pack_into("<I", data, second, 7)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("how", "reason", "kept"),
    [
        ("truncated", "truncated last record", "all but one"),
        ("version", "unknown capture format major version 2", "none"),
        ("length", "corrupt record length 7", "one"),
    ],
)
def test_damage_keeps_rows_up_to_it_and_says_why(tmp_path: Path, how: str, reason: str, kept: str) -> None:
    path = tmp_path / "d.rmqcap"
    synthesize(path, frames=200, seed=3)
    total = sum(1 for _ in read_records(path))
    _damage(path, how)
    plan = plan_capture(str(path))
    assert plan.skips[0][1].startswith(reason)
    rows = sum(b.num_rows for p in plan.parts for b in read_segment_part(p))
    skips = sum(1 for p in plan.parts for b in read_segment_part(p) for t in b["type"].to_pylist() if t == 0)
    expected = {"all but one": total - 1, "none": 0, "one": 1}[kept]
    assert rows - skips == expected
