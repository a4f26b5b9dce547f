from __future__ import annotations

from pathlib import Path

import pytest

from rmqtwin.cli import main
from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    CaptureWriter,
    Endpoint,
    read_records,
)
from rmqtwin.proxy.stats import CaptureStats, format_stats, pair_exchanges, percentile
from tests.proxy.frames import binary_frame, captured, json_frame

C = Endpoint("127.0.0.1", 50001)
S = Endpoint("127.0.0.1", 10911)


def write(path: Path, script: list[tuple[int, int, int, bytes]]) -> None:
    with CaptureWriter(path) as w:
        for t, cid, direction, frame in script:
            w.write(captured(frame, direction, C, S, mono_ns=t, wall_ns=t, conn_id=cid))


MS = 1_000_000


def test_pairing_by_connection_direction_and_opaque(tmp_path: Path) -> None:
    path = tmp_path / "c"
    write(
        path,
        [
            (0, 1, DIR_TO_SERVER, json_frame(310, 1, ext={"b": "TopicA"})),
            (0, 2, DIR_TO_SERVER, json_frame(310, 1, ext={"b": "TopicB"})),  # same opaque, other connection
            (
                1 * MS,
                1,
                DIR_TO_CLIENT,
                json_frame(39, 1, flag=2),
            ),  # broker request, oneway, same opaque number
            (3 * MS, 2, DIR_TO_CLIENT, json_frame(0, 1, flag=1)),
            (5 * MS, 1, DIR_TO_CLIENT, json_frame(0, 1, flag=1)),
            (6 * MS, 1, DIR_TO_SERVER, binary_frame(11, 2, ext={"topic": "TopicA"})),  # never answered
            (7 * MS, 1, DIR_TO_CLIENT, json_frame(221, 9, ext={"topic": "TopicA"})),  # broker request
            (8 * MS, 1, DIR_TO_SERVER, json_frame(1, 9, flag=1, remark="err")),  # client's answer
        ],
    )
    exchanges = list(pair_exchanges(read_records(path)))
    summary = [(e.request.conn_id, e.request.code, e.latency_ns, e.oneway) for e in exchanges]
    assert summary == [
        (1, 39, None, True),
        (2, 310, 3 * MS, False),
        (1, 310, 5 * MS, False),
        (1, 221, 1 * MS, False),
        (1, 11, None, False),
    ]
    stats = CaptureStats.of(path)
    assert stats.by_code[310].count == 2 and sorted(stats.by_code[310].latencies) == [3 * MS, 5 * MS]
    assert stats.by_topic["TopicA"].count == 3 and stats.by_topic["TopicA"].answered == 2
    assert stats.by_code[221].errors == 1
    text = format_stats(stats)
    assert "SEND_MESSAGE_V2 (310)" in text and "TopicB" in text and "5.000" in text


def test_percentile_nearest_rank() -> None:
    values = list(range(1, 101))
    assert [percentile(values, q) for q in (50, 90, 99, 100)] == [50, 90, 99, 100]
    assert percentile([7], 99) == 7
    with pytest.raises(ValueError):
        percentile([], 50)


def test_capture_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c"
    write(
        path,
        [
            (0, 1, DIR_TO_SERVER, json_frame(105, 4, ext={"topic": "T", "AccessKey": "secretkey"})),
            (2 * MS, 1, DIR_TO_CLIENT, json_frame(17, 4, flag=1, remark="No topic route info")),
        ],
    )
    assert main(["capture", "show", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        "REQUEST GET_ROUTEINFO_BY_TOPIC(105) opaque=4" in out[0]
        and "topic=T" in out[0]
        and out[0].endswith("*")
    )
    assert "RESPONSE TOPIC_NOT_EXIST(17) opaque=4" in out[1]
    assert main(["capture", "stats", str(path)]) == 0
    assert "GET_ROUTEINFO_BY_TOPIC (105)" in capsys.readouterr().out
    pcap = tmp_path / "x.pcap"
    assert main(["capture", "to-pcap", str(path), str(pcap)]) == 0
    back = tmp_path / "back"
    assert main(["capture", "from-pcap", str(pcap), str(back), "--server-port", "10911"]) == 0
    assert [r.data for r in read_records(back) if r.type == 1] == [r.data for r in read_records(path)]
    assert b"secretkey" not in path.read_bytes()
