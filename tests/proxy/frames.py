"""Frame builders for the proxy tests, written from the wire layout (protocol.md §1.2-1.4), and ``play``,
which feeds bytes to a session."""

from __future__ import annotations

import struct

import orjson

from rmqtwin.proxy.capture import Endpoint, Record, frame_record
from rmqtwin.proxy.session import Command, ProxySession


def json_frame(
    code: int,
    opaque: int,
    *,
    flag: int = 0,
    ext: dict[str, str] | None = None,
    body: bytes = b"",
    remark: str | None = None,
) -> bytes:
    header: dict[str, object] = {"code": code}
    if ext is not None:
        header["extFields"] = ext
    header.update({"flag": flag, "language": "JAVA", "opaque": opaque})
    if remark is not None:
        header["remark"] = remark
    header.update({"serializeTypeCurrentRPC": "JSON", "version": 409})
    raw = orjson.dumps(header)
    return struct.pack(">II", 4 + len(raw) + len(body), len(raw)) + raw + body


def binary_frame(
    code: int,
    opaque: int,
    *,
    flag: int = 0,
    ext: dict[str, str] | None = None,
    body: bytes = b"",
    remark: str | None = None,
) -> bytes:
    remark_raw = remark.encode() if remark else b""
    header = (
        struct.pack(">hBhii", code, 0, 409, opaque, flag) + struct.pack(">i", len(remark_raw)) + remark_raw
    )
    section = b"".join(
        struct.pack(">h", len(k.encode())) + k.encode() + struct.pack(">i", len(v.encode())) + v.encode()
        for k, v in (ext or {}).items()
    )
    header += struct.pack(">i", len(section)) + section
    return struct.pack(">II", 4 + len(header) + len(body), (1 << 24) | len(header)) + header + body


def captured(
    frame: bytes,
    direction: int,
    client: Endpoint,
    server: Endpoint,
    *,
    mono_ns: int = 0,
    wall_ns: int = 0,
    conn_id: int = 1,
    flags: int = 0,
) -> Record:
    """The REC_FRAME record of ``frame`` as the recorder writes it (header peeked, credentials masked)."""
    return frame_record(
        direction=direction,
        mono_ns=mono_ns,
        wall_ns=wall_ns,
        conn_id=conn_id,
        client=client,
        server=server,
        frame=frame,
        flags=flags,
    )


# protocol.md §3.17 (standard JSON, quoted keys) and §3.18 (plain fastjson, unquoted keys), two brokers.
ROUTE_QUOTED = (
    b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.5:10911","1":"10.0.0.6:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{"10.0.0.5:10911":["10.0.0.9:1"]},'
    b'"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}'
)
ROUTE_UNQUOTED = ROUTE_QUOTED.replace(b'{"0":', b"{0:").replace(b',"1":', b",1:")
CLUSTER_INFO = (
    b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.5:10911"},"brokerName":"broker-a",'
    b'"cluster":"DefaultCluster"}},"clusterAddrTable":{"DefaultCluster":["broker-a"]}}'
)


def play(session: ProxySession, *steps: tuple[int, bytes]) -> list[Command]:
    """The commands ``session`` gives for the (direction, bytes) ``steps``, received in order."""
    out: list[Command] = []
    for direction, data in steps:
        out += session.receive(direction, data)
    return out
