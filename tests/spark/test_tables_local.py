"""The table builders and the capture planner without Spark: the same functions the ``mapInArrow``
stages run, fed Arrow batches of capture records directly."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pytest.importorskip("pyspark")

from rmqtwin.proxy.capture import FLAG_RAW, REC_FRAME, read_records  # noqa: E402
from rmqtwin.proxy.stats import CaptureStats, percentile  # noqa: E402
from rmqtwin.proxy.synth import synthesize  # noqa: E402
from rmqtwin.spark import schemas  # noqa: E402
from rmqtwin.spark.sources import plan_capture, read_segment_part  # noqa: E402
from rmqtwin.spark.tables import exchanges_of, frames_of, messages_of, tables_of  # noqa: E402


def _ordered(path: Path, split_bytes: int = 1 << 20, notes: bool = False) -> pa.Table:
    """The records as the ingest hands them to the table builders (``notes``: with the skip notes)."""
    plan = plan_capture(str(path), split_bytes)
    table = pa.Table.from_batches([b for p in plan.parts for b in read_segment_part(p)])
    if not notes:
        table = table.filter(pa.compute.greater(table["type"], 0))
    return table.sort_by(
        [("conn_id", "ascending"), ("segment", "ascending"), ("pos", "ascending")], null_placement="at_start"
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


def test_one_pass_gives_every_table_and_the_skip_notes(tmp_path: Path) -> None:
    """``tables_of`` (what the ingest runs) equals the builders run one by one, plus the readers' notes."""
    path = tmp_path / "d.rmqcap"
    synthesize(path, frames=1500, seed=8)
    _damage(path, "truncated")
    decoded = _run(lambda it: tables_of(it, raw=True), _ordered(path, 64 * 1024, notes=True))
    assert decoded.schema == schemas.DECODED
    got = {
        name: decoded.filter(decoded[name].is_valid()).column(name).combine_chunks().to_pylist()
        for name in decoded.schema.names
    }
    ordered = _ordered(path, 64 * 1024)
    assert got["frames"] == _run(lambda it: frames_of(it, raw=True), ordered).to_pylist()
    assert got["exchanges"] == _run(exchanges_of, ordered).to_pylist()
    assert got["messages"] == _run(messages_of, ordered).to_pylist()
    assert len(got["frames"]) == 1500 and got["exchanges"] and got["messages"]
    assert [(r["input"], r["reason"], r["count"]) for r in got["skipped"]] == [
        ("d.rmqcap", "truncated last record", 1)
    ]


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


def test_pcap_missing_segment_and_a_foreign_flow_are_rows_that_say_why(tmp_path: Path) -> None:
    from scapy.layers.inet import IP, TCP
    from scapy.layers.l2 import Ether
    from scapy.utils import rdpcap, wrpcap

    from rmqtwin.proxy.pcap import to_pcap
    from rmqtwin.spark.sources import PcapFile, read_pcap

    capture, whole, damaged = tmp_path / "c.rmqcap", tmp_path / "whole.pcap", tmp_path / "damaged.pcap"
    synthesize(capture, frames=120, seed=4)
    to_pcap(capture, whole)
    packets = list(rdpcap(str(whole)))
    carrying = [i for i, p in enumerate(packets) if bytes(p[TCP].payload)]
    lost = carrying[len(carrying) // 2]
    http = [
        Ether() / IP(src="10.9.9.9", dst="10.0.0.2") / TCP(sport=5555, dport=8080, flags=f, seq=s, ack=a)
        for f, s, a in (("S", 100, 0), ("A", 101, 501))
    ]
    http.insert(
        1,
        Ether()
        / IP(src="10.0.0.2", dst="10.9.9.9")
        / TCP(sport=8080, dport=5555, flags="SA", seq=500, ack=101),
    )
    http.append(
        Ether()
        / IP(src="10.9.9.9", dst="10.0.0.2")
        / TCP(sport=5555, dport=8080, flags="PA", seq=101, ack=501)
        / b"GET / HTTP/1.1\r\nHost: broker\r\n\r\n"
    )
    for p in http:
        p.time = packets[-1].time
    wrpcap(str(damaged), [p for i, p in enumerate(packets) if i != lost] + http)

    def rows(path: Path) -> list[dict[str, object]]:
        return [r for b in read_pcap(PcapFile(str(path), ())) for r in b.to_pylist()]

    intact, hurt = rows(whole), rows(damaged)
    assert not [r for r in intact if r["type"] == 0]
    skips = {r["skip_reason"]: r["skipped_bytes"] for r in hurt if r["type"] == 0}
    assert skips.keys() == {
        "missing TCP segments (bytes never completed)",
        "non-RocketMQ flows (1, kept as raw chunks)",
    }
    assert skips["missing TCP segments (bytes never completed)"] > 0
    frames = [r for r in hurt if r["type"] == REC_FRAME and not r["flags"] & FLAG_RAW]
    # every frame before the gap (and on the other flows) is still there; the one carried by the lost
    # segment and those after it on that direction are not
    assert 0 < len(frames) < sum(1 for r in intact if r["type"] == REC_FRAME)


def test_store_torn_commitlog_tail_keeps_the_messages_before_it_and_says_why(tmp_path: Path) -> None:
    from rmqtwin.spark.sources import CommitlogFile, read_commitlog_file
    from tests.store_mirror.conftest import StoreFactory, make_msg

    stores = StoreFactory(str(tmp_path / "store"))
    store = stores.open()
    written = [store.put_message(make_msg(body=b"m%d" % i)) for i in range(5)]
    last = written[-1].append
    assert last is not None
    stores.close_all()
    with open(tmp_path / "store" / "commitlog" / f"{0:020d}", "r+b") as f:
        f.seek(last.wrote_offset + last.wrote_bytes)
        f.write((500).to_bytes(4, "big") + b"\x5a" * 60)  # a record being written when the broker died
    rows = [r for b in read_commitlog_file(CommitlogFile(str(tmp_path / "store"), 0)) for r in b.to_pylist()]
    assert [r["body"] for r in rows if r["skip_reason"] is None] == [b"m%d" % i for i in range(5)]
    torn = [(r["skip_reason"], r["skipped_bytes"]) for r in rows if r["skip_reason"] is not None]
    assert torn == [("torn commitlog tail (an invalid record before the zero fill)", 64)]
