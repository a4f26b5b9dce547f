"""``rmqtwin serve --cluster``: RocketMQ's example clusters (2m-2s-sync, 2m-2s-async, 2m-noslave) in one
process as mqadmin clusterList and GET_BROKER_CONFIG see them, and a producer that keeps sending when
one of two masters (separate processes, as a real cluster) dies."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rmqtwin.codec.codes import RequestCode
from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.fakes.pytest_plugin import RunningTwin, start_subprocess
from tests.fakes.helpers import call
from tests.fakes.test_java_admin import _ran

pytestmark = [pytest.mark.java, pytest.mark.timeout(300)]


@pytest.fixture
def cluster(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[RunningTwin]:
    twin = start_subprocess(str(tmp_path), serve_args=["--cluster", request.param])
    try:
        yield twin
    finally:
        twin.stop()


def broker_config(addr: str) -> dict[str, str]:
    text = call(addr, RequestCode.GET_BROKER_CONFIG).body or b""
    return dict(line.split("=", 1) for line in text.decode().splitlines() if "=" in line)


@pytest.mark.parametrize(
    ("cluster", "roles"),
    [
        (
            "2m-2s-sync",
            {
                "broker-a@0": "SYNC_MASTER",
                "broker-b@0": "SYNC_MASTER",
                "broker-a@1": "SLAVE",
                "broker-b@1": "SLAVE",
            },
        ),
        (
            "2m-2s-async",
            {
                "broker-a@0": "ASYNC_MASTER",
                "broker-b@0": "ASYNC_MASTER",
                "broker-a@1": "SLAVE",
                "broker-b@1": "SLAVE",
            },
        ),
        ("2m-noslave", {"broker-a@0": "ASYNC_MASTER", "broker-b@0": "ASYNC_MASTER"}),
    ],
    indirect=["cluster"],
)
def test_cluster_list_shows_the_layout(cluster: RunningTwin, roles: dict[str, str]) -> None:
    members = cluster.brokers
    assert set(members) == set(roles)
    for member, addr in members.items():
        config = broker_config(addr)
        name, broker_id = member.split("@")
        assert (config["brokerName"], config["brokerId"], config["brokerRole"]) == (
            name,
            broker_id,
            roles[member],
        )
    shown = _ran(JavaClient("5").mqadmin(cluster.namesrv_addr, "clusterList"))
    rows = re.findall(r"^DefaultCluster\s+(broker-[ab])\s+(\d)\s+(\S+)", shown, re.M)
    assert {f"{name}@{bid}": addr for name, bid, addr in rows} == members, shown


@pytest.mark.slow
def test_producer_keeps_sending_when_one_master_dies(
    tmp_path: Path, unique_name: Callable[[str], str]
) -> None:
    topic = unique_name("TwoMasters")
    namesrv = start_subprocess(str(tmp_path / "ns"), serve_args=["--role", "namesrv"])
    masters: list[RunningTwin] = []
    try:
        for name in ("broker-a", "broker-b"):
            masters.append(
                start_subprocess(
                    str(tmp_path / name),
                    broker_name=name,
                    serve_args=["--role", "broker", "--namesrv-addr", namesrv.namesrv_addr],
                )
            )
        client = JavaClient("5")
        for master in masters:
            _ran(client.mqadmin(namesrv.namesrv_addr, "updateTopic", "-t", topic, "-b", master.broker_addr))
        before = client.producer(namesrv.namesrv_addr, topic, count=10).check().sent
        assert {m["brokerName"] for m in before} == {"broker-a", "broker-b"}
        masters[0].process.kill()
        masters[0].process.wait()
        after = client.producer(namesrv.namesrv_addr, topic, count=10).check().sent
        assert len(after) == 10 and {m["brokerName"] for m in after} == {"broker-b"}
    finally:
        for twin in [*masters, namesrv]:
            if twin.process.poll() is None:
                twin.process.terminate()
                twin.process.wait(30)
