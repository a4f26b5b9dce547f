"""The replay engine without Spark: a capture recorded through the proxy in front of one twin, replayed
against another twin whose queue already holds other messages."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path

import pytest

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.fakes.pytest_plugin import RocketMQFactory
from rmqtwin.spark.replay.compare import pulled_messages
from rmqtwin.spark.replay.engine import RequestResult, replay_connections
from rmqtwin.spark.replay.plan import load_plan
from rmqtwin.spark.replay.target import TargetError, prepare_context
from rmqtwin.spark.replay.translate import ReplayContext
from tests.spark import traffic
from tests.spark.traffic import recorded

__all__ = ["recorded"]  # the fixture


def test_replay_against_a_twin_with_other_state_gives_the_recorded_answers(
    recorded: Path, rocketmq_factory: RocketMQFactory
) -> None:
    target = rocketmq_factory()
    traffic.create_topic(target, prefill=3)
    plan = load_plan(recorded)
    assert sorted(c.kind for c in plan.connections) == ["broker", "broker", "namesrv"]
    assert {c.broker_name for c in plan.connections if c.kind == "broker"} == {"broker-a"}
    ctx = ReplayContext(namesrv=target.namesrv_addr, brokers={}, speed=1.0)
    prepare_context(plan, ctx, {})
    assert ctx.target_bases == {("broker-a", traffic.TOPIC, 0): 3}
    results, queues, _ = replay_connections(plan.connections, ctx)
    diverging = [(r.code_name, r.verdict, r.detail) for r in results if r.verdict != "same"]
    assert not diverging
    assert len(results) == sum(len(c.steps) for c in plan.connections)
    assert [(q.replayed_messages, q.same_bodies_in_order) for q in queues] == [(5, True)]
    # the replayed sends landed after the target's own 3; the commit was translated to match
    assert traffic.max_offset(target) == 8
    assert traffic.consumer_offset(target) == 8
    assert {r.code_name: r.normalisers for r in results}["GET_CONSUMER_LIST_BY_GROUP"] == "clientId"
    timed = [r for r in results if r.actual_ms is not None and r.scheduled_ms is not None]
    assert len(timed) == len(results)
    assert all(r.actual_ms >= r.scheduled_ms for r in timed if r.actual_ms and r.scheduled_ms)


def test_a_target_that_is_down_is_a_clear_error_before_anything_is_replayed(recorded: Path) -> None:
    plan = load_plan(recorded)
    ctx = ReplayContext(namesrv="127.0.0.1:1", brokers={})
    with pytest.raises(TargetError, match=r"target namesrv 127\.0\.0\.1:1 does not answer"):
        prepare_context(plan, ctx, {})


def test_a_target_dying_mid_replay_fails_the_affected_connections_and_the_replay_ends(
    recorded: Path, rocketmq_factory: RocketMQFactory
) -> None:
    target = rocketmq_factory()
    traffic.create_topic(target, prefill=0)
    plan = load_plan(recorded)
    # at 1/20 speed the consumer's first request is due seconds after the producer's last answer
    ctx = ReplayContext(namesrv=target.namesrv_addr, brokers={}, speed=0.05, answer_timeout_s=10)
    prepare_context(plan, ctx, {})
    box: list[tuple[list[RequestResult], object, object]] = []
    thread = threading.Thread(target=lambda: box.append(replay_connections(plan.connections, ctx)))
    thread.start()
    deadline = time.monotonic() + 60
    while traffic.max_offset(target) < 5:  # every replayed send is stored
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.05)
    target.stop()
    thread.join(60)
    assert not thread.is_alive(), "the replay hung on a dead target"
    results = box[0][0]
    by_code = {(r.code_name, r.verdict) for r in results}
    assert ("SEND_MESSAGE_V2", "same") in by_code
    lost = [r for r in results if r.code_name in ("PULL_MESSAGE", "UPDATE_CONSUMER_OFFSET")]
    assert lost and {r.verdict for r in lost} == {"not-replayed"}
    assert all("closed the connection" in r.detail or "lost" in r.detail for r in lost)
    assert len(results) == sum(len(c.steps) for c in plan.connections)


def test_a_check_back_is_replayed_when_the_target_checks_the_replayed_half_message(
    rocketmq_factory: RocketMQFactory, tmp_path: Path
) -> None:
    target = rocketmq_factory(broker_conf=traffic.CHECKING_BROKER)
    traffic.create_topic(target, prefill=0)
    capture = tmp_path / "check.rmqcap"
    traffic.record_check_back(target, capture)
    plan = load_plan(capture)
    ends = [s for c in plan.connections for s in c.steps if s.code == RequestCode.END_TRANSACTION]
    assert [s.check_back for s in ends] == [None, f"7F0000010001000000000000{77:08X}"]
    # replayed on the same twin: the half message gets another commitlog and queue offset
    ctx = ReplayContext(namesrv=target.namesrv_addr, brokers={}, speed=1.0, answer_timeout_s=20)
    prepare_context(plan, ctx, {})
    results, queues, seen = replay_connections(plan.connections, ctx)
    verdicts = [(r.code_name, r.verdict, r.detail) for r in results if r.verdict != "same"]
    assert sorted(verdicts) == [
        ("END_TRANSACTION", "sent", ""),
        ("END_TRANSACTION", "sent", "on the target's CHECK_TRANSACTION_STATE"),
    ]
    assert seen["CHECK_TRANSACTION_STATE"] >= 1
    # the target committed the replayed half message on the replayed check-back: the consumer pulled it
    assert [(q.replayed_messages, q.same_bodies_in_order) for q in queues] == [(1, True)]
    assert traffic.max_offset(target) == 2


def test_a_consumer_running_info_the_target_relays_is_answered_as_the_consumer_answered_it(
    rocketmq_factory: RocketMQFactory, tmp_path: Path
) -> None:
    recording = rocketmq_factory()
    traffic.create_topic(recording, prefill=0)
    capture = tmp_path / "running-info.rmqcap"
    traffic.record_running_info(recording, capture)
    recording.stop()
    plan = load_plan(capture)
    [consumer] = [c for c in plan.connections if c.client_answers]
    assert list(consumer.client_answers) == [RequestCode.GET_CONSUMER_RUNNING_INFO]
    target = rocketmq_factory()
    traffic.create_topic(target, prefill=0)
    ctx = ReplayContext(namesrv=target.namesrv_addr, brokers={}, speed=1.0, run_id="ri")
    prepare_context(plan, ctx, {})
    results, _, seen = replay_connections(plan.connections, ctx)
    # the replayed admin asks for the replayed consumer (its client id suffixed); the target relays the
    # request to the replayed consumer connection, the replayer answers with the recorded body, and the
    # target hands that to the admin: its answer equals the one recorded
    assert seen["GET_CONSUMER_RUNNING_INFO"] == 1
    assert not [name for name in seen if "no recorded answer" in name], seen
    [asked] = [r for r in results if r.code == RequestCode.GET_CONSUMER_RUNNING_INFO]
    assert (asked.verdict, asked.replayed_code, asked.detail) == ("same", 0, "")
    assert {r.verdict for r in results} == {"same"}, [(r.code_name, r.detail) for r in results]


def test_scale_2_with_suffixed_topics_replays_a_second_copy_into_its_own_topic(
    recorded: Path, rocketmq_factory: RocketMQFactory
) -> None:
    target = rocketmq_factory()
    traffic.create_topic(target, prefill=2)
    traffic.create_topic(target, prefill=0, topic=f"{traffic.TOPIC}-1")  # as an operator would
    plan = load_plan(recorded)
    ctx = ReplayContext(namesrv=target.namesrv_addr, brokers={}, speed=4.0, suffix_topics=True, scale=2)
    prepare_context(plan, ctx, {})
    copies = [dataclasses.replace(c, copy=k) for k in range(2) for c in plan.connections]
    results, queues, _ = replay_connections(copies, ctx)
    assert {(r.copy, r.verdict) for r in results} == {(0, "same"), (1, "same")}, [
        (r.copy, r.code_name, r.detail) for r in results if r.verdict != "same"
    ]
    assert sorted((q.copy, q.topic, q.replayed_messages, q.same_bodies_in_order) for q in queues) == [
        (0, traffic.TOPIC, 5, True),
        (1, traffic.TOPIC, 5, True),
    ]
    assert traffic.max_offset(target) == 7
    assert traffic.max_offset(target, topic=f"{traffic.TOPIC}-1") == 5  # copy 1's sends: its own topic


def test_lateness_the_target_causes_is_told_from_the_replayers_own(tmp_path: Path) -> None:
    """A target that reads nothing for a while: the replayer's output fills and the requests due then
    go late. Their rows say the target held them (``held_ms``, then the wait for the socket until
    ``written_ms``), so the replayer's own lateness (``actual - scheduled - held``) does not carry it."""
    import socket

    from rmqtwin.codec.command import create_request, encode_command
    from rmqtwin.spark.replay.plan import ConnectionPlan, Step

    body = b"x" * 65536
    steps = []
    for i in range(400):  # 26 MB due within 200 ms: more than the socket buffers and the 1 MiB output
        cmd = create_request(RequestCode.HEART_BEAT, {})
        cmd.body = body
        steps.append(
            Step(
                seq=i,
                offset_ns=i * 500_000,
                code=RequestCode.HEART_BEAT,
                oneway=True,
                frame=encode_command(cmd),
            )
        )
    plan = ConnectionPlan(
        conn_id=1, kind="broker", server="10.0.0.2:10911", broker_name="broker-a", steps=steps
    )
    listener = socket.create_server(("127.0.0.1", 0))
    read: list[int] = []

    def target() -> None:
        conn, _ = listener.accept()
        time.sleep(1.0)  # reads nothing for a second, then everything
        conn.settimeout(30)
        while chunk := conn.recv(1 << 20):  # until the replayer closes: after its last byte
            read.append(len(chunk))
        conn.close()

    thread = threading.Thread(target=target)
    thread.start()
    ctx = ReplayContext(namesrv="127.0.0.1:1", brokers={"broker-a": f"127.0.0.1:{listener.getsockname()[1]}"})
    results, _, _ = replay_connections([plan], ctx)
    thread.join(30)
    listener.close()
    assert sum(read) >= sum(len(s.frame) for s in steps)  # every request went, the last ones too
    assert [r.verdict for r in results] == ["sent"] * len(steps)
    for r in results:
        assert r.scheduled_ms is not None and r.actual_ms is not None and r.held_ms is not None
        assert r.written_ms is not None and r.written_ms >= r.actual_ms
        assert r.held_ms <= r.actual_ms - r.scheduled_ms + 1e-6  # part of its lateness, never more
        # what the loop did meanwhile: its CPU time, and (Linux) how long it waited for a core
        assert r.cpu_ms is not None and r.cpu_ms >= 0
        assert r.runq_ms is not None and r.runq_ms >= 0
    late = [
        r
        for r in results
        if r.actual_ms is not None and r.scheduled_ms is not None and r.actual_ms - r.scheduled_ms > 500
    ]
    assert late, "nothing waited for the target"  # it read nothing for a second
    # what the target held back is most of their lateness; the rest is the replayer's
    assert all(r.held_ms is not None and r.held_ms > 0 for r in late)
    last = max(results, key=lambda r: r.written_ms or 0)
    assert last.written_ms is not None and last.written_ms >= 1000


def test_a_pull_that_raced_the_sends_gets_what_it_got_when_recorded(
    rocketmq_factory: RocketMQFactory,
) -> None:
    """Which messages a pull finds depends on when the broker serves it against the sends racing it.
    Queue 0: a long-polling pull woken by the first of two sends got both (a real broker wakes pulls on
    its own thread, after the second came); the twin, woken by the first, answers with the first only,
    so the replay pulls again from there for the rest. Queue 1: a pull sent after two sends got only the
    first (the second was not dispatched yet); the twin has both, so the replay asks for no more than one.
    Each pull's answer and each queue's bodies are as recorded."""
    from rmqtwin.codec.command import encode_command
    from rmqtwin.probe import invoke_sync
    from rmqtwin.spark.replay.plan import Answer, CapturePlan, ConnectionPlan, Step

    scratch = rocketmq_factory()  # what the recorded broker answered, request by request
    traffic.create_topic(scratch, prefill=0)
    broker = scratch.broker_addr
    ms = 1_000_000

    def pull(queue: int, offset: int, *, suspend: bool) -> RemotingCommand:
        request = traffic.pull_request(queue, offset)
        assert request.ext_fields is not None
        request.ext_fields["sysFlag"] = "6" if suspend else "4"  # suspend, subscription in the request
        request.ext_fields["suspendTimeoutMillis"] = "5000" if suspend else "0"
        return request

    def step(seq: int, at_ms: int, request: RemotingCommand, answer: RemotingCommand, took_ms: int) -> Step:
        if request.code == RequestCode.PULL_MESSAGE:
            assert answer.code == 0, answer
        recorded = Answer(answer.code, answer.remark, took_ms * ms, encode_command(answer))
        return Step(seq, at_ms * ms, int(request.code), False, encode_command(request), recorded)

    sends = [traffic.send_request(b"m%d" % i, 0 if i < 2 else 1, i) for i in range(4)]
    pulls = [pull(0, 0, suspend=True), pull(1, 0, suspend=False), pull(1, 1, suspend=False)]
    answers = [invoke_sync(broker, sends[0]), invoke_sync(broker, sends[1]), invoke_sync(broker, pulls[0])]
    answers += [
        invoke_sync(broker, sends[2]),
        invoke_sync(broker, pulls[1]),
        invoke_sync(broker, sends[3]),
        invoke_sync(broker, pulls[2]),
    ]
    s0, s1, p0, s2, p1, s3, p2 = answers
    assert [len(pulled_messages(p)) for p in (p0, p1, p2)] == [2, 1, 1]
    timed = [(20, sends[0], s0), (60, sends[1], s1), (100, sends[2], s2), (110, sends[3], s3)]
    producer = ConnectionPlan(
        1, "broker", "10.0.0.2:10911", "broker-a", [step(i, *t, 1) for i, t in enumerate(timed)]
    )
    pulled = [(0, pulls[0], p0, 62), (150, pulls[1], p1, 1), (160, pulls[2], p2, 1)]
    consumer = ConnectionPlan(
        2, "broker", "10.0.0.2:10911", "broker-a", [step(i, *t) for i, t in enumerate(pulled)]
    )
    bases = {("broker-a", traffic.TOPIC, 0): 0, ("broker-a", traffic.TOPIC, 1): 0}
    plan = CapturePlan([producer, consumer], {}, bases, [], 200 * ms)
    target = rocketmq_factory()
    traffic.create_topic(target, prefill=0)
    ctx = ReplayContext(namesrv=target.namesrv_addr, brokers={}, speed=1.0, answer_timeout_s=10)
    prepare_context(plan, ctx, {})
    results, queues, _ = replay_connections(plan.connections, ctx)
    assert {(r.code_name, r.verdict, r.detail) for r in results} == {
        ("SEND_MESSAGE_V2", "same", ""),
        ("PULL_MESSAGE", "same", ""),
    }
    assert sorted((q.queue_id, q.replayed_messages, q.same_bodies_in_order) for q in queues) == [
        (0, 2, True),
        (1, 2, True),
    ]
    # the second pull of queue 1 found the second message there too: the queue held more, as named
    normalised = {(r.conn_id, r.seq): r.normalisers for r in results}
    assert "maxOffset" in normalised[(2, 1)]


def test_the_replay_loop_leaves_nothing_for_the_collector(
    recorded: Path, rocketmq_factory: RocketMQFactory
) -> None:
    """The loop runs with the collector off (its passes stalled the schedule by up to 100 ms): that
    holds memory only if what the loop drops is freed by reference counting, i.e. it makes no cycles.
    Every collection from before the replay to a full one after it finds nothing unreachable."""
    import gc

    target = rocketmq_factory()
    traffic.create_topic(target, prefill=0)
    plan = load_plan(recorded)
    ctx = ReplayContext(namesrv=target.namesrv_addr, brokers={}, speed=4.0)
    prepare_context(plan, ctx, {})
    found: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            found.append(info["collected"] + info["uncollectable"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        assert gc.isenabled()
        results, _, _ = replay_connections(plan.connections, ctx)
        assert gc.isenabled()  # on again
        del results
        gc.collect()
    finally:
        gc.callbacks.remove(count)
    assert found and sum(found) == 0


def test_the_replayers_own_late_tail_is_split_into_busy_no_core_and_asleep() -> None:
    """The report's split of the replayer's latest 1%: its CPU time (busy), its wait for a core (the
    machine busy), the rest (asleep past the request's time), each at most the request's own lateness."""
    import pandas as pd

    from rmqtwin.spark.replay.report import lateness

    def rows(cpu: float, runq: float) -> pd.DataFrame:
        on_time = {"scheduled_ms": 1.0, "actual_ms": 1.0, "held_ms": 0.0, "written_ms": 1.0}
        late = {"scheduled_ms": 1.0, "actual_ms": 13.0, "held_ms": 2.0, "written_ms": 13.0}
        table = [{**on_time, "cpu_ms": 0.01, "runq_ms": 0.0}] * 99
        return pd.DataFrame([*table, {**late, "cpu_ms": cpu, "runq_ms": runq}])

    late = lateness(rows(cpu=3.0, runq=5.0))  # 10 ms its own (12 late, 2 held by the target)
    assert late is not None and late.tail == pytest.approx((3.0, 5.0, 2.0))
    late = lateness(rows(cpu=4.0, runq=15.0))  # the loop's step began before the request was due
    assert late is not None and late.tail == pytest.approx((0.0, 10.0, 0.0))
    # the report reads the tasks' Parquet parts concatenated: their row labels repeat
    parts = pd.concat([rows(cpu=3.0, runq=5.0), rows(cpu=3.0, runq=5.0)])
    late = lateness(parts)
    assert late is not None and late.tail == pytest.approx((3.0, 5.0, 2.0))
    old = rows(cpu=0.0, runq=0.0).drop(columns=["cpu_ms", "runq_ms"])  # rows written before the split
    assert lateness(old) is not None and lateness(old).tail is None  # type: ignore[union-attr]
