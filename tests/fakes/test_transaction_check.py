"""The transaction back-check on a Clock: half messages, CHECK_TRANSACTION_STATE, END_TRANSACTION answers."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from twisted.internet.task import Clock

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.headers import CheckTransactionStateRequestHeader, from_ext_fields
from rmqtwin.codec.message import MessageExt, decode_message_record
from rmqtwin.fakes.broker.controller import BrokerController
from rmqtwin.fakes.broker.topics import TRANS_CHECK_MAX_TIME_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC
from rmqtwin.fakes.broker.transaction_check import (
    TRANS_CHECK_GROUP,
    TransactionalMessageCheckService,
    encode_check_body,
)
from tests.fakes.helpers import Peer, clocked_broker, make_broker, send_v2

TOPIC = "TxTopic"
GROUP = "tx_producer"
PREPARED = 4
COMMIT, ROLLBACK, UNKNOWN = 8, 12, 0


@pytest.fixture
def env(tmp_path: Any) -> Iterator[tuple[BrokerController, Clock]]:
    with clocked_broker(
        tmp_path, transactionTimeOut="6000", transactionCheckMax="3", transactionCheckInterval="3600000"
    ) as env:
        yield env


def producer(broker: BrokerController, clock: Clock, group: str = GROUP) -> Peer:
    p = Peer(broker.dispatcher, clock, on_close=broker.channel_closed)
    body = orjson.dumps(
        {"clientID": "127.0.0.1@tx", "consumerDataSet": [], "producerDataSet": [{"groupName": group}]}
    )
    assert p.call(RequestCode.HEART_BEAT, None, body, version=409).code == ResponseCode.SUCCESS
    return p


def send_half(
    p: Peer, body: bytes, uniq: str, *, group: str = GROUP, extra: dict[str, str] | None = None
) -> Any:
    props = {"TRAN_MSG": "true", "PGROUP": group, "UNIQ_KEY": uniq, "WAIT": "true", **(extra or {})}
    answer = send_v2(p, TOPIC, body, queue_id=1, props=props, group=group, sys_flag=PREPARED)
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    return answer


def checks(p: Peer) -> list[tuple[CheckTransactionStateRequestHeader, MessageExt]]:
    p.responses()
    out = []
    for request in p.requests_from_server:
        if request.code == RequestCode.CHECK_TRANSACTION_STATE:
            assert request.flag & 2, "CHECK_TRANSACTION_STATE is oneway"
            header = from_ext_fields(CheckTransactionStateRequestHeader, request.ext_fields)
            msg, _ = decode_message_record(request.body or b"")
            out.append((header, msg))
    p.requests_from_server.clear()
    return out


def end_transaction(
    p: Peer,
    header: CheckTransactionStateRequestHeader,
    kind: int,
    *,
    group: str = GROUP,
    from_check: bool = True,
) -> None:
    p.send(
        RequestCode.END_TRANSACTION,
        {
            "producerGroup": group,
            "tranStateTableOffset": header.tran_state_table_offset,
            "commitLogOffset": header.commit_log_offset,
            "commitOrRollback": kind,
            "fromTransactionCheck": from_check,
            "msgId": header.msg_id,
            "transactionId": header.transaction_id,
        },
        oneway=True,
    )


def check_service(broker: BrokerController) -> TransactionalMessageCheckService:
    """A check service of the test's own over the broker's tables (the broker's runs hourly)."""
    return dataclasses.replace(broker.transaction_check)


def stored(broker: BrokerController, topic: str, queue_id: int = 1) -> list[MessageExt]:
    result = broker.store.get_message("g", topic, queue_id, 0, 32)
    return [decode_message_record(bytes(b))[0] for b in result.message_buffers]


def test_unresolved_half_message_is_checked_after_the_timeout_and_committed_by_the_answer(env: Any) -> None:
    broker, clock = env
    service = check_service(broker)
    p = producer(broker, clock)
    send_half(p, b"order-1", "UNIQ1")

    clock.advance(5)
    assert service.check(6000, 15).checked == []
    assert checks(p) == []

    clock.advance(2)
    report = service.check(6000, 15)
    assert len(report.checked) == 1
    [(header, msg)] = checks(p)
    assert header.msg_id == header.transaction_id == "UNIQ1"
    assert header.tran_state_table_offset == 1, "the check names the re-put copy"
    assert header.topic == TRANS_HALF_TOPIC
    assert header.bname == "broker-a"
    copy = broker.store.look_message_by_offset(header.commit_log_offset)
    assert copy is not None and copy.topic == TRANS_HALF_TOPIC and copy.queue_offset == 1
    assert copy.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert header.offset_msg_id == copy.offset_msg_id
    assert (msg.topic, msg.queue_id, msg.body) == (TOPIC, 1, b"order-1")
    assert msg.properties["TRANSACTION_CHECK_TIMES"] == "1"
    assert msg.commitlog_offset == header.commit_log_offset
    assert broker.offsets.query_offset(TRANS_CHECK_GROUP, TRANS_HALF_TOPIC, 0) == 1

    end_transaction(p, header, COMMIT)
    [committed] = stored(broker, TOPIC)
    assert committed.body == b"order-1"
    assert committed.uniq_key == "UNIQ1"
    assert committed.prepared_transaction_offset == header.commit_log_offset

    clock.advance(60)
    assert service.check(6000, 15).checked == []
    assert checks(p) == []
    assert broker.offsets.query_offset(TRANS_CHECK_GROUP, TRANS_HALF_TOPIC, 0) == 2


def test_rolled_back_answer_never_reaches_the_topic(env: Any) -> None:
    broker, clock = env
    service = check_service(broker)
    p = producer(broker, clock)
    send_half(p, b"order-2", "UNIQ2")
    clock.advance(7)
    service.check(6000, 15)
    [(header, _)] = checks(p)
    end_transaction(p, header, ROLLBACK)
    clock.advance(60)
    assert service.check(6000, 15).checked == []
    assert stored(broker, TOPIC) == []


def test_a_message_resolved_before_the_check_is_not_checked(env: Any) -> None:
    broker, clock = env
    service = check_service(broker)
    p = producer(broker, clock)
    send_half(p, b"x", "UNIQ3")
    [half] = stored(broker, TRANS_HALF_TOPIC, 0)
    header = CheckTransactionStateRequestHeader(
        tran_state_table_offset=half.queue_offset, commit_log_offset=half.commitlog_offset, msg_id="UNIQ3"
    )
    end_transaction(p, header, COMMIT, from_check=False)
    clock.advance(60)
    assert service.check(6000, 15).checked == []
    assert checks(p) == []
    assert [m.body for m in stored(broker, TOPIC)] == [b"x"]


def test_unknown_answers_are_checked_again_until_check_max_then_discarded(env: Any) -> None:
    broker, clock = env
    service = check_service(broker)
    p = producer(broker, clock)
    send_half(p, b"stuck", "UNIQ4")
    seen = []
    for _ in range(5):
        clock.advance(7)
        service.check(6000, 3)
        for header, msg in checks(p):
            seen.append(msg.properties["TRANSACTION_CHECK_TIMES"])
            end_transaction(p, header, UNKNOWN)
    assert seen == ["1", "2", "3"]
    [parked] = stored(broker, TRANS_CHECK_MAX_TIME_TOPIC, 0)
    assert parked.body == b"stuck"
    assert parked.properties["TRANSACTION_CHECK_TIMES"] == "3"
    assert parked.properties["REAL_TOPIC"] == TOPIC
    assert stored(broker, TOPIC) == []


def test_immunity_time_property_delays_the_first_check(env: Any) -> None:
    broker, clock = env
    service = check_service(broker)
    p = producer(broker, clock)
    send_half(p, b"slow", "UNIQ5", extra={"CHECK_IMMUNITY_TIME_IN_SECONDS": "20"})
    clock.advance(7)
    report = service.check(6000, 15)
    assert report.checked == [] and report.immunity_renewed == 1
    assert checks(p) == []
    clock.advance(15)
    service.check(6000, 15)
    [(header, msg)] = checks(p)
    assert msg.body == b"slow"
    assert msg.properties["TRAN_PREPARED_QUEUE_OFFSET"] == "0"
    end_transaction(p, header, COMMIT)
    assert [m.body for m in stored(broker, TOPIC)] == [b"slow"]


def test_no_producer_channel_means_no_check_request(env: Any) -> None:
    broker, clock = env
    service = check_service(broker)
    p = producer(broker, clock, group="other_group")
    send_half(p, b"orphan", "UNIQ6")
    clock.advance(7)
    report = service.check(6000, 15)
    assert len(report.checked) == 1, "the copy is still re-put, as in Java"
    assert checks(p) == []


def test_service_runs_every_check_interval_on_the_clock(env: Any) -> None:
    broker, clock = env
    service = check_service(broker)
    p = producer(broker, clock)
    send_half(p, b"tick", "UNIQ7")
    broker.config.transaction_check_interval = 5000
    service.start()
    try:
        clock.advance(4.9)
        assert service.runs == 0
        clock.advance(0.1)
        assert service.runs == 1 and checks(p) == []
        clock.advance(5)
        assert service.runs == 2
        [(header, _)] = checks(p)
        end_transaction(p, header, COMMIT)
    finally:
        service.stop()
    clock.advance(60)
    assert service.runs == 2


def test_end_transaction_with_a_bad_header_gets_the_brokers_error(env: Any) -> None:
    broker, clock = env
    p = producer(broker, clock)
    answer = p.call(
        RequestCode.END_TRANSACTION,
        {"producerGroup": GROUP, "tranStateTableOffset": 0, "commitOrRollback": COMMIT, "msgId": "m"},
    )
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert "commitLogOffset" in (answer.remark or "")
    answer = p.call(
        RequestCode.END_TRANSACTION,
        {
            "producerGroup": GROUP,
            "tranStateTableOffset": 0,
            "commitLogOffset": 999_999,
            "commitOrRollback": COMMIT,
            "msgId": "m",
        },
    )
    assert (answer.code, answer.remark) == (
        ResponseCode.SYSTEM_ERROR,
        "Find prepared transaction message failed",
    )


def test_check_body_is_a_v1_record_with_the_real_topic() -> None:
    msg = MessageExt(
        topic=TRANS_HALF_TOPIC,
        body=b"payload",
        queue_id=0,
        properties={"REAL_TOPIC": "T", "REAL_QID": "3", "UNIQ_KEY": "U", "PGROUP": "g"},
        born_host=("127.0.0.1", 1),
        store_host=("127.0.0.1", 10911),
        body_crc=1234,
        queue_offset=9,
        commitlog_offset=4096,
    )
    record = encode_check_body(msg)
    decoded, size = decode_message_record(record)
    assert size == len(record)
    assert (decoded.topic, decoded.queue_id, decoded.body_crc) == ("T", 3, 1234)
    assert (decoded.queue_offset, decoded.commitlog_offset) == (9, 4096)
    assert decoded.properties == msg.properties


def test_5x_refuses_an_unasked_answer_after_the_immunity_time(env: Any) -> None:
    """The emulated line decides, whatever the client's version."""
    broker, clock = env
    p = producer(broker, clock)
    send_half(p, b"late", "UNIQ8", extra={"CHECK_IMMUNITY_TIME_IN_SECONDS": "10"})
    [half] = stored(broker, TRANS_HALF_TOPIC, 0)
    fields = {
        "producerGroup": GROUP,
        "tranStateTableOffset": half.queue_offset,
        "commitLogOffset": half.commitlog_offset,
        "commitOrRollback": COMMIT,
        "fromTransactionCheck": False,
        "msgId": "UNIQ8",
    }
    clock.advance(11)
    assert p.call(RequestCode.END_TRANSACTION, fields, version=477).code == ResponseCode.ILLEGAL_OPERATION
    assert p.call(RequestCode.END_TRANSACTION, fields, version=409).code == ResponseCode.ILLEGAL_OPERATION
    assert stored(broker, TOPIC) == []
    # 4.9 has no such rule; nor does 5.x for the answer to a check.
    broker.config.rocketmq_version = "4.9"
    assert p.call(RequestCode.END_TRANSACTION, fields, version=477).code == ResponseCode.SUCCESS
    assert [m.body for m in stored(broker, TOPIC)] == [b"late"]


def test_checks_go_round_robin_over_the_producer_groups_channels(env: Any) -> None:
    broker, clock = env
    service = check_service(broker)
    first, second = producer(broker, clock), producer(broker, clock)
    for n in range(4):
        send_half(first, f"rr-{n}".encode(), f"RR{n}")
    clock.advance(7)
    assert len(service.check(6000, 15).checked) == 4
    assert (len(checks(first)), len(checks(second))) == (2, 2)
    second.close()
    clock.advance(7)
    assert len(service.check(6000, 15).checked) == 4
    assert len(checks(first)) == 4, "a closed channel leaves the group"


@pytest.mark.parametrize(("version", "first_run"), [("5.5", 30.0), ("4.9", 60.0)])
def test_default_check_interval_is_the_lines(tmp_path: Any, version: str, first_run: float) -> None:
    """``transactionCheckInterval`` unset: 30 s on the 5.x line (5.5.0's BrokerConfig), 60 s on 4.9."""
    clock = Clock()
    broker = make_broker(tmp_path, clock, rocketmq_version=version)
    service = check_service(broker)
    service.start()
    try:
        clock.advance(first_run - 0.1)
        assert service.runs == 0
        clock.advance(0.1)
        assert service.runs == 1
    finally:
        service.stop()
        broker.shutdown()


def _op_bodies(broker: BrokerController) -> list[bytes]:
    return [m.body for m in stored(broker, TRANS_OP_HALF_TOPIC, 0)]


@pytest.mark.parametrize("version", ["5.5", "4.9"])
def test_op_messages_are_written_in_batches_on_the_5_x_line(tmp_path: Any, version: str) -> None:
    """5.5.0's ``TransactionalOpBatchService``: ended half offsets wait (``<offset>,`` each) for one op
    message per half queue, written once ``transactionOpBatchInterval`` (3 s) has passed since the
    queue's last one; 4.9.7 writes each at once (the offset alone)."""
    hourly_checks = {"transactionCheckInterval": "3600000"}
    with clocked_broker(tmp_path, rocketmq_version=version, **hourly_checks) as (broker, clock):
        p = producer(broker, clock)
        for uniq in ("U0", "U1"):
            send_half(p, b"x", uniq)
        for half in stored(broker, TRANS_HALF_TOPIC, 0):
            header = CheckTransactionStateRequestHeader(
                tran_state_table_offset=half.queue_offset,
                commit_log_offset=half.commitlog_offset,
                msg_id=half.uniq_key,
            )
            end_transaction(p, header, COMMIT, from_check=False)
        if version == "4.9":
            assert _op_bodies(broker) == [b"0", b"1"]
            return
        assert _op_bodies(broker) == []
        clock.advance(2.9)
        assert _op_bodies(broker) == []
        clock.advance(0.2)
        assert _op_bodies(broker) == [b"0,1,"]
        # The next end waits for the batch after: the service runs every interval.
        send_half(p, b"x", "U2")
        [*_, half] = stored(broker, TRANS_HALF_TOPIC, 0)
        header = CheckTransactionStateRequestHeader(
            tran_state_table_offset=half.queue_offset, commit_log_offset=half.commitlog_offset, msg_id="U2"
        )
        end_transaction(p, header, ROLLBACK, from_check=False)
        clock.advance(2.9)
        assert _op_bodies(broker) == [b"0,1,"]
        clock.advance(0.2)
        assert _op_bodies(broker) == [b"0,1,", b"2,"]


def test_a_check_racing_the_op_batch_asks_about_an_ended_message(env: Any) -> None:
    """As on 5.5.0: a half message ended less than a batch before its check is checked back (its put
    back copy has no op), and asked about again until its producer answers for the copy."""
    broker, clock = env
    service = check_service(broker)
    p = producer(broker, clock)
    clock.advance(2.5)  # the op batch service's next run is 0.5 s away
    send_half(p, b"x", "RACE")
    [half] = stored(broker, TRANS_HALF_TOPIC, 0)
    header = CheckTransactionStateRequestHeader(
        tran_state_table_offset=half.queue_offset, commit_log_offset=half.commitlog_offset, msg_id="RACE"
    )
    end_transaction(p, header, COMMIT, from_check=False)
    clock.advance(0.1)
    assert len(service.check(0, 15).checked) == 1  # transactionTimeOut 0: due before the batch
    [(asked, _)] = checks(p)
    clock.advance(7)  # the batch wrote the op of the original, not of the copy
    assert _op_bodies(broker) == [b"0,"]
    assert len(service.check(6000, 15).checked) == 1
    [(again, _)] = checks(p)
    assert again.tran_state_table_offset == asked.tran_state_table_offset + 1
    end_transaction(p, again, COMMIT)
    clock.advance(7)
    assert service.check(6000, 15).checked == []
    assert [m.body for m in stored(broker, TOPIC)] == [b"x", b"x"]
