"""HA replication across implementations: a twin slave of a real master and a real slave of a twin
master, on 4.9.7 and 5.5.0. After sends through the real Java client the slave's commitlog is
byte-identical to the master's; with the master gone, a consumer reads every message from the slave.

Each test starts its own JVMs (a real master with its name server, or a real slave), so all are slow.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.conformance.launcher import RealRocketMQ, probe
from rmqtwin.fakes.dispatch import REJECT_REQUEST_REMARK
from rmqtwin.fakes.pytest_plugin import RunningTwin, start_subprocess
from tests.fakes.helpers import call
from tests.fakes.test_java_admin import _ran

pytestmark = [pytest.mark.java, pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(600)]

LINES = {"4.9": "4.9", "5": "5.5"}
"""Real line -> the twin's ``--rocketmq-version``."""
COMMITLOG_SIZE = 16 * 1024 * 1024  # the launcher's mappedFileSizeCommitLog
GET_ALL_TOPIC_CONFIG = RequestCode.GET_ALL_TOPIC_CONFIG
SLAVE_CONF = {"brokerName": "broker-a", "brokerId": 1, "brokerRole": "SLAVE", "slaveReadEnable": True}


def commitlog_files(store: str | Path) -> dict[str, bytes]:
    """The commitlog files with a record in them (Java pre-creates the next file, all zeros)."""
    folder = Path(store) / "commitlog"
    if not folder.is_dir():
        return {}
    files = {name: (folder / name).read_bytes() for name in sorted(os.listdir(folder))}
    return {name: data for name, data in files.items() if data.count(0) != len(data)}


def wait_identical(
    master_store: str | Path, slave_store: str | Path, timeout: float = 60.0
) -> dict[str, bytes]:
    """The master's commitlog once the slave's holds the same bytes (replication is asynchronous)."""
    deadline = time.monotonic() + timeout
    while True:
        master = commitlog_files(master_store)
        if master and commitlog_files(slave_store) == master:
            return master
        if time.monotonic() > deadline:
            slave = commitlog_files(slave_store)
            differ = [n for n in master if slave.get(n) != master[n]]
            raise AssertionError(
                f"slave commitlog differs from the master's in {differ} (slave has {list(slave)})"
            )
        time.sleep(0.5)


def wait_topic_synced(slave_addr: str, topic: str, timeout: float = 100.0) -> None:
    """The slave copies its master's topics (SlaveSynchronize: every 10 s on 4.9.7, about once a minute
    on 5.5.0); a consumer of the slave needs the topic there, so the master may only go once it is."""
    deadline = time.monotonic() + timeout
    while topic.encode() not in probe(slave_addr, GET_ALL_TOPIC_CONFIG)[2]:
        assert time.monotonic() < deadline, f"{slave_addr} never synced topic {topic}"
        time.sleep(0.5)


def assert_refuses_writes(slave_addr: str, topic: str, line: str) -> None:
    """A send to a slave: 4.9.7's store refuses it (``checkStoreStatus``); 5.5.0 turns it away before
    (``SendMessageProcessor.rejectRequest``)."""
    header = {"a": "P", "b": topic, "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "0", "h": "0"}
    answer = call(slave_addr, RequestCode.SEND_MESSAGE_V2, header, b"to the slave")
    remark = answer.remark or ""
    if line == "5":
        assert (answer.code, remark) == (ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
        return
    assert answer.code == ResponseCode.SERVICE_NOT_AVAILABLE, (answer.code, remark)
    assert remark.startswith(
        "service not available now. It may be caused by one of the following reasons: "
        "the broker's disk is full ["
    ), remark
    assert remark.endswith("], messages are put to the slave, message store has been shut down, etc."), remark


def assert_cluster_lists(client: JavaClient, namesrv: str, master: str, slave: str) -> None:
    """mqadmin clusterList shows broker-a's master (0) and slave (1); getBrokerConfig the slave's role."""
    shown = _ran(client.mqadmin(namesrv, "clusterList"))
    rows = set(re.findall(r"^rmqtwin\s+(broker-a)\s+(\d)\s+(\S+)", shown, re.M))
    assert rows == {("broker-a", "0", master), ("broker-a", "1", slave)}, shown
    config = _ran(client.mqadmin(namesrv, "getBrokerConfig", "-b", slave))
    assert re.search(r"^brokerRole\s*=\s*SLAVE$", config, re.M), config
    assert re.search(r"^brokerId\s*=\s*1$", config, re.M), config


def used(files: dict[str, bytes]) -> int:
    """Bytes of records in the commitlog (up to the first zero header)."""
    data = b"".join(files.values())
    return len(data.rstrip(b"\0"))


@pytest.fixture
def twin_process(tmp_path: Path) -> Iterator[Callable[..., RunningTwin]]:
    started: list[RunningTwin] = []

    def start(name: str, **kwargs: object) -> RunningTwin:
        twin = start_subprocess(str(tmp_path / name), **kwargs)  # type: ignore[arg-type]
        started.append(twin)
        return twin

    yield start
    for twin in reversed(started):
        if twin.process.poll() is None:
            twin.process.terminate()
            twin.process.wait(30)


@dataclass
class Pair:
    """A master and its slave registered with one name server, one side a twin, the other real."""

    line: str
    namesrv: str
    master_addr: str
    master_store: str | Path
    slave_addr: str
    slave_store: str | Path
    kill_master: Callable[[], None]


def check_replication(pair: Pair, topic: str, slave_output: Callable[[], str] = str) -> None:
    """20 sends of the real client: the slave's commitlog becomes the master's byte for byte, it copies
    the topic, refuses writes as its line does, mqadmin lists both; with the master killed a consumer
    reads all 20 from the slave."""
    client = JavaClient(pair.line)
    sent = client.producer(pair.namesrv, topic, count=20).check().sent
    master_files = wait_identical(pair.master_store, pair.slave_store)
    assert used(master_files) > 20 * 100
    wait_topic_synced(pair.slave_addr, topic)
    assert_refuses_writes(pair.slave_addr, topic, pair.line)
    assert_cluster_lists(client, pair.namesrv, pair.master_addr, pair.slave_addr)
    pair.kill_master()
    got = client.lite_pull(pair.namesrv, topic, f"{topic}G", expect=20, timeoutMs=60_000).check().received
    assert sorted(m["msgId"] for m in got) == sorted(m["msgId"] for m in sent), slave_output()


def killer(process: subprocess.Popen[Any]) -> Callable[[], None]:
    def kill() -> None:
        process.kill()
        process.wait()

    return kill


@pytest.mark.parametrize("line", list(LINES))
def test_twin_slave_replicates_a_real_master(
    line: str, twin_process: Callable[..., RunningTwin], unique_name: Callable[[str], str]
) -> None:
    with RealRocketMQ(line, broker_conf_overrides={"slaveReadEnable": True}) as real:
        slave = twin_process(
            "slave",
            broker_conf={
                "mappedFileSizeCommitLog": COMMITLOG_SIZE,
                "brokerClusterName": "rmqtwin",
                **SLAVE_CONF,
            },
            serve_args=[
                "--role",
                "broker",
                "--namesrv-addr",
                real.namesrv_addr,
                "--rocketmq-version",
                LINES[line],
                "--log-level",
                "info",
            ],
        )
        pair = Pair(
            line,
            real.namesrv_addr,
            real.broker_addr,
            real.store_dir,
            slave.broker_addr,
            slave.store_dir,
            killer(real.brokers[0].process),
        )
        check_replication(pair, unique_name("HaReal"), lambda: "".join(slave.output[-60:]))


@pytest.mark.parametrize("line", list(LINES))
def test_real_slave_replicates_a_twin_master(
    line: str, twin_process: Callable[..., RunningTwin], unique_name: Callable[[str], str]
) -> None:
    version = ["--rocketmq-version", LINES[line]]
    namesrv = twin_process("namesrv", serve_args=["--role", "namesrv", *version])
    master = twin_process(
        "master",
        broker_conf={
            "mappedFileSizeCommitLog": COMMITLOG_SIZE,
            "brokerClusterName": "rmqtwin",
            "slaveReadEnable": True,
        },
        serve_args=["--role", "broker", "--namesrv-addr", namesrv.namesrv_addr, *version],
    )
    assert master.process is not None
    with RealRocketMQ(line, namesrv_addr=namesrv.namesrv_addr, broker_conf_overrides=SLAVE_CONF) as real:
        pair = Pair(
            line,
            namesrv.namesrv_addr,
            master.broker_addr,
            master.store_dir,
            real.broker_addr,
            real.store_dir,
            killer(master.process),
        )
        check_replication(pair, unique_name("HaTwin"))
