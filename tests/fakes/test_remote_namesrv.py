"""``rmqtwin serve --role broker --namesrv-addr <real namesrv>``: the twin broker registers with a real
Apache RocketMQ name server (4.9.7 and 5.5.0), and the real Java client and mqadmin reach it through it.

The real name server is the session's shared one (``real_rocketmq``), next to its real ``broker-a``: the
twin joins under its own broker and cluster name, without ``TBW102`` (``autoCreateTopicEnable=false``), so
no other test's topic is ever routed to it, and it leaves the name server before the test ends.
"""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import pytest

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.fakes.pytest_plugin import READY_PATTERN
from tests.fakes.helpers import call, update_and_create_topic, wait_until

if TYPE_CHECKING:
    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ

pytestmark = [pytest.mark.java, pytest.mark.real]

TWIN_BROKER = "rmqtwin-remote"
TWIN_CLUSTER = "rmqtwinRemote"


@dataclass
class RemoteBroker:
    """A twin broker process registered with a real name server."""

    namesrv_addr: str
    broker_addr: str
    process: subprocess.Popen[str]
    output: list[str]


def cluster_info(namesrv_addr: str) -> dict[str, object]:
    answer = call(namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    info = fastjson.loads(answer.body or b"{}")
    assert isinstance(info, dict)
    return info


def twin_addrs(namesrv_addr: str) -> dict[int, str]:
    """The twin broker's addresses as the real name server lists them (empty: not registered)."""
    table = cluster_info(namesrv_addr).get("brokerAddrTable") or {}
    assert isinstance(table, dict)
    entry = table.get(TWIN_BROKER) or {}
    return {int(k): str(v) for k, v in (entry.get("brokerAddrs") or {}).items()}


@pytest.fixture
def remote_broker(real_rocketmq: RealRocketMQ, tmp_path: Path) -> Iterator[RemoteBroker]:
    conf = tmp_path / "broker.conf"
    conf.write_text(
        f"brokerName={TWIN_BROKER}\nbrokerClusterName={TWIN_CLUSTER}\n"
        "autoCreateTopicEnable=false\nautoCreateSubscriptionGroup=true\n"
    )
    namesrv = real_rocketmq.namesrv_addr
    argv = [
        *(sys.executable, "-m", "rmqtwin", "serve", "--role", "broker", "--host", "127.0.0.1"),
        *("--broker-port", "0", "--store", str(tmp_path / "store"), "--config", str(conf)),
        *("--namesrv-addr", namesrv),
        # The twin answers as the real cluster's line, so that line's mqadmin reads what it expects
        # (4.9.8's clusterList needs 4.9's getTransferedTps, which 5.5.0 renamed).
        *("--rocketmq-version", "4.9" if real_rocketmq.version.line == "4.9" else "5.5"),
    ]
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    output: list[str] = []
    ready = None
    timer = threading.Timer(60, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            output.append(line)
            ready = READY_PATTERN.search(line)
            if ready:
                break
    finally:
        timer.cancel()
    if ready is None:
        process.wait()
        pytest.fail("rmqtwin serve --role broker did not start:\n" + "".join(output[-40:]))
    threading.Thread(target=lambda: output.extend(process.stdout or ()), daemon=True).start()
    broker_addr = dict(p.split("=", 1) for p in ready.group(1).split() if "=" in p)["broker"]
    broker = RemoteBroker(namesrv, broker_addr, process, output)
    try:
        wait_until(lambda: twin_addrs(namesrv) == {0: broker_addr}, "the twin to register")
        yield broker
    finally:
        if process.poll() is None:
            process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    # A graceful stop unregisters (UNREGISTER_BROKER), so the shared name server is as it was.
    assert process.returncode == 0, "".join(output[-40:])
    wait_until(lambda: not twin_addrs(namesrv), "the twin to leave the real name server")


def test_java_client_and_mqadmin_reach_the_twin_broker_through_a_real_namesrv(
    real_rocketmq: RealRocketMQ,
    remote_broker: RemoteBroker,
    java_client: JavaClient,
    unique_name: Callable[[str], str],
) -> None:
    namesrv = remote_broker.namesrv_addr
    info = cluster_info(namesrv)
    assert info["clusterAddrTable"] == {"rmqtwin": ["broker-a"], TWIN_CLUSTER: [TWIN_BROKER]}

    topic, group = unique_name("Remote"), unique_name("g")
    created = update_and_create_topic(remote_broker.broker_addr, topic, queues=2)
    assert created.code == ResponseCode.SUCCESS, created.remark
    # The twin re-registers at once with the new topic; the real name server routes it to the twin only.
    route = call(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    assert route.code == ResponseCode.SUCCESS, route.remark
    data = orjson.loads(route.body or b"{}")
    assert [b["brokerName"] for b in data["brokerDatas"]] == [TWIN_BROKER]
    assert data["brokerDatas"][0]["brokerAddrs"] == {"0": remote_broker.broker_addr}
    assert [(q["brokerName"], q["writeQueueNums"]) for q in data["queueDatas"]] == [(TWIN_BROKER, 2)]

    messages = [{"body": f"remote-{i}", "tags": "T", "keys": f"K{i}"} for i in range(6)]
    sent = java_client.producer(namesrv, topic, mode="sync", messages=messages).check()
    assert [(e["status"], e["brokerName"]) for e in sent.sent] == [("SEND_OK", TWIN_BROKER)] * 6
    got = java_client.push_consumer(namesrv, topic, group=group, expect=6, timeoutMs=60_000).check()
    assert sorted(e["body"] for e in got.received) == [f"remote-{i}" for i in range(6)]
    assert {e["msgId"] for e in got.received} == {e["msgId"] for e in sent.sent}
    port = remote_broker.broker_addr.rpartition(":")[2]
    assert {e["storeHost"].rpartition(":")[2] for e in got.received} == {port}

    clusters = java_client.mqadmin(namesrv, "clusterList").check().stdout
    rows = {line.split()[1]: line.split() for line in clusters.splitlines() if line and line[0] != "#"}
    # Columns: cluster, broker, broker id, address, version, ...: both brokers answered the tool.
    assert rows[TWIN_BROKER][:4] == [TWIN_CLUSTER, TWIN_BROKER, "0", remote_broker.broker_addr]
    assert rows["broker-a"][:4] == ["rmqtwin", "broker-a", "0", real_rocketmq.broker_addr]
    assert re.fullmatch(r"V\d+_\d+_\d+", rows[TWIN_BROKER][4]), clusters
