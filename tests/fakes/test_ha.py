"""Master/slave replication in memory: the master's HA connection (StringTransport, Clock), a slave
store fed the master's bytes in awkward slices, the SYNC_MASTER answers of each line, a write sent to a
slave, and where pulls are sent next. The same against real brokers: test_ha_real.py."""

from __future__ import annotations

from pathlib import Path

from twisted.internet.defer import succeed
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.ha import TransferDecoder, encode_report
from rmqtwin.fakes.broker.controller import SLAVE_CHANGE_REMARK, BrokerController
from rmqtwin.fakes.broker.ha import HAConnection
from rmqtwin.fakes.broker.slave_sync import SlaveSynchronize
from rmqtwin.fakes.dispatch import REJECT_REQUEST_REMARK
from tests.fakes.helpers import Peer, heartbeat, make_broker, peer, pull_header, send_v2


def connect_slave(master: BrokerController) -> tuple[HAConnection, StringTransport]:
    connection = master.ha_service.factory().buildProtocol(None)
    assert isinstance(connection, HAConnection)
    transport = StringTransport()
    connection.makeConnection(transport)
    return connection, transport


def commitlog(broker: BrokerController) -> bytes:
    data = broker.store.get_commit_log_data(0)
    return bytes(data) if data is not None else b""


def test_master_streams_its_commitlog_from_the_reported_offset(tmp_path: Path) -> None:
    clock = Clock()
    master = make_broker(tmp_path / "m", clock)
    p = peer(master, clock)
    for i in range(5):
        assert send_v2(p, "T", b"body-%d" % i).code == ResponseCode.SUCCESS
    connection, transport = connect_slave(master)
    assert transport.value() == b""  # nothing before the slave says where it is
    connection.dataReceived(encode_report(0))
    transfers = TransferDecoder().feed(transport.value())
    assert b"".join(t.body for t in transfers) == commitlog(master)
    assert transfers[0].master_offset == 0
    transport.clear()
    send_v2(p, "T", b"later")
    (later,) = TransferDecoder().feed(transport.value())
    assert later.master_offset == len(commitlog(master)) - len(later.body)
    transport.clear()
    clock.advance(5.1)  # idle longer than haSendHeartbeatInterval: a heartbeat at the next offset
    (beat,) = TransferDecoder().feed(transport.value())
    assert beat.heartbeat and beat.master_offset == len(commitlog(master))


def test_slave_store_takes_the_masters_bytes_in_any_slices(tmp_path: Path) -> None:
    clock = Clock()
    master = make_broker(tmp_path / "m", clock)
    slave = make_broker(tmp_path / "s", clock, brokerRole="SLAVE", brokerId="1")
    p = peer(master, clock)
    for i in range(7):
        send_v2(p, "T", b"x" * (50 + i), queue_id=i % 2)
    data = commitlog(master)
    offset = 0
    for size in (1, 90, 7, 300, len(data)):  # cuts inside records and headers
        chunk = data[offset : offset + size]
        if chunk:
            assert slave.store.append_to_commit_log(offset, chunk)
        offset += len(chunk)
    assert commitlog(slave) == data
    assert slave.store.get_max_offset_in_queue("T", 0) == 4
    assert slave.store.get_max_offset_in_queue("T", 1) == 3
    assert not slave.store.append_to_commit_log(5, b"gap")  # not where the slave's log ends


def test_a_send_to_a_slave_is_refused_as_each_line_does(tmp_path: Path) -> None:
    clock = Clock()
    slave = make_broker(tmp_path / "4", clock, "4.9", brokerRole="SLAVE", brokerId="1")
    answer = send_v2(peer(slave, clock), "T", b"no")
    assert answer.code == ResponseCode.SERVICE_NOT_AVAILABLE  # 4.9.7: the store refuses it
    assert "messages are put to the slave" in (answer.remark or "")
    slave = make_broker(tmp_path / "5", clock, "5.5", brokerRole="SLAVE", brokerId="1")
    answer = send_v2(peer(slave, clock), "T", b"no")  # 5.5.0: rejectRequest, before anything else
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)


def _sync_master(tmp_path: Path, version: str, **props: str) -> tuple[Clock, BrokerController]:
    clock = Clock()
    return clock, make_broker(tmp_path, clock, version, brokerRole="SYNC_MASTER", **props)


def send_waiting(p: Peer, body: bytes) -> int:
    """A SEND_MESSAGE_V2 whose answer may come later (WAIT=true)."""
    header = {"a": "pg", "b": "T", "c": "TBW102", "d": 4, "e": 0, "f": 0, "g": 0, "h": 0, "i": "WAIT\x01true"}
    return p.send(RequestCode.SEND_MESSAGE_V2, header, body, version=409)


def test_sync_master_49_without_slave_answers_slave_not_available(tmp_path: Path) -> None:
    clock, master = _sync_master(tmp_path, "4.9")
    answer = send_v2(peer(master, clock), "T", b"alone")
    assert (answer.code, answer.remark) == (ResponseCode.SLAVE_NOT_AVAILABLE, None)
    assert answer.ext_fields["queueOffset"] == "0"  # stored all the same


def test_sync_master_49_answers_once_the_slave_has_it_else_flush_slave_timeout(tmp_path: Path) -> None:
    clock, master = _sync_master(tmp_path, "4.9")
    connection, transport = connect_slave(master)
    connection.dataReceived(encode_report(0))
    p = peer(master, clock)
    opaque = send_waiting(p, b"replicated")
    assert p.responses() == []  # waits for the slave
    connection.dataReceived(encode_report(len(commitlog(master))))
    (answer,) = p.responses()
    assert (answer.opaque, answer.code) == (opaque, ResponseCode.SUCCESS)
    send_waiting(p, b"never acknowledged")
    clock.advance(2.9)
    assert p.responses() == []
    clock.advance(0.2)  # slaveTimeout, 3 s
    (late,) = p.responses()
    assert (late.code, late.remark) == (ResponseCode.FLUSH_SLAVE_TIMEOUT, None)
    assert transport.value()  # the transfers went out


def test_sync_master_55_waits_only_with_in_sync_replicas_above_one(tmp_path: Path) -> None:
    clock, master = _sync_master(tmp_path / "a", "5.5")
    assert send_v2(peer(master, clock), "T", b"alone").code == ResponseCode.SUCCESS
    clock, master = _sync_master(tmp_path / "b", "5.5", inSyncReplicas="2")
    p = peer(master, clock)
    send_waiting(p, b"no slave at all")
    clock.advance(3.1)
    (answer,) = p.responses()
    assert answer.code == ResponseCode.FLUSH_SLAVE_TIMEOUT  # never SLAVE_NOT_AVAILABLE on 5.x


def test_pull_suggests_the_slave_only_with_slave_read_enable(tmp_path: Path) -> None:
    for props, expected in (({}, "0"), ({"slaveReadEnable": "true"}, "0")):
        clock = Clock()
        broker = make_broker(tmp_path / str(len(props)), clock, "4.9", **props)
        p = peer(broker, clock)
        send_v2(p, "T", b"m")
        heartbeat(p, "G", "T")
        answer = p.call(RequestCode.PULL_MESSAGE, pull_header("G", "T", 0), version=409)
        assert answer.code == ResponseCode.SUCCESS
        assert answer.ext_fields["suggestWhichBrokerId"] == expected


def test_pull_suggests_the_slave_to_a_consumer_behind_access_message_in_memory_max_ratio(
    tmp_path: Path,
) -> None:
    """With the ratio 0 any pull that does not read the log's last byte is "far behind": the answer
    suggests whichBrokerWhenConsumeSlowly (1); the ratio is read on every pull, so updateBrokerConfig
    changes it at once, as on real (tests/fakes/test_two_masters.py)."""
    clock = Clock()
    broker = make_broker(tmp_path, clock, "4.9", slaveReadEnable="true", accessMessageInMemoryMaxRatio="0")
    p = peer(broker, clock)
    send_v2(p, "T", b"m")
    heartbeat(p, "G", "T")
    answer = p.call(RequestCode.PULL_MESSAGE, pull_header("G", "T", 0), version=409)
    assert (answer.code, answer.ext_fields["suggestWhichBrokerId"]) == (ResponseCode.SUCCESS, "1")
    update = p.call(
        RequestCode.UPDATE_BROKER_CONFIG, None, b"accessMessageInMemoryMaxRatio=40\n", version=409
    )
    assert update.code == ResponseCode.SUCCESS
    answer = p.call(RequestCode.PULL_MESSAGE, pull_header("G", "T", 0), version=409)
    assert (answer.code, answer.ext_fields["suggestWhichBrokerId"]) == (ResponseCode.SUCCESS, "0")


def test_a_55_slave_without_slave_read_enable_turns_pulls_away(tmp_path: Path) -> None:
    clock = Clock()
    slave = make_broker(tmp_path, clock, "5.5", brokerRole="SLAVE", brokerId="1")
    p = peer(slave, clock)
    answer = p.call(RequestCode.PULL_MESSAGE, pull_header("G", "T", 0), version=409)
    assert (answer.code, answer.remark) == (
        ResponseCode.SYSTEM_BUSY,
        "[REJECTREQUEST]system busy, start flow control for a while",
    )


def test_a_49_slave_refuses_topic_and_group_changes(tmp_path: Path) -> None:
    clock = Clock()
    slave = make_broker(tmp_path, clock, "4.9", brokerRole="SLAVE", brokerId="1")
    p = peer(slave, clock)
    for code, header in (
        (
            RequestCode.UPDATE_AND_CREATE_TOPIC,
            {
                "topic": "T",
                "defaultTopic": "TBW102",
                "readQueueNums": 1,
                "writeQueueNums": 1,
                "perm": 6,
                "topicFilterType": "SINGLE_TAG",
            },
        ),
        (RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "T"}),
        (RequestCode.DELETE_SUBSCRIPTIONGROUP, {"groupName": "G"}),
    ):
        answer = p.call(code, header, version=409)
        assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, SLAVE_CHANGE_REMARK)


def test_a_55_slave_refuses_a_server_side_offset_reset(tmp_path: Path) -> None:
    clock = Clock()
    slave = make_broker(tmp_path, clock, "5.5", brokerRole="SLAVE", brokerId="1")
    header = {"topic": "T", "group": "G", "timestamp": 0, "isForce": True}
    answer = peer(slave, clock).call(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header, version=513)
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, "Can not reset offset in slave broker")


def test_a_55_slave_copies_its_masters_tables_about_once_a_minute() -> None:
    """5.5.0 checks every 3 s from 10 s after start and starts a round once more than 60 s passed since
    the last (lastSyncTimeMs, set at start): rounds at 61 s, 124 s, 187 s (4.9.7: 3 s, then every 10 s)."""
    clock = Clock()
    sync = SlaveSynchronize(clock, lambda master, code: succeed(None), [])
    rounds: list[float] = []
    sync.sync_all = lambda: rounds.append(clock.seconds())  # type: ignore[method-assign,assignment,return-value]
    for at in range(10, 200, 3):
        clock.advance(at - clock.seconds())
        sync.sync_when_due()
    assert rounds == [61, 124, 187]
