"""The proof with the real Java client: its session recorded by the proxy in front of real 5.5.0
(``java_session``: every send mode, a delay message, a transaction, push and lite-pull consumers),
replayed against a fresh twin, a fresh real 5.5.0 and real 4.9.7 (the shared cluster, which never saw
the session's topic and groups). Replayed consumers get the replayed messages with the same bodies in
the same per-queue order everywhere; the twin's verdicts equal real 5.5.0's, request by request. The same
capture through ``rmqtwin spark replay`` on a standalone cluster of 2 workers gives local[2]'s verdicts."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.conformance.launcher import RealRocketMQ
from rmqtwin.conformance.runner import TWIN_BROKER_CONF
from rmqtwin.conformance.session import JavaSession
from rmqtwin.fakes.pytest_plugin import RocketMQFactory
from rmqtwin.spark.replay.engine import QueueResult, RequestResult, replay_connections
from rmqtwin.spark.replay.plan import CapturePlan, load_plan
from rmqtwin.spark.replay.target import prepare_context
from rmqtwin.spark.replay.translate import ReplayContext

pytestmark = [pytest.mark.real, pytest.mark.slow]

Verdicts = dict[tuple[int, int], tuple[str, str]]


def replay(plan: CapturePlan, namesrv: str) -> tuple[list[RequestResult], list[QueueResult], dict[str, int]]:
    # at 1x: the client pipelines GET_CONSUMER_LIST_BY_GROUP behind its HEART_BEAT, which real 5.5.0
    # serves on another executor; at 4x it answered "no consumer for this group" (docs/spark.md)
    ctx = ReplayContext(namesrv=namesrv, brokers={}, speed=1.0, answer_timeout_s=30)
    prepare_context(plan, ctx, {})
    return replay_connections(plan.connections, ctx)


def verdicts(results: list[RequestResult]) -> Verdicts:
    return {(r.conn_id, r.seq): (r.verdict, r.detail) for r in results}


@pytest.mark.timeout(1200)
def test_a_java_session_of_5_5_replays_alike_on_the_twin_real_5_5_and_real_4_9(
    java_session_factory: Callable[[str], JavaSession],
    real_rocketmq_factory: Any,
    rocketmq_factory: RocketMQFactory,
) -> None:
    session = java_session_factory("5")
    plan = load_plan(session.capture)
    sent = len(session.ledger.sent)
    outcomes: dict[str, tuple[list[RequestResult], list[QueueResult], dict[str, int]]] = {}
    twin = rocketmq_factory(broker_conf=dict(TWIN_BROKER_CONF), broker_name="broker-a")
    outcomes["twin"] = replay(plan, twin.namesrv_addr)
    twin.stop()
    with RealRocketMQ("5", broker_conf_overrides=real_rocketmq_factory.shared_conf()) as fresh:
        outcomes["real-5"] = replay(plan, fresh.namesrv_addr)
    outcomes["real-4.9"] = replay(plan, real_rocketmq_factory("4.9").namesrv_addr)

    lite = session.ledger.groups["lite_pull"]
    for name, (results, queues, _) in outcomes.items():
        # every replayed consumer pulled, per queue, the bodies it pulled when recorded, in that order;
        # except on 4.9.7, which does not serve the 5.x client's LITE_PULL_MESSAGE (361, new in 5.0)
        pulled = {(q.group, q.topic, q.queue_id): q for q in queues}
        assert pulled, name
        bad = [
            q for q in queues if not q.same_bodies_in_order and not (name == "real-4.9" and q.group == lite)
        ]
        assert not bad, f"{name}: {bad}"
        if name == "real-4.9":
            answers = {r.replayed_code for r in results if r.code_name == "LITE_PULL_MESSAGE"}
            assert answers == {ResponseCode.REQUEST_CODE_NOT_SUPPORTED}, answers
        for role in ("push", "lite_pull") if name != "real-4.9" else ("push",):
            group = session.ledger.groups[role]
            total = sum(q.recorded_messages for k, q in pulled.items() if k[0] == group)
            assert total >= sent, f"{name}: {role} pulled {total} of {sent} messages"
        lost = [(r.code_name, r.verdict, r.detail) for r in results if r.verdict in ("failed", "no-answer")]
        assert not lost, f"{name}: {lost}"

    twin, real5 = verdicts(outcomes["twin"][0]), verdicts(outcomes["real-5"][0])
    unequal = {
        k: (twin.get(k), real5.get(k)) for k in twin.keys() | real5.keys() if twin.get(k) != real5.get(k)
    }
    assert not unequal, f"the twin's verdicts differ from real 5.5.0's: {unequal}"
    differs = {k: v for k, v in real5.items() if v[0] == "differs"}
    assert not differs, f"real 5.5.0 answered its own session otherwise: {differs}"


@pytest.mark.spark
@pytest.mark.timeout(1500)
def test_the_java_session_replays_on_a_standalone_cluster_with_the_verdicts_of_local(
    java_session_factory: Callable[[str], JavaSession],
    rocketmq_factory: RocketMQFactory,
    standalone_cluster: Any,
    tmp_path: Path,
) -> None:
    """``rmqtwin spark replay`` of the session at 1x against a fresh twin, on local[2] and on a standalone
    master with 2 workers (each through the CLI, as a user runs it): the same verdict and detail per
    request, every consumer's bodies per queue as recorded on both."""
    import pyarrow.parquet as pq

    from tests.spark.test_replay_job import _replay_rows

    session = java_session_factory("5")
    cluster = standalone_cluster(2)
    outcomes: dict[str, dict[tuple[int, int, int], tuple[str, str, str]]] = {}
    for where in ("local", "standalone"):
        twin = rocketmq_factory(broker_conf=dict(TWIN_BROKER_CONF), broker_name="broker-a")
        out = tmp_path / where
        argv = [sys.executable, "-m", "rmqtwin", "spark", "replay", str(session.capture)]
        argv += ["--target", twin.namesrv_addr, "--speed", "1", "--out", str(out)]
        if where == "standalone":
            argv += ["--master", cluster.master_url]
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
        finally:
            twin.stop()
        assert proc.returncode in (0, 3), proc.stderr[-4000:]  # 3: some answers differ from the recorded
        outcomes[where], _ = _replay_rows(out)
        summary = json.loads((out / "summary.json").read_text())
        assert summary["queues"] and all(q["same_bodies_in_order"] for q in summary["queues"]), summary
        assert not summary["failed_connections"], summary["failed_connections"]
        rows = pq.read_table(out / "requests").to_pylist()
        lost = [(r["code_name"], r["verdict"]) for r in rows if r["verdict"] in ("failed", "no-answer")]
        assert not lost, f"{where}: {lost}"
    deadline = time.monotonic() + 30  # the master learns a moment after the driver exits
    while "rmqtwin replay" not in (apps := cluster.completed_apps()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "rmqtwin replay" in apps  # it ran on the cluster, not local[*]
    local, remote = outcomes["local"], outcomes["standalone"]
    unequal = {
        k: (local.get(k), remote.get(k))
        for k in local.keys() | remote.keys()
        if local.get(k) != remote.get(k)
    }
    assert not unequal, f"standalone's verdicts differ from local[2]'s: {unequal}"
