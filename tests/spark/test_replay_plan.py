"""Replay planning, translation and comparison on hand-made captures: no sockets, no Spark."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import (
    RESPONSE_FLAG,
    RemotingCommand,
    create_request,
    create_response,
    decode_command,
    encode_command,
)
from rmqtwin.codec.message import create_offset_msg_id
from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    FLAG_RAW,
    CaptureWriter,
    Endpoint,
)
from rmqtwin.spark.replay.compare import compare_answers
from rmqtwin.spark.replay.engine import RecordedOrder
from rmqtwin.spark.replay.job import partition_connections
from rmqtwin.spark.replay.plan import Answer, ConnectionPlan, Step, load_plan
from rmqtwin.spark.replay.target import TargetError, prepare_context
from rmqtwin.spark.replay.translate import ConnectionTranslator, ReplayContext
from tests.proxy.frames import captured, json_frame

CLIENT = Endpoint("127.0.0.1", 50000)
BROKER = Endpoint("10.0.0.7", 10911)


def _write(path: Path, frames: list[tuple[int, int, bytes, int]]) -> None:
    """(direction, ms, frame, flags) records of connection 1."""
    with CaptureWriter(path) as writer:
        for direction, ms, frame, flags in frames:
            writer.write(captured(frame, direction, CLIENT, BROKER, mono_ns=ms * 1_000_000, flags=flags))


def test_raw_records_are_counted_broker_requests_keep_their_recorded_answers(tmp_path: Path) -> None:
    capture = tmp_path / "c.rmqcap"
    _write(
        capture,
        [
            (DIR_TO_SERVER, 0, json_frame(RequestCode.HEART_BEAT, 1, body=b'{"clientID":"c1"}'), 0),
            (DIR_TO_CLIENT, 1, json_frame(ResponseCode.SUCCESS, 1, flag=RESPONSE_FLAG), 0),
            (
                DIR_TO_CLIENT,
                5,
                json_frame(RequestCode.GET_CONSUMER_RUNNING_INFO, 9, ext={"consumerGroup": "g"}),
                0,
            ),
            (DIR_TO_SERVER, 6, json_frame(ResponseCode.SUCCESS, 9, flag=RESPONSE_FLAG, body=b'{"x":1}'), 0),
            (DIR_TO_SERVER, 7, b"\x16\x03\x01 not a frame", FLAG_RAW),
        ],
    )
    plan = load_plan(capture)
    assert plan.raw_skipped == 1
    [conn] = plan.connections
    assert [s.code for s in conn.steps] == [RequestCode.HEART_BEAT]
    assert conn.steps[0].answer is not None and conn.steps[0].answer.latency_ns == 1_000_000
    assert plan.client_ids == ["c1"]
    [answer] = conn.client_answers[RequestCode.GET_CONSUMER_RUNNING_INFO]
    assert decode_command(answer[4:]).body == b'{"x":1}'
    # no route answer names 10.0.0.7:10911: the error names it, before the target is asked anything
    with pytest.raises(TargetError, match=r"10\.0\.0\.7:10911 \(connection 1\).*--broker-map"):
        prepare_context(plan, ReplayContext(namesrv="127.0.0.1:1", brokers={}), {})


def test_end_transaction_points_at_the_replayed_half_message() -> None:
    ctx = ReplayContext(namesrv="n:1", brokers={}, client_ids=["c1"])
    translator = ConnectionTranslator(ctx, "broker-a", 0)
    props = "UNIQ_KEY\x01U1\x02TRAN_MSG\x01true\x02"
    half = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={"b": "T", "e": "0", "i": props})
    end = RemotingCommand(
        code=RequestCode.END_TRANSACTION,
        ext_fields={
            "msgId": "U1",
            "commitLogOffset": "100",
            "tranStateTableOffset": "4",
            "producerGroup": "p",
        },
    )
    assert translator.expect_send(half) == "U1"
    assert translator.waits(end)  # its half message is not answered yet
    recorded = create_response(half, ResponseCode.SUCCESS, ext_fields={"msgId": "OLD", "queueOffset": "4"})
    new_offset_id = create_offset_msg_id(("127.0.0.1", 10911), 5555)
    replayed = create_response(
        half, ResponseCode.SUCCESS, ext_fields={"msgId": new_offset_id, "queueOffset": "9"}
    )
    translator.answered_send("U1", recorded, replayed)
    assert not translator.waits(end)
    translator.request(end)
    assert end.ext_fields == {
        "msgId": "U1",
        "commitLogOffset": "5555",
        "tranStateTableOffset": "9",
        "producerGroup": "p",
    }


def test_pull_and_commit_offsets_move_to_the_target_queue_and_client_ids_get_the_suffix() -> None:
    ctx = ReplayContext(
        namesrv="n:1",
        brokers={},
        recorded_bases={("broker-a", "T", 1): 100},
        target_bases={("broker-a", "T", 1): 7},
        client_ids=["c1"],
        run_id="r1",
    )
    translator = ConnectionTranslator(ctx, "broker-a", 2)
    pull = RemotingCommand(
        code=RequestCode.PULL_MESSAGE,
        ext_fields={"topic": "T", "queueId": "1", "queueOffset": "103", "commitOffset": "101"},
    )
    translator.request(pull)
    assert (pull.ext("queueOffset"), pull.ext("commitOffset")) == ("10", "8")
    beat = RemotingCommand(code=RequestCode.HEART_BEAT, body=b'{"clientID":"c1"}')
    translator.request(beat)
    assert beat.body == b'{"clientID":"c1-r1-2"}'


def test_comparison_names_the_normalisers_it_used_and_the_differences_it_kept() -> None:
    request = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2)
    recorded = create_response(
        request, ResponseCode.SUCCESS, ext_fields={"msgId": "A" * 32, "queueOffset": "4", "queueId": "0"}
    )
    replayed = create_response(
        request, ResponseCode.SUCCESS, ext_fields={"msgId": "B" * 32, "queueOffset": "9", "queueId": "0"}
    )
    same = compare_answers(RequestCode.SEND_MESSAGE_V2, recorded, replayed, offset_shift=lambda o: o - 5)
    assert (same.verdict, same.normalisers) == ("same", ["offsetMsgId", "queueOffset"])
    busy = create_response(request, ResponseCode.SYSTEM_BUSY, remark="[REJECTREQUEST]system busy")
    differs = compare_answers(RequestCode.SEND_MESSAGE_V2, recorded, busy)
    assert differs.verdict == "differs"
    assert differs.detail.startswith("code SUCCESS → SYSTEM_BUSY; remark None → '[REJECTREQUEST]system busy'")


def test_a_target_cluster_of_another_name_reads_as_the_recorded_one() -> None:
    request = create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    recorded = create_response(
        request,
        ResponseCode.SUCCESS,
        body=b'{"brokerDatas":[{"brokerAddrs":{"0":"10.0.0.7:10911"},'
        b'"brokerName":"broker-a","cluster":"rmqtwin"}]}',
    )
    replayed = create_response(
        request,
        ResponseCode.SUCCESS,
        body=b'{"brokerDatas":[{"brokerAddrs":{"0":"127.0.0.1:4242"},'
        b'"brokerName":"broker-a","cluster":"DefaultCluster"}]}',
    )
    plain = compare_answers(RequestCode.GET_ROUTEINFO_BY_TOPIC, recorded, replayed)
    assert plain.verdict == "differs"
    assert plain.detail == (
        """body differs (100 → 107 bytes; at 81: 'cluster":"rmqtwin"}]}' → 'cluster":"DefaultCluster"}]}')"""
    )
    names = {"DefaultCluster": ("rmqtwin", "clusterName")}
    same = compare_answers(RequestCode.GET_ROUTEINFO_BY_TOPIC, recorded, replayed, target_names=names)
    assert (same.verdict, same.normalisers) == ("same", ["clusterName", "hosts"])


def test_connections_spread_over_the_slots_balanced_and_scale_copies_get_their_own_client_ids() -> None:
    conns = [ConnectionPlan(i, "broker", "h:1", steps=[_step()] * n) for i, n in enumerate([9, 5, 4, 1])]
    groups = partition_connections(conns, 2)
    assert [[c.conn_id for c in g] for g in groups] == [[0, 3], [1, 2]]
    assert partition_connections(conns[:1], 8) == [[conns[0]]]
    ctx = ReplayContext(namesrv="n:1", brokers={}, client_ids=["c1"], run_id="r")
    ids = {ConnectionTranslator(ctx, None, copy).with_client_ids(b'"c1"') for copy in range(3)}
    assert ids == {b'"c1-r"', b'"c1-r-1"', b'"c1-r-2"'}


def _step() -> Step:
    return Step(seq=0, offset_ns=0, code=RequestCode.HEART_BEAT, oneway=False, frame=b"")


def _pull(topic: str) -> Step:
    frame = encode_command(create_request(RequestCode.PULL_MESSAGE, {"topic": topic, "queueId": "0"}))
    return Step(seq=0, offset_ns=0, code=RequestCode.PULL_MESSAGE, oneway=False, frame=frame)


def _send(topic: str) -> Step:
    frame = encode_command(create_request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": topic, "e": "0"}))
    return Step(seq=0, offset_ns=0, code=RequestCode.SEND_MESSAGE_V2, oneway=False, frame=frame)


def _end_transaction() -> Step:
    frame = encode_command(create_request(RequestCode.END_TRANSACTION, {"producerGroup": "pg"}))
    return Step(seq=0, offset_ns=0, code=RequestCode.END_TRANSACTION, oneway=False, frame=frame)


def test_connections_naming_a_common_topic_share_a_task() -> None:
    conns = [
        ConnectionPlan(0, "broker", "h:1", steps=[_pull("A")] * 5),
        ConnectionPlan(1, "broker", "h:1", steps=[_pull("B")] * 4),
        ConnectionPlan(2, "broker", "h:1", steps=[_pull("A"), _pull("C")]),
        ConnectionPlan(3, "broker", "h:1", steps=[_send("C")]),
        ConnectionPlan(4, "broker", "h:1", steps=[_pull("A")], copy=1),
    ]
    groups = partition_connections(conns, 8)
    assert sorted(sorted(c.conn_id for c in g) for g in groups) == [[0, 2, 3], [1], [4]]


def test_producers_of_a_topic_nobody_reads_may_go_to_different_tasks() -> None:
    conns = [
        ConnectionPlan(0, "broker", "h:1", steps=[_send("A")] * 5),
        ConnectionPlan(1, "broker", "h:1", steps=[_send("A")] * 5),
        ConnectionPlan(2, "broker", "h:1", steps=[_send("B")] * 2),
        ConnectionPlan(3, "broker", "h:1", steps=[_send("B"), _end_transaction()]),
    ]
    groups = partition_connections(conns, 8)
    assert sorted(sorted(c.conn_id for c in g) for g in groups) == [[0], [1], [2, 3]]
    reader = ConnectionPlan(4, "broker", "h:1", steps=[_pull("A")])
    groups = partition_connections([*conns, reader], 8)
    assert sorted(sorted(c.conn_id for c in g) for g in groups) == [[0, 1, 4], [2, 3]]


def test_a_request_waits_for_the_answers_recorded_before_it_was_sent() -> None:
    order = RecordedOrder()
    answer = Answer(code=0, remark=None, latency_ns=10, frame=b"")
    send = Step(
        seq=0, offset_ns=100, code=RequestCode.SEND_MESSAGE_V2, oneway=False, frame=b"", answer=answer
    )
    pipelined = Step(seq=1, offset_ns=105, code=RequestCode.SEND_MESSAGE_V2, oneway=False, frame=b"")
    pull = Step(seq=0, offset_ns=120, code=RequestCode.PULL_MESSAGE, oneway=False, frame=b"")
    later_send = Step(seq=2, offset_ns=130, code=RequestCode.SEND_MESSAGE_V2, oneway=False, frame=b"")
    order.expect(send)
    assert order.allows(send) and order.allows(pipelined)
    assert not order.allows(pull)
    assert order.allows(later_send)  # sends wait for no other send
    order.settle(send)
    assert order.allows(pull)
    beat = Step(seq=1, offset_ns=140, code=RequestCode.HEART_BEAT, oneway=False, frame=b"", answer=answer)
    order.expect(beat)
    assert not order.allows(
        Step(seq=3, offset_ns=160, code=RequestCode.SEND_MESSAGE_V2, oneway=False, frame=b"")
    )


def test_scale_copies_with_suffixed_topics_name_their_own_topics_queues_and_offsets() -> None:
    ctx = ReplayContext(
        namesrv="n:1",
        brokers={},
        recorded_bases={("broker-a", "T", 0): 100},
        target_bases={("broker-a", "T", 0): 7, ("broker-a", "T-2", 0): 0},
        client_ids=["c1"],
        run_id="r",
        suffix_topics=True,
        scale=3,
    )
    assert [ctx.topic("T", k) for k in range(3)] == ["T", "T-1", "T-2"]
    assert (ctx.topic("%RETRY%g", 2), ctx.group("g", 2), ctx.topic("%RETRY%g", 0)) == (
        "%RETRY%g-2",
        "g-2",
        "%RETRY%g",
    )
    translator = ConnectionTranslator(ctx, "broker-a", 2)
    pull = RemotingCommand(
        code=RequestCode.PULL_MESSAGE,
        ext_fields={"topic": "T", "queueId": "0", "queueOffset": "103", "commitOffset": "0"},
    )
    translator.request(pull)
    assert (pull.ext("topic"), pull.ext("queueOffset")) == ("T-2", "3")
    beat = RemotingCommand(
        code=RequestCode.HEART_BEAT,
        body=b'{"clientID":"c1","consumerDataSet":[{"subscriptionDataSet":[{"topic":"T"},'
        b'{"topic":"%RETRY%g"}]}]}',
    )
    translator.request(beat)
    assert beat.body == (
        b'{"clientID":"c1-r-2","consumerDataSet":[{"subscriptionDataSet":[{"topic":"T-2"},'
        b'{"topic":"%RETRY%g-2"}]}]}'
    )
    copy0 = ConnectionTranslator(ctx, "broker-a", 0)
    send = RemotingCommand(code=RequestCode.SEND_MESSAGE_V2, ext_fields={"b": "T", "e": "0"})
    copy0.request(send)
    assert send.ext("b") == "T"


def test_a_send_offset_in_a_queue_of_several_senders_is_the_targets_interleaving() -> None:
    request = create_request(RequestCode.SEND_MESSAGE_V2, {"a": "pg", "b": "T", "e": "0"})
    recorded = create_response(request, ResponseCode.SUCCESS, ext_fields={"queueId": "0", "queueOffset": "5"})
    replayed = create_response(request, ResponseCode.SUCCESS, ext_fields={"queueId": "0", "queueOffset": "9"})
    alone = compare_answers(RequestCode.SEND_MESSAGE_V2, recorded, replayed, offset_shift=lambda o: o - 3)
    assert (alone.verdict, alone.detail) == ("differs", "queueOffset '5' → '9'")
    shared = compare_answers(RequestCode.SEND_MESSAGE_V2, recorded, replayed, interleaved=True)
    assert (shared.verdict, shared.normalisers) == ("same", ["interleaving"])
    ctx = ReplayContext(namesrv="n:1", brokers={}, shared_queues={("broker-a", "T", 0)})
    assert ctx.interleaved(("broker-a", "T", 0)) and not ctx.interleaved(("broker-a", "T", 1))
    assert ReplayContext(namesrv="n:1", brokers={}, scale=2).interleaved(("broker-a", "T", 1))
    assert not ReplayContext(namesrv="n:1", brokers={}, scale=2, suffix_topics=True).interleaved(
        ("b", "T", 1)
    )
