"""pcap export and import of captures.

``to_pcap`` synthesizes, for every recorded connection, the TCP conversation that carried it:
3-way handshake, each direction's frames cut into segments of at most ``mss`` bytes with sequence and
acknowledgement numbers kept exact both ways, and the FIN exchange at close. Packets are built with
scapy and stream into the file, so Wireshark/tshark open it and "Follow TCP stream" gives back the
recorded bytes.

``from_pcap`` turns a tcpdump of real RocketMQ traffic into a capture: a hand parser over
``RawPcapReader`` (no scapy dissection, ~100x faster), TCP reassembly per flow and direction
(out-of-order segments wait for the gap to fill, retransmissions and overlaps are trimmed), then the
same frame splitting as the proxy, so both header serializations come out decoded.
"""

from __future__ import annotations

import ipaddress
import os
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rmqtwin.codec.frame import FrameSplitter
from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    FLAG_RAW,
    REC_CLOSE,
    REC_FRAME,
    REC_OPEN,
    CaptureWriter,
    Endpoint,
    Record,
    event_record,
    frame_record,
    read_records,
)

__all__ = [
    "DEFAULT_SERVER_PORTS",
    "PcapImportStats",
    "TcpReassembler",
    "from_pcap",
    "pcap_records",
    "to_pcap",
]

DEFAULT_SERVER_PORTS = frozenset({9876, 10911, 10909, 8080, 8081})
"""Ports taken as the server side of a flow whose SYN is not in the pcap."""

CLIENT_MAC = "02:00:00:00:00:01"
SERVER_MAC = "02:00:00:00:00:02"


# --------------------------------------------------------------------------------------- export


@dataclass(slots=True)
class _Conn:
    client: Endpoint
    server: Endpoint
    seq: list[int]  # next sequence number of [client, server]
    open: bool = True


def _ip_pair(client: Endpoint, server: Endpoint) -> tuple[str, str, bool]:
    def norm(e: Endpoint, fallback: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
        try:
            return ipaddress.ip_address(e.host)
        except ValueError:
            return ipaddress.ip_address(fallback)

    c = norm(client, "127.0.0.1")
    s = norm(server, "127.0.0.2")
    if str(c) == "::":
        c = ipaddress.ip_address("127.0.0.1")
    if str(s) == "::":
        s = ipaddress.ip_address("127.0.0.2")
    if c.version == s.version == 4:
        return str(c), str(s), False

    def v6(a: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str:
        return str(ipaddress.IPv6Address(b"\0" * 10 + b"\xff\xff" + a.packed)) if a.version == 4 else str(a)

    return v6(c), v6(s), True


def _label(rec: Record) -> bytes:
    from rmqtwin.codec.codes import request_code_name, response_code_name

    if not rec.decoded:
        return b"rocketmq: undecodable frame"
    if rec.rpc_flag & 1:
        return f"rocketmq response {response_code_name(rec.code)}({rec.code}) opaque={rec.opaque}".encode()
    return f"rocketmq request {request_code_name(rec.code)}({rec.code}) opaque={rec.opaque}".encode()


def to_pcap(
    capture: str | os.PathLike[str], out: str | os.PathLike[str], *, mss: int = 1460, pcapng: bool = False
) -> int:
    """Write ``capture`` as a pcap (or pcapng with a comment per frame); returns the packet count."""
    from scapy.layers.inet import IP, TCP
    from scapy.layers.inet6 import IPv6
    from scapy.layers.l2 import Ether
    from scapy.utils import PcapNgWriter, PcapWriter

    writer: Any = (
        PcapNgWriter(os.fspath(out)) if pcapng else PcapWriter(os.fspath(out), linktype=1, sync=False)
    )
    conns: dict[int, _Conn] = {}
    base: float | None = None
    count = 0
    isn = 1_000_000

    def emit(  # noqa: PLR0917
        conn: _Conn, sender: int, flags: str, payload: bytes, when: float, comment: bytes | None
    ) -> None:
        nonlocal count
        c_ip, s_ip, six = _ip_pair(conn.client, conn.server)
        ip_cls = IPv6 if six else IP
        if sender == 0:
            l2 = Ether(src=CLIENT_MAC, dst=SERVER_MAC)
            l3 = ip_cls(src=c_ip, dst=s_ip)
            sport, dport = conn.client.port or 40000, conn.server.port or 9876
        else:
            l2 = Ether(src=SERVER_MAC, dst=CLIENT_MAC)
            l3 = ip_cls(src=s_ip, dst=c_ip)
            sport, dport = conn.server.port or 9876, conn.client.port or 40000
        ack = conn.seq[1 - sender] if "A" in flags else 0
        seg = TCP(
            sport=sport, dport=dport, seq=conn.seq[sender] & 0xFFFFFFFF, ack=ack & 0xFFFFFFFF, flags=flags
        )
        seg.window = 65535
        pkt = l2 / l3 / seg
        if payload:
            pkt = pkt / payload
        pkt.time = when
        if comment is not None and pcapng:
            pkt.comments = [comment]
        writer.write(pkt)
        count += 1
        conn.seq[sender] += len(payload) + (1 if ("S" in flags or "F" in flags) else 0)

    def open_conn(rec: Record, when: float) -> _Conn:
        nonlocal isn
        conn = _Conn(rec.client, rec.server, [isn, isn + 7_000_000])
        isn += 13_000_000
        conns[rec.conn_id] = conn
        emit(conn, 0, "S", b"", when, None)
        emit(conn, 1, "SA", b"", when, None)
        emit(conn, 0, "A", b"", when, None)
        return conn

    try:
        for rec in read_records(capture):
            if base is None:
                base = rec.wall_ns / 1e9 - rec.mono_ns / 1e9
            when = base + rec.mono_ns / 1e9
            conn = conns.get(rec.conn_id)
            if rec.type == REC_OPEN:
                if conn is None:
                    open_conn(rec, when)
                continue
            if conn is None:
                conn = open_conn(rec, when)
            if not conn.open:
                continue
            if rec.type == REC_FRAME:
                sender = 0 if rec.direction == DIR_TO_SERVER else 1
                data = rec.data
                comment = None if rec.flags & FLAG_RAW else _label(rec)
                for start in range(0, len(data), mss):
                    last = start + mss >= len(data)
                    emit(
                        conn,
                        sender,
                        "PA" if last else "A",
                        data[start : start + mss],
                        when,
                        comment if last else None,
                    )
            elif rec.type == REC_CLOSE:
                closer = 0 if rec.data.startswith(b"client") else 1
                emit(conn, closer, "FA", b"", when, None)
                emit(conn, 1 - closer, "FA", b"", when, None)
                emit(conn, closer, "A", b"", when, None)
                conn.open = False
    finally:
        writer.close()
    return count


# --------------------------------------------------------------------------------------- import


@dataclass(slots=True)
class _Half:
    """One direction of a TCP flow being reassembled."""

    next_seq: int | None = None
    pending: dict[int, bytes] = field(default_factory=dict)
    splitter: FrameSplitter = field(default_factory=FrameSplitter)
    fin: bool = False


@dataclass(slots=True)
class _Flow:
    conn_id: int
    client: Endpoint
    server: Endpoint
    halves: tuple[_Half, _Half]
    closed: bool = False


@dataclass(slots=True)
class PcapImportStats:
    packets: int = 0
    tcp_segments: int = 0
    flows: int = 0
    frames: int = 0
    retransmitted_bytes: int = 0
    out_of_order_segments: int = 0
    undelivered_bytes: int = 0
    """Bytes after a missing TCP segment (never completed before the flow closed or the pcap ended)."""
    raw_chunks: int = 0
    """Unframed chunks of streams that are not RocketMQ remoting (recorded with FLAG_RAW)."""
    non_rocketmq_flows: int = 0


_ETH_IP4 = 0x0800
_ETH_IP6 = 0x86DD
_ETH_VLAN = (0x8100, 0x88A8)


def _l3(linktype: int, data: bytes) -> tuple[int, int] | None:
    """(ethertype, offset of the IP header) for the link types tcpdump writes."""
    if linktype == 1:  # Ethernet
        if len(data) < 14:
            return None
        off = 12
        ethertype = struct.unpack_from(">H", data, off)[0]
        while ethertype in _ETH_VLAN and len(data) >= off + 6:
            off += 4
            ethertype = struct.unpack_from(">H", data, off)[0]
        return ethertype, off + 2
    if linktype == 113:  # Linux cooked v1
        return (struct.unpack_from(">H", data, 14)[0], 16) if len(data) >= 16 else None
    if linktype == 276:  # Linux cooked v2
        return (struct.unpack_from(">H", data, 0)[0], 20) if len(data) >= 20 else None
    if linktype in (0, 108):  # BSD loopback: 4-byte address family, host or network order
        if len(data) < 5:
            return None
        return (_ETH_IP4 if data[4] >> 4 == 4 else _ETH_IP6), 4
    if linktype in (101, 12, 14, 228, 229):  # raw IP
        if not data:
            return None
        version = data[0] >> 4
        return (_ETH_IP4 if version == 4 else _ETH_IP6), 0
    return None


def _tcp(linktype: int, data: bytes) -> tuple[str, str, int, int, int, int, bytes] | None:
    """(src ip, dst ip, sport, dport, seq, tcp flags, payload) of a TCP packet, else ``None``."""
    l3 = _l3(linktype, data)
    if l3 is None:
        return None
    ethertype, off = l3
    if ethertype == _ETH_IP4:
        if len(data) < off + 20:
            return None
        ihl = (data[off] & 0x0F) * 4
        total = struct.unpack_from(">H", data, off + 2)[0]
        frag = struct.unpack_from(">H", data, off + 6)[0]
        if data[off + 9] != 6 or frag & 0x1FFF or frag & 0x2000:
            return None  # not TCP, or a fragment
        src = str(ipaddress.IPv4Address(data[off + 12 : off + 16]))
        dst = str(ipaddress.IPv4Address(data[off + 16 : off + 20]))
        end = off + total if total else len(data)
        off += ihl
    elif ethertype == _ETH_IP6:
        if len(data) < off + 40 or data[off + 6] != 6:
            return None
        plen = struct.unpack_from(">H", data, off + 4)[0]
        src = str(ipaddress.IPv6Address(data[off + 8 : off + 24]))
        dst = str(ipaddress.IPv6Address(data[off + 24 : off + 40]))
        off += 40
        end = off + plen
    else:
        return None
    if len(data) < off + 20:
        return None
    sport, dport, seq = struct.unpack_from(">HHI", data, off)
    doff = (data[off + 12] >> 4) * 4
    flags = data[off + 13]
    return src, dst, sport, dport, seq, flags, bytes(data[off + doff : min(end, len(data))])


_FIN, _SYN, _RST, _ACK = 0x01, 0x02, 0x04, 0x10


def _packets(path: str | os.PathLike[str]) -> Iterator[tuple[int, int, bytes]]:
    """(timestamp ns, linktype, bytes) of every packet in a pcap or pcapng file."""
    from scapy.utils import RawPcapReader

    reader: Any = RawPcapReader(os.fspath(path))
    try:
        linktype = getattr(reader, "linktype", 1)
        nano = bool(getattr(reader, "nano", False))
        for data, meta in reader:
            if hasattr(meta, "sec"):
                ts = meta.sec * 1_000_000_000 + meta.usec * (1 if nano else 1000)
            else:  # pcapng: tshigh/tslow in the interface's resolution (microseconds by default)
                raw = (meta.tshigh << 32) | meta.tslow
                ts = int(raw * 1_000_000_000 / getattr(meta, "tsresol", 1_000_000))
                linktype = getattr(meta, "linktype", linktype)
            yield ts, linktype, data
    finally:
        reader.close()


class TcpReassembler:
    """TCP reassembly of RocketMQ flows into capture records: packets in, records out (sans-IO).

    Per flow and direction, out-of-order segments wait for the gap to fill and retransmissions and
    overlaps are trimmed; each direction's bytes then go through the proxy's frame splitter, so both
    header serializations come out decoded. ``from_pcap`` and the Spark ``pcap`` data source both feed
    packets here; ``stats`` counts what could not be delivered.
    """

    def __init__(self, server_ports: Iterable[int] = DEFAULT_SERVER_PORTS, *, redact: bool = True) -> None:
        self.servers = frozenset(server_ports)
        self.redact = redact
        self.stats = PcapImportStats()
        self._flows: dict[tuple[tuple[str, int], tuple[str, int]], tuple[_Flow, int]] = {}
        self._out: list[Record] = []

    def packet(self, ts: int, linktype: int, data: bytes) -> list[Record]:
        """The records one captured packet completes (OPEN, FRAMEs, CLOSE), in order."""
        self.stats.packets += 1
        parsed = _tcp(linktype, data)
        if parsed is None:
            return []
        self.stats.tcp_segments += 1
        src, dst, sport, dport, seq, flags, payload = parsed
        flow, direction = self._flow(ts, (src, sport), (dst, dport), flags)
        half = flow.halves[direction]
        if flags & _SYN:
            half.next_seq = (seq + 1) & 0xFFFFFFFF
            seq = (seq + 1) & 0xFFFFFFFF
        if payload and not flow.closed:
            self._deliver(flow, direction, seq, payload, ts)
        if flags & (_FIN | _RST) and not flow.closed:
            half.fin = True
            if flags & _RST or all(h.fin for h in flow.halves):
                who = "client" if direction == DIR_TO_SERVER else "upstream"
                self._close(flow, ts, f"{who} closed ({'RST' if flags & _RST else 'FIN'})")
        out, self._out = self._out, []
        return out

    def finish(self) -> None:
        """End of the pcap: bytes still waiting for a missing segment count as undelivered."""
        for flow, direction in self._flows.values():
            if not flow.closed and direction == DIR_TO_SERVER:
                self._count_undelivered(flow)

    def _count_undelivered(self, flow: _Flow) -> None:
        for h in flow.halves:
            lost = sum(len(p) for p in h.pending.values()) + h.splitter.buffered
            self.stats.undelivered_bytes += lost
            h.pending.clear()
        if any(h.splitter.raw for h in flow.halves):
            self.stats.non_rocketmq_flows += 1

    def _flow(self, ts: int, src: tuple[str, int], dst: tuple[str, int], flags: int) -> tuple[_Flow, int]:
        flows = self._flows
        key_fwd = (src, dst)
        entry = flows.get(key_fwd)
        if entry is None:
            entry_rev = flows.get((dst, src))
            if entry_rev is not None and not entry_rev[0].closed:
                entry = flows[key_fwd] = (entry_rev[0], 1 - entry_rev[1])
        if entry is not None and entry[0].closed and flags & _SYN and not flags & _ACK:
            entry = None  # a new connection reusing the 4-tuple
        if entry is not None:
            return entry
        # Who is the client: the SYN sender; else the side not on a server port; else the higher port.
        sport, dport = src[1], dst[1]
        if flags & _SYN and not flags & _ACK:
            client_is_src = True
        elif flags & _SYN:
            client_is_src = False
        elif dport in self.servers and sport not in self.servers:
            client_is_src = True
        elif sport in self.servers and dport not in self.servers:
            client_is_src = False
        else:
            client_is_src = sport >= dport
        self.stats.flows += 1
        c, s = (src, dst) if client_is_src else (dst, src)
        flow = _Flow(self.stats.flows, Endpoint(*c), Endpoint(*s), (_Half(), _Half()))
        d = DIR_TO_SERVER if client_is_src else DIR_TO_CLIENT
        flows[key_fwd] = (flow, d)
        flows[(dst, src)] = (flow, 1 - d)
        self._event(REC_OPEN, flow, ts, b'{"kind":"pcap"}')
        return flow, d

    def _close(self, flow: _Flow, ts: int, reason: str) -> None:
        flow.closed = True
        self._count_undelivered(flow)
        self._event(REC_CLOSE, flow, ts, reason.encode())

    def _event(self, rec_type: int, flow: _Flow, ts: int, data: bytes) -> None:
        """A flow's OPEN or CLOSE record at the packet's time (a pcap has one clock for both stamps)."""
        self._out.append(
            event_record(
                rec_type,
                mono_ns=ts,
                wall_ns=ts,
                conn_id=flow.conn_id,
                client=flow.client,
                server=flow.server,
                data=data,
            )
        )

    def _emit_frames(self, flow: _Flow, direction: int, chunk: bytes, ts: int) -> None:
        splitter = flow.halves[direction].splitter
        frames = [(frame, 0) for frame in splitter.feed(chunk)]
        self.stats.frames += len(frames)
        if splitter.raw:
            raw = splitter.take_raw()
            self.stats.raw_chunks += len(raw)
            frames += [(chunk, FLAG_RAW) for chunk in raw]
        for frame, flags in frames:
            self._out.append(
                frame_record(
                    direction=direction,
                    mono_ns=ts,
                    wall_ns=ts,
                    conn_id=flow.conn_id,
                    client=flow.client,
                    server=flow.server,
                    frame=frame,
                    flags=flags,
                    redact=self.redact,
                )
            )

    def _deliver(self, flow: _Flow, direction: int, seq: int, payload: bytes, ts: int) -> None:
        stats = self.stats
        half = flow.halves[direction]
        if half.next_seq is None:
            half.next_seq = seq
        offset = (seq - half.next_seq) & 0xFFFFFFFF
        if offset >= 0x80000000:  # before next_seq: retransmission, maybe with new bytes at its end
            behind = (half.next_seq - seq) & 0xFFFFFFFF
            if behind >= len(payload):
                stats.retransmitted_bytes += len(payload)
                return
            stats.retransmitted_bytes += behind
            payload = payload[behind:]
            seq = half.next_seq
            offset = 0
        if offset > 0:
            stats.out_of_order_segments += 1
            if len(payload) > len(half.pending.get(seq, b"")):
                half.pending[seq] = payload
            return
        self._emit_frames(flow, direction, payload, ts)
        half.next_seq = (seq + len(payload)) & 0xFFFFFFFF
        while half.pending:
            progressed = False
            for pseq in list(half.pending):
                poff = (pseq - half.next_seq) & 0xFFFFFFFF
                if poff == 0 or poff >= 0x80000000:
                    data = half.pending.pop(pseq)
                    skip = 0 if poff == 0 else (half.next_seq - pseq) & 0xFFFFFFFF
                    if skip < len(data):
                        self._emit_frames(flow, direction, data[skip:], ts)
                        half.next_seq = (half.next_seq + len(data) - skip) & 0xFFFFFFFF
                    else:
                        stats.retransmitted_bytes += len(data)
                    progressed = True
            if not progressed:
                break


def pcap_records(pcap: str | os.PathLike[str], reassembler: TcpReassembler | None = None) -> Iterator[Record]:
    """Every record a pcap/pcapng file gives through ``reassembler`` (a default one if ``None``);
    its ``stats`` are complete once the iterator is exhausted."""
    reasm = reassembler or TcpReassembler()
    for ts, linktype, data in _packets(pcap):
        yield from reasm.packet(ts, linktype, data)
    reasm.finish()


def from_pcap(
    pcap: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    server_ports: Iterable[int] = DEFAULT_SERVER_PORTS,
    redact: bool = True,
    rotate_bytes: int = 256 * 1024 * 1024,
) -> PcapImportStats:
    """Convert a tcpdump capture of RocketMQ traffic into an rmqtwin capture at ``out``."""
    reassembler = TcpReassembler(server_ports, redact=redact)
    with CaptureWriter(
        out,
        rotate_bytes=rotate_bytes,
        metadata={"source": os.fspath(pcap), "tool": "from-pcap"},
        wall_ns=time.time_ns(),
    ) as writer:
        for rec in pcap_records(pcap, reassembler):
            writer.write(rec)
    return reassembler.stats


def frames_by_direction(capture: str | os.PathLike[str]) -> dict[tuple[int, int], bytes]:
    """Concatenated frame bytes per (connection, direction): what each TCP stream carried."""
    out: dict[tuple[int, int], bytearray] = {}
    for rec in read_records(capture):
        if rec.type == REC_FRAME:
            out.setdefault((rec.conn_id, rec.direction), bytearray()).extend(rec.data)
    return {k: bytes(v) for k, v in out.items()}
