"""Small recorded captures for the replay tests: a blocking client through the proxy in front of a twin.

The client speaks through the sans-IO codec over plain sockets; what it sends is what a Java client
sends for the same calls (SEND_MESSAGE_V2 letters, pull flags, heartbeat bodies), small enough to read.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import orjson
import pytest

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request, create_response
from rmqtwin.codec.connection import RemotingConnection, RequestReceived, ResponseReceived
from rmqtwin.codec.message import properties_to_string
from rmqtwin.fakes.pytest_plugin import RocketMQFactory, RunningTwin
from rmqtwin.probe import invoke_sync
from rmqtwin.proxy.process import ProxyProcess, start_proxy
from tests.fakes.helpers import update_and_create_topic

TOPIC = "ReplayT"
PRODUCER_GROUP = "replay-pg"
CONSUMER_GROUP = "replay-cg"
PRODUCER_ID = "127.0.0.1@4242#replay-producer"
CONSUMER_ID = "127.0.0.1@4343#replay-consumer"


class Client:
    """One persistent connection; requests may be pipelined, answers collected by opaque."""

    def __init__(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.conn = RemotingConnection(first_opaque=1)
        self.answers: dict[int, RemotingCommand] = {}
        self.requests: list[RemotingCommand] = []
        """Requests the server sent (CHECK_TRANSACTION_STATE, ...), in order."""

    def send(self, request: RemotingCommand) -> int:
        opaque = self.conn.send_request(request, now=0, timeout=60)
        self.sock.sendall(self.conn.data_to_send())
        return opaque

    def answer(self, opaque: int) -> RemotingCommand:
        while opaque not in self.answers:
            data = self.sock.recv(65536)
            assert data, "connection closed before the answer"
            self._receive(data)
        return self.answers.pop(opaque)

    def request(self, code: int) -> RemotingCommand:
        """The next request the server sent with ``code`` (waiting for it)."""
        while not any(r.code == code for r in self.requests):
            data = self.sock.recv(65536)
            assert data, "connection closed before the request"
            self._receive(data)
        found = next(r for r in self.requests if r.code == code)
        self.requests.remove(found)
        return found

    def _receive(self, data: bytes) -> None:
        for event in self.conn.receive_data(data):
            if isinstance(event, ResponseReceived):
                self.answers[event.command.opaque] = event.command
            elif isinstance(event, RequestReceived):
                self.requests.append(event.command)

    def call(self, request: RemotingCommand) -> RemotingCommand:
        return self.answer(self.send(request))

    def respond(self, request: RemotingCommand, response: RemotingCommand) -> None:
        """Answer a request the server sent."""
        self.conn.send_response(request, response)
        self.sock.sendall(self.conn.data_to_send())

    def close(self) -> None:
        self.sock.close()


def send_request(body: bytes, queue: int, index: int, *, half: bool = False) -> RemotingCommand:
    """SEND_MESSAGE_V2 as the Java producer writes it; ``half``: a transaction's half message."""
    uniq = f"7F0000010001000000000000{index:08X}"
    props = {"KEYS": f"k{index}", "TAGS": "TagA", "UNIQ_KEY": uniq, "WAIT": "true"}
    if half:
        props |= {"TRAN_MSG": "true", "PGROUP": PRODUCER_GROUP}
    ext = {
        "a": PRODUCER_GROUP,
        "b": TOPIC,
        "c": "TBW102",
        "d": "4",
        "e": str(queue),
        "f": "4" if half else "0",
        # a half message born now: the broker discards one older than fileReservedTime unchecked
        "g": str(time.time_ns() // 1_000_000 if half else 1_700_000_000_000 + index),
        "h": "0",
        "i": properties_to_string(props, trailing_separator=False),
        "j": "0",
        "k": "false",
        "m": "false",
    }
    return create_request(RequestCode.SEND_MESSAGE_V2, ext, body)


def pull_request(queue: int, offset: int) -> RemotingCommand:
    ext = {
        "consumerGroup": CONSUMER_GROUP,
        "topic": TOPIC,
        "queueId": str(queue),
        "queueOffset": str(offset),
        "maxMsgNums": "32",
        "sysFlag": "0",
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subscription": "*",
        "subVersion": "0",
        "expressionType": "TAG",
    }
    return create_request(RequestCode.PULL_MESSAGE, ext)


def heartbeat(
    client_id: str, *, consumer: bool, group: str = CONSUMER_GROUP, topic: str = TOPIC
) -> RemotingCommand:
    body: dict[str, object] = {"clientID": client_id, "consumerDataSet": [], "producerDataSet": []}
    if consumer:
        body["consumerDataSet"] = [
            {
                "groupName": group,
                "consumeType": "CONSUME_PASSIVELY",
                "messageModel": "CLUSTERING",
                "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
                "subscriptionDataSet": [
                    {
                        "classFilterMode": False,
                        "topic": topic,
                        "subString": "*",
                        "tagsSet": [],
                        "codeSet": [],
                        "subVersion": 0,
                        "expressionType": "TAG",
                    }
                ],
                "unitMode": False,
            }
        ]
    else:
        body["producerDataSet"] = [{"groupName": PRODUCER_GROUP}]
    return create_request(RequestCode.HEART_BEAT, body=orjson.dumps(body))


def broker_behind(proxy: ProxyProcess) -> tuple[Client, str]:
    """A client of the name server behind ``proxy`` and the broker address its route of ``TOPIC`` gives
    (the proxy's listener for that broker)."""
    namesrv = Client(proxy.namesrv)
    route = namesrv.call(create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": TOPIC}))
    assert route.code == ResponseCode.SUCCESS, route
    addrs = fastjson.loads(route.body or b"")["brokerDatas"][0]["brokerAddrs"]
    return namesrv, addrs.get(0) or addrs["0"]


def create_topic(twin: RunningTwin, prefill: int, topic: str = TOPIC) -> None:
    """The test topic (2 queues) with ``prefill`` messages already in queue 0 (so offsets differ)."""
    assert update_and_create_topic(twin.broker_addr, topic, queues=2).code == 0
    for i in range(prefill):
        answer = invoke_sync(twin.broker_addr, send_request(b"old %d" % i, 0, 1000 + i))
        assert answer.code == ResponseCode.SUCCESS, answer


def record(twin: RunningTwin, capture: Path, messages: int = 5) -> None:
    """Producer then consumer through a proxy in front of ``twin``: route, heartbeats, pipelined sends
    to queue 0, a pull from the first new offset, an offset commit and its query."""
    proxy = start_proxy(twin.namesrv_addr, capture)
    try:
        namesrv, broker = broker_behind(proxy)
        producer = Client(broker)
        assert producer.call(heartbeat(PRODUCER_ID, consumer=False)).code == ResponseCode.SUCCESS
        sent = [producer.send(send_request(b"body %d" % i, 0, i)) for i in range(messages)]
        offsets = [int(producer.answer(op).ext("queueOffset") or -1) for op in sent]
        time.sleep(0.2)  # the replay follows recorded time: leave the sends well ahead of the pull
        consumer = Client(broker)
        assert consumer.call(heartbeat(CONSUMER_ID, consumer=True)).code == ResponseCode.SUCCESS
        ids = consumer.call(
            create_request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": CONSUMER_GROUP})
        )
        assert ids.code == ResponseCode.SUCCESS
        pulled = consumer.call(pull_request(0, offsets[0]))
        assert pulled.code == ResponseCode.SUCCESS, pulled
        commit = {"consumerGroup": CONSUMER_GROUP, "topic": TOPIC, "queueId": "0"}
        commit["commitOffset"] = str(offsets[-1] + 1)
        assert consumer.call(create_request(RequestCode.UPDATE_CONSUMER_OFFSET, commit)).code == 0
        query = {"consumerGroup": CONSUMER_GROUP, "topic": TOPIC, "queueId": "0"}
        assert consumer.call(create_request(RequestCode.QUERY_CONSUMER_OFFSET, query)).code == 0
        for client in (namesrv, producer, consumer):
            client.close()
        time.sleep(0.1)
    finally:
        proxy.stop()


CHECKING_BROKER = {"transactionCheckInterval": 300, "transactionTimeOut": 500}
"""A broker that checks a half message half a second old, every 0.3 s."""


def record_check_back(twin: RunningTwin, capture: Path) -> None:
    """A transaction the producer leaves UNKNOW and commits when the broker checks it back, then a pull
    of the committed message, through a proxy in front of ``twin`` (started with ``CHECKING_BROKER``)."""
    proxy = start_proxy(twin.namesrv_addr, capture)
    try:
        namesrv, broker = broker_behind(proxy)
        producer = Client(broker)
        assert producer.call(heartbeat(PRODUCER_ID, consumer=False)).code == ResponseCode.SUCCESS
        half = producer.call(send_request(b"committed on check", 0, 77, half=True))
        assert half.code == ResponseCode.SUCCESS, half
        uniq = f"7F0000010001000000000000{77:08X}"
        end = {
            "producerGroup": PRODUCER_GROUP,
            "tranStateTableOffset": half.ext("queueOffset") or "0",
            "commitLogOffset": "0",
            "commitOrRollback": "0",  # UNKNOW: TRANSACTION_NOT_TYPE
            "fromTransactionCheck": "false",
            "msgId": uniq,
            "transactionId": half.ext("transactionId") or uniq,
        }
        producer.send(create_request(RequestCode.END_TRANSACTION, end, oneway=True))
        check = producer.request(RequestCode.CHECK_TRANSACTION_STATE)
        assert check.ext("msgId") == uniq, check
        end |= {
            "tranStateTableOffset": check.ext("tranStateTableOffset") or "0",
            "commitLogOffset": check.ext("commitLogOffset") or "0",
            "commitOrRollback": "8",  # COMMIT_TYPE
            "fromTransactionCheck": "true",
            "transactionId": check.ext("transactionId") or uniq,
        }
        before = max_offset(twin)
        producer.send(create_request(RequestCode.END_TRANSACTION, end, oneway=True))
        deadline = time.monotonic() + 30
        while max_offset(twin) == before:
            assert time.monotonic() < deadline, "the commit did not store the message"
            time.sleep(0.05)
        consumer = Client(broker)
        assert consumer.call(heartbeat(CONSUMER_ID, consumer=True)).code == ResponseCode.SUCCESS
        pulled = consumer.call(pull_request(0, before))
        assert pulled.code == ResponseCode.SUCCESS, pulled
        for client in (namesrv, producer, consumer):
            client.close()
        time.sleep(0.1)
    finally:
        proxy.stop()


RUNNING_INFO = orjson.dumps(
    {
        "properties": {"PROP_CONSUME_TYPE": "CONSUME_PASSIVELY", "PROP_THREADPOOL_CORE_SIZE": "20"},
        "subscriptionSet": [{"topic": TOPIC, "subString": "*", "tagsSet": [], "codeSet": []}],
        "mqTable": {},
        "statusTable": {},
    }
)
"""What the recorded consumer answers GET_CONSUMER_RUNNING_INFO (a ConsumerRunningInfo as Java writes it)."""


def record_running_info(twin: RunningTwin, capture: Path) -> None:
    """mqadmin consumerStatus, through a proxy in front of ``twin``: the admin asks the broker for a
    consumer's running info, the broker relays GET_CONSUMER_RUNNING_INFO to the consumer, which answers
    ``RUNNING_INFO``; the consumer heartbeats again afterwards (its connection lives on)."""
    proxy = start_proxy(twin.namesrv_addr, capture)
    try:
        namesrv, broker = broker_behind(proxy)
        consumer = Client(broker)
        assert consumer.call(heartbeat(CONSUMER_ID, consumer=True)).code == ResponseCode.SUCCESS
        admin = Client(broker)
        ask = {"consumerGroup": CONSUMER_GROUP, "clientId": CONSUMER_ID, "jstackEnable": "false"}
        opaque = admin.send(create_request(RequestCode.GET_CONSUMER_RUNNING_INFO, ask))
        relayed = consumer.request(RequestCode.GET_CONSUMER_RUNNING_INFO)
        consumer.respond(relayed, create_response(relayed, ResponseCode.SUCCESS, body=RUNNING_INFO))
        answer = admin.answer(opaque)
        assert (answer.code, answer.body) == (ResponseCode.SUCCESS, RUNNING_INFO), answer
        assert consumer.call(heartbeat(CONSUMER_ID, consumer=True)).code == ResponseCode.SUCCESS
        for client in (namesrv, consumer, admin):
            client.close()
        time.sleep(0.1)
    finally:
        proxy.stop()


def consumer_offset(twin: RunningTwin, queue: int = 0) -> int:
    query = {"consumerGroup": CONSUMER_GROUP, "topic": TOPIC, "queueId": str(queue)}
    answer = invoke_sync(twin.broker_addr, create_request(RequestCode.QUERY_CONSUMER_OFFSET, query))
    return int(answer.ext("offset") or -1)


def max_offset(twin: RunningTwin, queue: int = 0, topic: str = TOPIC) -> int:
    request = create_request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue)})
    return int(invoke_sync(twin.broker_addr, request).ext("offset") or -1)


@pytest.fixture(scope="session")
def recorded(rocketmq_factory: RocketMQFactory, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small capture of :func:`record`, recorded once in front of a twin that held one message."""
    twin = rocketmq_factory()
    try:
        create_topic(twin, prefill=1)
        capture = tmp_path_factory.mktemp("replay") / "small.rmqcap"
        record(twin, capture)
    finally:
        twin.stop()
    return capture
