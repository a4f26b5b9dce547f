"""The proxy process on real loopback sockets: flow control against a peer that stops reading."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

from rmqtwin.proxy.capture import REC_FRAME, read_records
from rmqtwin.proxy.process import start_proxy
from tests.proxy.frames import json_frame

LIMIT = 200 * 1024 * 1024


def rss_kib(pid: int) -> int:
    for row in Path(f"/proc/{pid}/status").read_text().splitlines():
        if row.startswith("VmRSS:"):
            return int(row.split()[1])
    raise AssertionError("no VmRSS")


def test_a_peer_that_stops_reading_stops_the_other_side_and_nothing_is_lost(tmp_path: Path) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    upstream = f"127.0.0.1:{server.getsockname()[1]}"
    accepted: list[socket.socket] = []
    ready = threading.Event()

    def accept() -> None:
        conn, _ = server.accept()
        accepted.append(conn)
        ready.set()

    threading.Thread(target=accept, daemon=True).start()
    proxy = start_proxy(upstream, tmp_path / "flow.rmqcap")
    try:
        host, _, port = proxy.namesrv.rpartition(":")
        client = socket.create_connection((host, int(port)))
        assert ready.wait(10)
        rss_before = rss_kib(proxy.process.pid)
        frame = json_frame(10, 1, ext={"topic": "T"}, body=b"m" * (1024 * 1024 - 200))
        client.setblocking(False)
        sent = 0
        stalled_since: float | None = None
        while sent < LIMIT:
            try:
                n = client.send(memoryview(frame)[sent % len(frame) :])
            except BlockingIOError:
                n = 0
            if n:
                sent += n
                stalled_since = None
            else:
                stalled_since = stalled_since or time.monotonic()
                if time.monotonic() - stalled_since > 2.0:
                    break
                time.sleep(0.01)
        # the upstream never read: the client was stopped by a bounded amount of buffering
        assert sent < 48 * 1024 * 1024, sent
        assert rss_kib(proxy.process.pid) - rss_before < 64 * 1024
        # the client is done; now the upstream reads: every byte arrives, in order, then the close
        client.shutdown(socket.SHUT_WR)
        upstream_conn = accepted[0]
        upstream_conn.settimeout(60)
        received = 0
        while True:
            chunk = upstream_conn.recv(1 << 20)
            if not chunk:
                break
            offset = received % len(frame)
            head = chunk[: len(frame) - offset]
            assert head == frame[offset : offset + len(head)]
            tail = chunk[len(head) :]
            assert tail == (frame * (len(tail) // len(frame) + 1))[: len(tail)]
            received += len(chunk)
        assert received == sent
        upstream_conn.close()
        client.close()
    finally:
        assert proxy.stop() == 0
        server.close()
    frames = [r for r in read_records(proxy.capture) if r.type == REC_FRAME]
    assert len(frames) == sent // len(frame) and all(r.code == 10 for r in frames)
