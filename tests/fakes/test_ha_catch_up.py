"""A twin slave whose master goes away keeps serving reads and catches up, byte for byte, once the
master is back on its store (separate processes: name server, master, slave; raw requests only)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.conformance.launcher import free_broker_port
from rmqtwin.fakes.pytest_plugin import RunningTwin, start_subprocess
from tests.fakes.helpers import call
from tests.fakes.test_ha_real import assert_refuses_writes, wait_identical

pytestmark = [pytest.mark.timeout(180)]

CONF = {"mappedFileSizeCommitLog": 1 << 20, "brokerClusterName": "c1", "slaveReadEnable": True}


@pytest.fixture
def processes() -> Iterator[list[RunningTwin]]:
    started: list[RunningTwin] = []
    yield started
    for twin in reversed(started):
        if twin.process.poll() is None:
            twin.process.terminate()
            twin.process.wait(30)


def send(addr: str, body: bytes) -> None:
    header = {"a": "P", "b": "Ha", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}
    answer = call(addr, RequestCode.SEND_MESSAGE_V2, header, body)
    assert answer.code == ResponseCode.SUCCESS, answer.remark


def test_slave_serves_reads_without_its_master_and_catches_up(
    tmp_path: Path, processes: list[RunningTwin]
) -> None:
    namesrv = start_subprocess(str(tmp_path / "ns"), serve_args=["--role", "namesrv"])
    processes.append(namesrv)
    port = str(free_broker_port())
    master_args = ["--role", "broker", "--namesrv-addr", namesrv.namesrv_addr, "--broker-port", port]
    master = start_subprocess(str(tmp_path / "m"), broker_conf=CONF, serve_args=master_args)
    processes.append(master)
    slave = start_subprocess(
        str(tmp_path / "s"),
        broker_conf={**CONF, "brokerId": 1, "brokerRole": "SLAVE"},
        serve_args=["--role", "broker", "--namesrv-addr", namesrv.namesrv_addr],
    )
    processes.append(slave)
    for i in range(10):
        send(master.broker_addr, b"before %d" % i)
    wait_identical(master.store_dir, slave.store_dir)
    route = call(namesrv.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Ha"})
    addrs = orjson.loads(route.body or b"{}")["brokerDatas"][0]["brokerAddrs"]
    assert addrs == {"0": master.broker_addr, "1": slave.broker_addr}  # the route lists the slave

    master.process.kill()
    master.process.wait()
    assert_refuses_writes(slave.broker_addr, "Ha", "5")
    header = {"topic": "Ha", "queueId": "0"}
    in_queue = call(slave.broker_addr, RequestCode.GET_MAX_OFFSET, header).ext_fields["offset"]
    assert int(in_queue) > 0  # what the slave holds is still read there

    master = start_subprocess(str(tmp_path / "m"), broker_conf=CONF, serve_args=master_args)
    processes.append(master)
    for i in range(10):
        send(master.broker_addr, b"after %d" % i)
    files = wait_identical(master.store_dir, slave.store_dir, timeout=60)
    assert sum(f.count(b"after ") for f in files.values()) == 10
    deadline = time.monotonic() + 30
    while int(call(slave.broker_addr, RequestCode.GET_MAX_OFFSET, header).ext_fields["offset"]) <= int(
        in_queue
    ):
        assert time.monotonic() < deadline
        time.sleep(0.2)
