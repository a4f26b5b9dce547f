"""SYNC_MASTER side by side on the twin and real 4.9.7 / 5.5.0: the answer to a ``WAIT=true`` send with
no slave, with a slave that does not acknowledge, and with one that does. The slave is played by hand
over the HA port (``codec/ha.py``), so it acknowledges exactly when told; both brokers run with
``inSyncReplicas=2`` (5.x waits for no slave below 2; 4.9.7 has no such key).

4.9.7 answers SLAVE_NOT_AVAILABLE (11) at once without a slave and FLUSH_SLAVE_TIMEOUT (12) after
``slaveTimeout`` (3 s) with a silent one; 5.5.0 answers FLUSH_SLAVE_TIMEOUT in both cases. Every
assertion is a literal both implementations of a line must meet.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.ha import TransferDecoder, encode_report
from rmqtwin.conformance.launcher import RealRocketMQ
from rmqtwin.fakes.pytest_plugin import start_subprocess
from tests.fakes.helpers import call

pytestmark = [pytest.mark.java, pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(600)]

SYNC_CONF = {"brokerRole": "SYNC_MASTER", "inSyncReplicas": 2, "brokerClusterName": "rmqtwin"}
EXPECTED = {
    "4.9": [(ResponseCode.SLAVE_NOT_AVAILABLE, None), (ResponseCode.FLUSH_SLAVE_TIMEOUT, None)],
    "5": [(ResponseCode.FLUSH_SLAVE_TIMEOUT, None), (ResponseCode.FLUSH_SLAVE_TIMEOUT, None)],
}


class Master(NamedTuple):
    line: str
    broker_addr: str


@pytest.fixture(params=["twin-4.9", "real-4.9", "twin-5", "real-5"])
def master(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Master]:
    kind, line = str(request.param).split("-")
    if kind == "real":
        with RealRocketMQ(line, broker_conf_overrides=SYNC_CONF) as real:
            yield Master(line, real.broker_addr)
        return
    version = "4.9" if line == "4.9" else "5.5"
    twin = start_subprocess(str(tmp_path), broker_conf=SYNC_CONF, serve_args=["--rocketmq-version", version])
    try:
        yield Master(line, twin.broker_addr)
    finally:
        twin.process.terminate()
        twin.process.wait(30)


class HandSlave:
    """A slave on the master's HA port: reports 0, then acknowledges what arrived only once ``acking``."""

    def __init__(self, ha_addr: str) -> None:
        host, _, port = ha_addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=30)
        self.received = 0
        self.acking = False
        self.lock = threading.Lock()
        self.sock.sendall(encode_report(0))
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        decoder = TransferDecoder()
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            for transfer in decoder.feed(data):
                with self.lock:
                    self.received = max(self.received, transfer.master_offset + len(transfer.body))
                    if self.acking:
                        self.sock.sendall(encode_report(self.received))

    def ack_from_now_on(self) -> None:
        with self.lock:
            self.acking = True
            self.sock.sendall(encode_report(self.received))

    def wait_for(self, offset: int, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.received < offset:
            assert time.monotonic() < deadline, f"the master sent {self.received} bytes, not {offset}"
            time.sleep(0.05)


def send(addr: str, topic: str, body: bytes) -> tuple[int, str | None, int]:
    """A SEND_MESSAGE_V2 with WAIT=true: (code, remark, elapsed ms)."""
    header = {"a": "P", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}
    header["i"] = "WAIT\x01true"
    began = time.monotonic()
    answer = call(addr, RequestCode.SEND_MESSAGE_V2, header, body)
    return answer.code, answer.remark, int((time.monotonic() - began) * 1000)


def test_sync_master_answers_as_real(master: Master) -> None:
    addr = master.broker_addr
    host, _, port = addr.rpartition(":")
    code, remark, _ = send(addr, "SyncT", b"no slave")
    assert (code, remark) == EXPECTED[master.line][0]
    slave = HandSlave(f"{host}:{int(port) + 1}")
    slave.wait_for(1)  # the master streams to it: it is connected
    code, remark, waited = send(addr, "SyncT", b"a silent slave")
    assert (code, remark) == EXPECTED[master.line][1]
    assert waited >= 2900  # slaveTimeout
    slave.ack_from_now_on()
    code, remark, _ = send(addr, "SyncT", b"an acknowledging slave")
    assert (code, remark) == (ResponseCode.SUCCESS, None)
