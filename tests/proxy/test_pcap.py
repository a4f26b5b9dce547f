"""pcap export checked by tshark, pcap import (reassembly), and the scapy layer."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    REC_CLOSE,
    REC_FRAME,
    REC_OPEN,
    CaptureWriter,
    Endpoint,
    event_record,
    frame_record,
    read_records,
)
from rmqtwin.proxy.pcap import frames_by_direction, from_pcap, to_pcap
from tests.proxy.frames import binary_frame, json_frame

TSHARK = shutil.which("tshark")
needs_tshark = pytest.mark.skipif(
    TSHARK is None, reason="tshark is not installed (scripts/setup.sh installs it)"
)


def sample_capture(path: Path) -> list[tuple[int, int, bytes]]:
    """Two connections: a namesrv lookup, and a broker session with a large frame and a broker request."""
    conns = {
        1: (Endpoint("127.0.0.1", 50001), Endpoint("127.0.0.1", 9876)),
        2: (Endpoint("127.0.0.1", 50002), Endpoint("127.0.0.1", 10911)),
    }
    script: list[tuple[int, int, bytes]] = [
        (1, DIR_TO_SERVER, json_frame(105, 0, ext={"topic": "T"})),
        (1, DIR_TO_CLIENT, json_frame(0, 0, flag=1, body=b'{"brokerDatas":[]}')),
        (2, DIR_TO_SERVER, json_frame(310, 1, ext={"a": "g", "b": "T"}, body=bytes(range(256)) * 40)),
        (2, DIR_TO_SERVER, binary_frame(34, 2, body=b"{}") + b""),
        (2, DIR_TO_CLIENT, json_frame(0, 1, flag=1, ext={"msgId": "M", "queueId": "0"})),
        (2, DIR_TO_CLIENT, json_frame(40, 77, flag=2, ext={"consumerGroup": "cg"})),
        (2, DIR_TO_CLIENT, binary_frame(0, 2, flag=1)),
    ]
    with CaptureWriter(path) as writer:
        t = 1_000
        for cid, (c, s) in conns.items():
            writer.write(
                event_record(REC_OPEN, mono_ns=t, wall_ns=t, conn_id=cid, client=c, server=s, data=b"{}")
            )
        for cid, direction, frame in script:
            t += 250_000
            c, s = conns[cid]
            writer.write(
                frame_record(
                    direction=direction, mono_ns=t, wall_ns=t, conn_id=cid, client=c, server=s, frame=frame
                )
            )
        for cid, (c, s) in conns.items():
            t += 1_000
            writer.write(
                event_record(
                    REC_CLOSE, mono_ns=t, wall_ns=t, conn_id=cid, client=c, server=s, data=b"client closed"
                )
            )
    return script


def tshark(*args: str) -> str:
    assert TSHARK is not None
    return subprocess.run([TSHARK, *args], capture_output=True, text=True, check=True, timeout=60).stdout


@needs_tshark
@pytest.mark.parametrize("pcapng", [False, True], ids=["pcap", "pcapng"])
def test_tshark_reads_the_export_and_its_streams_are_the_recorded_frames(
    tmp_path: Path, pcapng: bool
) -> None:
    cap = tmp_path / "c.rmqcap"
    script = sample_capture(cap)
    out = tmp_path / ("x.pcapng" if pcapng else "x.pcap")
    count = to_pcap(cap, out, mss=1000, pcapng=pcapng)
    assert count > 3 * 2 + 7
    expert = tshark("-r", str(out), "-q", "-z", "expert")
    assert "Warning" not in expert and "Error" not in expert
    assert "Previous segment" not in expert and "ACKed unseen" not in expert
    for stream, cid in ((0, 1), (1, 2)):
        follow = tshark("-r", str(out), "-q", "-z", f"follow,tcp,raw,{stream}")
        sent = bytearray()
        received = bytearray()
        for line in follow.splitlines():
            if not line or line.startswith(("=", "Follow", "Filter", "Node")):
                continue
            (received if line.startswith("\t") else sent).extend(bytes.fromhex(line.strip()))
        assert bytes(sent) == b"".join(f for c, d, f in script if c == cid and d == DIR_TO_SERVER)
        assert bytes(received) == b"".join(f for c, d, f in script if c == cid and d == DIR_TO_CLIENT)
    # segments are at most the MSS, and there is a FIN each way per connection
    lengths = [int(x) for x in tshark("-r", str(out), "-T", "fields", "-e", "tcp.len").split()]
    assert max(lengths) == 1000
    fins = tshark("-r", str(out), "-Y", "tcp.flags.fin==1", "-T", "fields", "-e", "tcp.stream").split()
    assert sorted(fins) == ["0", "0", "1", "1"]
    if pcapng:
        comments = tshark("-r", str(out), "-T", "fields", "-e", "frame.comment")
        assert "rocketmq request GET_ROUTEINFO_BY_TOPIC(105) opaque=0" in comments
        assert "rocketmq request NOTIFY_CONSUMER_IDS_CHANGED(40) opaque=77" in comments


def test_from_pcap_gives_back_the_same_frames(tmp_path: Path) -> None:
    cap = tmp_path / "c.rmqcap"
    sample_capture(cap)
    pcap = tmp_path / "x.pcap"
    to_pcap(cap, pcap, mss=700)
    back = tmp_path / "back.rmqcap"
    stats = from_pcap(pcap, back)
    assert stats.flows == 2 and stats.retransmitted_bytes == 0
    assert frames_by_direction(back) == frames_by_direction(cap)
    original = [
        (r.code, r.opaque, r.rpc_flag, r.serialize_type, r.direction)
        for r in read_records(cap)
        if r.type == REC_FRAME
    ]
    again = [
        (r.code, r.opaque, r.rpc_flag, r.serialize_type, r.direction)
        for r in read_records(back)
        if r.type == REC_FRAME
    ]
    assert again == original
    kinds = [r.type for r in read_records(back)]
    assert kinds.count(REC_OPEN) == 2 and kinds.count(REC_CLOSE) == 2


def test_from_pcap_reorders_and_drops_retransmissions(tmp_path: Path) -> None:
    from scapy.layers.inet import TCP
    from scapy.utils import rdpcap, wrpcap

    cap = tmp_path / "c.rmqcap"
    sample_capture(cap)
    pcap = tmp_path / "x.pcap"
    to_pcap(cap, pcap, mss=300)
    packets = list(rdpcap(str(pcap)))
    data_idx = [i for i, p in enumerate(packets) if len(bytes(p[TCP].payload)) > 0]
    rng = random.Random(7)
    # swap some neighbouring data segments, and retransmit others (one partially overlapping)
    for i in data_idx[2:-2:3]:
        packets[i], packets[i + 1] = packets[i + 1], packets[i]
    dup = packets[data_idx[5]].copy()
    packets.insert(data_idx[9], dup)
    overlap = packets[data_idx[12]].copy()
    payload = bytes(overlap[TCP].payload)
    overlap[TCP].remove_payload()
    overlap[TCP].seq -= 10
    overlap = overlap / (b"\x00" * 10 + payload[:50])
    packets.insert(data_idx[14], overlap)
    rng.shuffle(packets[data_idx[20] : data_idx[20] + 4])
    messy = tmp_path / "messy.pcap"
    wrpcap(str(messy), packets)
    back = tmp_path / "back.rmqcap"
    stats = from_pcap(messy, back)
    assert stats.retransmitted_bytes >= len(payload[:50]) and stats.out_of_order_segments > 0
    assert frames_by_direction(back) == frames_by_direction(cap)


def test_scapy_layer_reassembles_frames_from_a_pcap(tmp_path: Path) -> None:
    from scapy.sendrecv import sniff
    from scapy.sessions import TCPSession

    from rmqtwin.proxy.scapy_layer import RocketMQ

    cap = tmp_path / "c.rmqcap"
    script = sample_capture(cap)
    pcap = tmp_path / "x.pcap"
    to_pcap(cap, pcap, mss=500)
    got = []
    for pkt in sniff(offline=str(pcap), session=TCPSession, store=True, quiet=True):
        layer = pkt.getlayer(RocketMQ)
        while layer is not None and isinstance(layer, RocketMQ):
            got.append(bytes(layer)[: 4 + layer.length])
            layer = layer.payload.getlayer(RocketMQ) if layer.payload else None
    assert sorted(got) == sorted(f for _, _, f in script)
    peek = RocketMQ(script[0][2]).peek()
    assert peek is not None and peek.code == 105 and peek.ext_fields == {"topic": "T"}
    built = RocketMQ(header=b'{"code":34}', body=b"xy")
    assert bytes(built) == b"\x00\x00\x00\x11\x00\x00\x00\x0b" + b'{"code":34}' + b"xy"
