"""RocketMQ's 2m-2s cluster side by side: the twin's and a real one (4.9.7, 5.5.0), driven by the real
Java client and mqadmin, every assertion a literal both must meet.

One cluster per target for the module (broker-a and broker-b, each a master with its slave, cluster
``rmqtwin``; the twin's as five processes so one can be killed): clusterList and brokerStatus of a
master and a slave; the pull's ``suggestWhichBrokerId`` (``slaveReadEnable``,
``accessMessageInMemoryMaxRatio``) and a consumer then reading from the slave; the proxy's fault rules
on broker-a's sends (SYSTEM_BUSY, latency with ``sendLatencyFaultEnable``) making the producer use
broker-b; and last, broker-a's master killed under a running producer. What each run saw is written to
``build/clusters/<target>.json`` (docs/fakes.md tables the figures).
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.conformance.java_client import DriverResult, JavaClient
from rmqtwin.conformance.launcher import RealRocketMQ
from rmqtwin.fakes.pytest_plugin import RunningTwin, TwinFaultControl, start_subprocess
from rmqtwin.proxy.process import ProxyProcess, start_proxy
from tests.fakes.helpers import call, pull_header, wait_until
from tests.fakes.test_java_admin import _ran

pytestmark = [pytest.mark.java, pytest.mark.real, pytest.mark.slow, pytest.mark.timeout(900)]

TARGETS = ["twin-4.9", "real-4.9", "twin-5", "real-5"]
TWIN_VERSION = {"4.9": "4.9", "5": "5.5"}
FIGURES = Path(__file__).resolve().parents[2] / "build" / "clusters"
SENDS = ["SEND_MESSAGE", "SEND_MESSAGE_V2"]
SLAVE = {"brokerId": 1, "brokerRole": "SLAVE"}
COMMON = {"slaveReadEnable": True}


@dataclass
class Cluster:
    """A running 2m-2s cluster: where its name server and each broker listen, and how to kill one."""

    target: str
    line: str
    namesrv: str
    masters: dict[str, str]
    slaves: dict[str, str]
    kill: Callable[[str], None]
    figures: dict[str, Any] = field(default_factory=dict)

    @property
    def client(self) -> JavaClient:
        return JavaClient(self.line)

    def create_topic(self, topic: str, queues: int = 4, *, on_slaves: bool = False) -> None:
        """UPDATE_AND_CREATE_TOPIC on both masters; ``on_slaves``: then wait until the slaves copied it
        (SlaveSynchronize: every 10 s on 4.9.7, about once a minute on 5.5.0)."""
        for addr in self.masters.values():
            argv = ["updateTopic", "-t", topic, "-b", addr, "-r", str(queues), "-w", str(queues)]
            _ran(self.client.mqadmin(self.namesrv, *argv))
        for addr in self.slaves.values() if on_slaves else ():
            wait_until(
                lambda a=addr: topic.encode() in (call(a, RequestCode.GET_ALL_TOPIC_CONFIG).body or b""),
                f"{addr} to copy topic {topic}",
                timeout=100,
            )

    def record(self, name: str, value: Any) -> None:
        self.figures[name] = value
        FIGURES.mkdir(parents=True, exist_ok=True)
        (FIGURES / f"{self.target}.json").write_text(json.dumps(self.figures, indent=2, sort_keys=True))


def _twin_cluster(target: str, line: str, work: Path) -> Iterator[Cluster]:
    version = ["--rocketmq-version", TWIN_VERSION[line]]
    started: list[RunningTwin] = []
    namesrv = start_subprocess(str(work / "ns"), serve_args=["--role", "namesrv", *version])
    started.append(namesrv)
    brokers: dict[tuple[str, int], RunningTwin] = {}
    try:
        for name in ("broker-a", "broker-b"):
            for conf in ({"brokerId": 0, "brokerRole": "ASYNC_MASTER"}, SLAVE):
                twin = start_subprocess(
                    str(work / f"{name}-{conf['brokerId']}"),
                    broker_name=name,
                    broker_conf={"brokerClusterName": "rmqtwin", **COMMON, **conf},
                    serve_args=["--role", "broker", "--namesrv-addr", namesrv.namesrv_addr, *version],
                )
                started.append(twin)
                brokers[name, int(conf["brokerId"])] = twin

        def kill(name: str) -> None:
            process = brokers[name, 0].process
            assert process is not None
            process.send_signal(signal.SIGKILL)
            process.wait()

        yield Cluster(
            target,
            line,
            namesrv.namesrv_addr,
            {name: brokers[name, 0].broker_addr for name in ("broker-a", "broker-b")},
            {name: brokers[name, 1].broker_addr for name in ("broker-a", "broker-b")},
            kill,
        )
    finally:
        for twin in reversed(started):
            twin.stop()


def _real_cluster(target: str, line: str) -> Iterator[Cluster]:
    with (
        RealRocketMQ(line, brokers=2, broker_conf_overrides=COMMON) as masters,
        RealRocketMQ(
            line, brokers=2, namesrv_addr=masters.namesrv_addr, broker_conf_overrides={**COMMON, **SLAVE}
        ) as slaves,
    ):

        def kill(name: str) -> None:
            process = masters.brokers[masters.broker_names.index(name)].process
            process.send_signal(signal.SIGKILL)
            process.wait()

        yield Cluster(
            target,
            line,
            masters.namesrv_addr,
            dict(zip(masters.broker_names, masters.broker_addrs, strict=True)),
            dict(zip(slaves.broker_names, slaves.broker_addrs, strict=True)),
            kill,
        )


@pytest.fixture(scope="module", params=TARGETS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    target: str = request.param
    kind, line = target.split("-", 1)
    if kind == "twin":
        work = Path(tempfile.mkdtemp(prefix="rmqtwin-2m2s-"))
        try:
            yield from _twin_cluster(target, line, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    else:
        yield from _real_cluster(target, line)


# ---------------------------------------------------------------------------------------------------
# mqadmin clusterList and brokerStatus


def runtime_info(addr: str) -> dict[str, str]:
    """GET_BROKER_RUNTIME_INFO's table (what brokerStatus prints), over one raw request."""
    answer = call(addr, RequestCode.GET_BROKER_RUNTIME_INFO)
    assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
    return dict(json.loads(answer.body or b"{}")["table"])


def broker_status(client: JavaClient, namesrv: str, addr: str) -> dict[str, str]:
    shown = _ran(client.mqadmin(namesrv, "brokerStatus", "-b", addr))
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in shown.splitlines()) if v}


def keys(status: dict[str, str]) -> list[str]:
    """The keys brokerStatus prints, the store path taken out of ``commitLogDiskRatio_<path>``."""
    return sorted(re.sub(r"^commitLogDiskRatio_.*", "commitLogDiskRatio_<path>", k) for k in status)


def test_cluster_list_shows_masters_and_slaves(cluster: Cluster) -> None:
    shown = _ran(cluster.client.mqadmin(cluster.namesrv, "clusterList"))
    header = next(line.split() for line in shown.splitlines() if line.startswith("#"))
    rows = {(m[1], m[2]): m[3] for m in re.finditer(r"^rmqtwin\s+(broker-[ab])\s+(\d)\s+(\S+)", shown, re.M)}
    cluster.record("clusterList", shown.splitlines())
    expected = {(n, "0"): a for n, a in cluster.masters.items()} | {
        (n, "1"): a for n, a in cluster.slaves.items()
    }
    assert rows == expected, shown
    assert header[:4] == ["#Cluster", "Name", "#Broker", "Name"], header
    if cluster.line == "5":
        # 5.x prints whether each broker's special services run: masters yes, slaves no.
        activated = dict(re.findall(r"^rmqtwin\s+(broker-[ab]\s+\d)\s+.*\s(true|false)\s*$", shown, re.M))
        assert {" ".join(k.split()): v for k, v in activated.items()} == {
            "broker-a 0": "true",
            "broker-b 0": "true",
            "broker-a 1": "false",
            "broker-b 1": "false",
        }, shown


def test_broker_status_of_a_master_and_its_slave(cluster: Cluster, unique_name: Callable[[str], str]) -> None:
    topic = unique_name("Status")
    cluster.create_topic(topic)
    cluster.client.producer(cluster.namesrv, topic, count=8).check()
    master_addr, slave_addr = cluster.masters["broker-a"], cluster.slaves["broker-a"]
    wait_until(
        lambda: (
            runtime_info(slave_addr)["commitLogMaxOffset"] == runtime_info(master_addr)["commitLogMaxOffset"]
        ),
        "the slave to replicate what the master holds",
        timeout=60,
    )
    master = broker_status(cluster.client, cluster.namesrv, master_addr)
    slave = broker_status(cluster.client, cluster.namesrv, slave_addr)
    cluster.record("brokerStatus", {"master": master, "slave": slave})
    assert int(master["msgPutTotalTodayNow"]) > 0
    # The slave's reput counts what it replicated in its store's stats; 4.9.7 reports those as the
    # day's puts, 5.5.0 the broker's own sends (none on a slave).
    assert slave["putMessageTimesTotal"] == master["putMessageTimesTotal"]
    assert slave["msgPutTotalTodayNow"] == (master["msgPutTotalTodayNow"] if cluster.line == "4.9" else "0")
    assert int(slave["commitLogMaxOffset"]) > 0
    if cluster.line == "5":
        assert (master["brokerActive"], slave["brokerActive"]) == ("true", "false")
    assert keys(master) == keys(slave)


# ---------------------------------------------------------------------------------------------------
# Reads from the slave


def suggested(addr: str, group: str, topic: str, queue: int, offset: int) -> tuple[int, str | None]:
    # sysFlag 4 (FLAG_SUBSCRIPTION): the subscription travels in the request, no consumer registered.
    header = pull_header(group, topic, offset, suspend=0, sys_flag=4, queue_id=queue)
    header |= {"maxMsgNums": 1, "subscription": "*", "expressionType": "TAG"}
    answer = call(addr, RequestCode.PULL_MESSAGE, {k: str(v) for k, v in header.items()})
    return answer.code, (answer.ext_fields or {}).get("suggestWhichBrokerId", answer.remark)


def set_config(cluster: Cluster, addr: str, key: str, value: str) -> None:
    _ran(cluster.client.mqadmin(cluster.namesrv, "updateBrokerConfig", "-b", addr, "-k", key, "-v", value))


def test_a_consumer_far_behind_is_told_to_read_from_the_slave(
    cluster: Cluster, unique_name: Callable[[str], str]
) -> None:
    """The master's pull answer suggests ``whichBrokerWhenConsumeSlowly`` (1) once the consumer reads
    further behind than ``accessMessageInMemoryMaxRatio`` % of memory (0 here: anything behind), else
    the group's broker (0); the Java consumer then pulls from broker-a's slave."""
    topic, group = unique_name("SlaveRead"), unique_name("SlaveReadG")
    master, slave = cluster.masters["broker-a"], cluster.slaves["broker-a"]
    cluster.create_topic(topic, queues=1, on_slaves=True)  # the consumer reads it from the slave
    sent = cluster.client.producer(cluster.namesrv, topic, count=10).check().sent
    on_a = sum(1 for m in sent if m["brokerName"] == "broker-a")
    seen = {"ratio 40": suggested(master, group, topic, 0, 0)}
    set_config(cluster, master, "accessMessageInMemoryMaxRatio", "0")
    try:
        seen["ratio 0"] = suggested(master, group, topic, 0, 0)
        set_config(cluster, master, "slaveReadEnable", "false")
        seen["ratio 0, slaveReadEnable false"] = suggested(master, group, topic, 0, 0)
        set_config(cluster, master, "slaveReadEnable", "true")
        before = int(runtime_info(slave)["msgGetTotalTodayNow"])
        got = (
            cluster.client.lite_pull(
                cluster.namesrv, topic, group, expect=10, pullBatchSize=1, timeoutMs=60_000
            )
            .check()
            .received
        )
        after = int(runtime_info(slave)["msgGetTotalTodayNow"])
    finally:
        set_config(cluster, master, "accessMessageInMemoryMaxRatio", "40")
    cluster.record(
        "suggestWhichBrokerId",
        {**{k: list(v) for k, v in seen.items()}, "slaveGets": after - before, "sentToA": on_a},
    )
    assert seen == {
        "ratio 40": (ResponseCode.SUCCESS, "0"),
        "ratio 0": (ResponseCode.SUCCESS, "1"),
        "ratio 0, slaveReadEnable false": (ResponseCode.SUCCESS, "0"),
    }
    assert sorted(m["msgId"] for m in got) == sorted(m["msgId"] for m in sent)
    assert on_a >= 2 and after - before >= 1, (on_a, after - before)


# ---------------------------------------------------------------------------------------------------
# Faults on broker-a through the proxy (issue 16)


@pytest.fixture
def faulty(cluster: Cluster, tmp_path: Path) -> Iterator[tuple[ProxyProcess, TwinFaultControl]]:
    proxy = start_proxy(cluster.namesrv, tmp_path / "proxy", record=False, faults=True)
    try:
        yield proxy, TwinFaultControl(url=proxy.faults_url)
    finally:
        assert proxy.stop() == 0, proxy.log()
        assert "Unhandled Error" not in proxy.log(), proxy.log()


def brokers_of(result: DriverResult) -> list[str]:
    return [e["brokerName"] for e in sorted(result.sent, key=lambda e: e["index"])]


def test_system_busy_on_broker_a_moves_sends_to_broker_b(
    cluster: Cluster, faulty: tuple[ProxyProcess, TwinFaultControl], unique_name: Callable[[str], str]
) -> None:
    """5.x retries SYSTEM_BUSY on another broker; 4.9 gives it to the caller (not in its retry codes)."""
    proxy, faults = faulty
    topic = unique_name("BusyA")
    cluster.create_topic(topic)
    rule = faults.add(
        effect="answer",
        codes=SENDS,
        topic=topic,
        broker=cluster.masters["broker-a"],
        answer_code="SYSTEM_BUSY",
    )
    result = cluster.client.producer(proxy.namesrv, topic, count=8, retryTimes=2, attempts=True).check()
    hits = int(faults.get(rule["name"])["hits"])
    errors = result.of("error")
    cluster.record(
        "systemBusyOnA",
        {
            "hits": hits,
            "sentTo": brokers_of(result),
            "errors": len(errors),
            "attemptOutcomes": result.summary.get("attemptOutcomes"),
        },
    )
    # 4.9: no retries, 8 sends go once round the 8 queues (4 on broker-a); 5.x: retries move the index.
    assert (hits == 4) if cluster.line == "4.9" else (hits >= 1)
    assert result.summary["attemptOutcomes"] == ["broker-a code 2", "broker-b SEND_OK"]
    assert set(brokers_of(result)) == {"broker-b"}
    if cluster.line == "5":
        assert errors == [] and len(result.sent) == 8
    else:
        assert len(errors) == hits and len(result.sent) == 8 - hits
        assert {(e["responseCode"], e["remark"]) for e in errors} == {(2, f"[fault {rule['name']}]")}


@pytest.mark.parametrize("latency_fault", [True, False], ids=["sendLatencyFaultEnable", "default"])
def test_a_slow_broker_a_is_avoided_with_send_latency_fault_enable(
    cluster: Cluster,
    faulty: tuple[ProxyProcess, TwinFaultControl],
    unique_name: Callable[[str], str],
    latency_fault: bool,
) -> None:
    """Each send to broker-a waits 1.1 s: with ``sendLatencyFaultEnable`` the producer leaves broker-a
    alone for 60 s after the first (latencyMax 1000 ms → notAvailableDuration 60 s); without, it keeps
    going round the 8 queues, 4 on each broker."""
    proxy, faults = faulty
    topic = unique_name("SlowA")
    cluster.create_topic(topic)
    faults.add(effect="latency", ms=1100, codes=SENDS, topic=topic, broker=cluster.masters["broker-a"])
    result = cluster.client.producer(
        proxy.namesrv, topic, count=8, sendLatencyFaultEnable=latency_fault, attempts=True
    ).check()
    on_a = brokers_of(result).count("broker-a")
    cluster.record(f"slowA[{latency_fault}]", {"sentTo": brokers_of(result)})
    assert result.of("error") == [] and len(result.sent) == 8
    if latency_fault:
        assert on_a <= 1, brokers_of(result)
    else:
        assert on_a == 4, brokers_of(result)


# ---------------------------------------------------------------------------------------------------
# A master dies (last: it changes the cluster)


def master_in_route(namesrv: str, topic: str, addr: str) -> bool:
    answer = call(namesrv, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic})
    return answer.code == ResponseCode.SUCCESS and f'0:"{addr}"'.encode() in (answer.body or b"")


def test_the_producer_keeps_sending_when_broker_a_master_dies(
    cluster: Cluster, unique_name: Callable[[str], str]
) -> None:
    """200 sync sends, 50 ms apart, route refreshed every 5 s (30 s by default); broker-a's master is
    killed after the 40th. Every send succeeds: an attempt on the dead master fails at once and the
    send is retried on broker-b; the name server drops the master from the route as its connection
    closes; once the client refreshed its route it tries broker-a no more."""
    topic = unique_name("Failover")
    cluster.create_topic(topic)
    dead = cluster.masters["broker-a"]
    producer = cluster.client.start(
        "producer",
        {
            "namesrv": cluster.namesrv,
            "topic": topic,
            "count": 200,
            "intervalMs": 50,
            "retryTimes": 2,
            "sendTimeoutMs": 3000,
            "pollNameServerIntervalMs": 5000,
            "attempts": True,
            "timeoutMs": 120_000,
        },
    )
    producer.wait_for_count("sent", 40, timeout=90)
    killed_ms = int(time.time() * 1000)
    cluster.kill("broker-a")
    wait_until(
        lambda: not master_in_route(cluster.namesrv, topic, dead),
        "the route to drop broker-a's master",
        timeout=150,
    )
    route_dropped_ms = int(time.time() * 1000)
    result = producer.result(timeout=180)
    attempts = result.of("attempt")
    after = [a for a in attempts if a["ts"] >= killed_ms]
    failed = [a for a in after if a["outcome"] != "SEND_OK"]
    last_on_a = max((a["ts"] for a in after if a["brokerName"] == "broker-a"), default=killed_ms)
    figures = {
        "sent": len(result.sent),
        "errors": [e.get("exception") for e in result.of("error")],
        "failedAttempts": sorted({f"{a['brokerName']} {a['outcome']}" for a in failed}),
        "failedAttemptCount": len(failed),
        "failedAttemptMaxMs": max((a.get("latencyMs", 0) for a in failed), default=0),
        "routeDroppedAfterMs": route_dropped_ms - killed_ms,
        "lastAttemptOnAAfterMs": last_on_a - killed_ms,
        "sendsAfterThat": sum(1 for a in attempts if a["ts"] > last_on_a),
    }
    cluster.record("failover", figures)
    assert result.of("error") == [] and len(result.sent) == 200, figures
    assert failed and all(a["brokerName"] == "broker-a" for a in failed), figures
    assert {a["brokerName"] for a in attempts if a["ts"] > last_on_a} == {"broker-b"}, figures
    assert figures["sendsAfterThat"] >= 20, figures  # it stopped trying broker-a well before the end
