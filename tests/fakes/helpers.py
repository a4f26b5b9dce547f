"""Drive the fakes' protocols in memory (StringTransport for the wire, Clock for time), and one
synchronous request over a real socket for the tests of running servers."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from twisted.internet import defer
from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from rmqtwin.codec.codes import CURRENT_VERSION_4, RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.codec.connection import RemotingConnection, RequestReceived, ResponseReceived
from rmqtwin.fakes.broker.controller import BrokerController
from rmqtwin.fakes.config import BrokerConfig
from rmqtwin.fakes.server import RemotingProtocol
from rmqtwin.probe import invoke_sync
from rmqtwin.store_mirror.flush import TwistedFlushDriver
from rmqtwin.store_mirror.message_store import DefaultMessageStore, MessageStoreConfig

_port = [50000]


class Peer:
    """One client connection to a server protocol, in memory."""

    def __init__(self, dispatcher: Any, clock: Clock, on_close: Any = None) -> None:
        _port[0] += 1
        self.transport = StringTransport(
            hostAddress=IPv4Address("TCP", "127.0.0.1", 10911),
            peerAddress=IPv4Address("TCP", "127.0.0.1", _port[0]),
        )
        self.proto = RemotingProtocol(dispatcher, clock, on_close=on_close)
        self.proto.makeConnection(self.transport)
        self.client = RemotingConnection(first_opaque=1)
        self.clock = clock
        self.requests_from_server: list[RemotingCommand] = []

    def send(self, code: int, ext: dict[str, Any] | None = None, body: bytes | None = None, **kw: Any) -> int:
        fields = (
            None
            if ext is None
            else {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in ext.items()}
        )
        request = create_request(code, fields, body, **kw)
        opaque = self.client.send_request(request, now=self.clock.seconds(), timeout=3600)
        data = self.client.data_to_send()
        self.proto.dataReceived(data)
        return opaque

    def responses(self) -> list[RemotingCommand]:
        """Everything the server wrote since the last call (server requests kept aside)."""
        data = self.transport.value()
        self.transport.clear()
        out = []
        for event in self.client.receive_data(data):
            if isinstance(event, ResponseReceived):
                out.append(event.command)
            elif isinstance(event, RequestReceived):
                self.requests_from_server.append(event.command)
        return out

    def call(
        self, code: int, ext: dict[str, Any] | None = None, body: bytes | None = None, **kw: Any
    ) -> RemotingCommand:
        opaque = self.send(code, ext, body, **kw)
        answers = [r for r in self.responses() if r.opaque == opaque]
        assert len(answers) == 1, f"expected one response to code {code}, got {answers}"
        return answers[0]

    def close(self) -> None:
        self.proto.connectionLost(None)


EPOCH = 1_700_000_000
"""Where the tests' clocks start (2023-11-14): message and offset times far from zero, as a real broker's."""


@contextmanager
def clocked_broker(
    tmp_path: Any, rocketmq_version: str = "5.5", **props: str
) -> Iterator[tuple[BrokerController, Clock]]:
    """A started broker (:func:`make_broker`) on a Clock at :data:`EPOCH`, shut down on exit."""
    clock = Clock()
    clock.advance(EPOCH)
    broker = make_broker(tmp_path, clock, rocketmq_version, **props)
    try:
        yield broker, clock
    finally:
        broker.shutdown()


def make_broker(tmp_path: Any, clock: Clock, rocketmq_version: str = "5.5", **props: str) -> BrokerController:
    config = BrokerConfig.from_properties({"brokerName": "broker-a", "brokerIP1": "127.0.0.1", **props})
    config.rocketmq_version = rocketmq_version
    store_dir = os.path.join(str(tmp_path), "store")
    store_config = MessageStoreConfig(
        mapped_file_size_commit_log=1024 * 1024,
        mapped_file_size_consume_queue=20 * 1000,
        message_delay_level=config.message_delay_level,
        max_message_size=config.max_message_size,
        broker_role=config.broker_role,
        access_message_in_memory_max_ratio=config.access_message_in_memory_max_ratio,
    )
    store = DefaultMessageStore(
        store_dir,
        store_config,
        flush=TwistedFlushDriver(clock, defer.maybeDeferred),
        now_ms=lambda: int(clock.seconds() * 1000),
    )
    broker = BrokerController(config, store_dir, clock, store=store)
    assert broker.load()
    broker.start()
    return broker


def send_v2(
    peer: Peer,
    topic: str,
    body: bytes,
    *,
    tags: str | None = None,
    keys: str | None = None,
    queue_id: int = 0,
    props: dict[str, str] | None = None,
    group: str = "pg",
    sys_flag: int = 0,
    reconsume_times: int = 0,
) -> RemotingCommand:
    from rmqtwin.codec.codes import RequestCode

    properties = dict(props or {})
    if tags:
        properties["TAGS"] = tags
    if keys:
        properties["KEYS"] = keys
    properties.setdefault("WAIT", "true")
    return peer.call(
        RequestCode.SEND_MESSAGE_V2,
        {
            "a": group,
            "b": topic,
            "c": "TBW102",
            "d": 4,
            "e": queue_id,
            "f": 0,
            "g": int(peer.clock.seconds() * 1000),
            "h": sys_flag,
            "i": "\x02".join(f"{k}\x01{v}" for k, v in properties.items()),
            "j": reconsume_times,
            "k": False,
            "m": False,
        },
        body,
        version=409,
    )


# --- the broker's requests, in memory ------------------------------------------------------------------


def peer(broker: BrokerController, clock: Clock) -> Peer:
    return Peer(broker.dispatcher, clock, on_close=broker.channel_closed)


def heartbeat(p: Peer, group: str, topic: str, sub: str = "*", client_id: str = "127.0.0.1@1") -> None:
    from rmqtwin.codec.bodies import ConsumerData, HeartbeatData, ProducerData
    from rmqtwin.fakes.broker.filter import build_subscription_data

    data = build_subscription_data(topic, sub)
    data.sub_version = 1
    consumer = ConsumerData(
        group_name=group,
        consume_type="CONSUME_PASSIVELY",
        message_model="CLUSTERING",
        consume_from_where="CONSUME_FROM_FIRST_OFFSET",
        subscription_data_set=[data],
    )
    body = HeartbeatData(
        client_id=client_id,
        consumer_data_set=[consumer],
        producer_data_set=[ProducerData(group_name="CLIENT_INNER_PRODUCER")],
    ).encode()
    answer = p.call(RequestCode.HEART_BEAT, None, body, version=409)
    assert answer.code == ResponseCode.SUCCESS


def pull_header(
    group: str, topic: str, offset: int, *, suspend: int = 15000, sys_flag: int = 2, queue_id: int = 0
) -> dict[str, Any]:
    return {
        "consumerGroup": group,
        "topic": topic,
        "queueId": queue_id,
        "queueOffset": offset,
        "maxMsgNums": 32,
        "sysFlag": sys_flag,
        "commitOffset": 0,
        "suspendTimeoutMillis": suspend,
        "subVersion": 0,
    }


# --- over a real socket ----------------------------------------------------------------------------------


def call(
    addr: str,
    code: int,
    ext: dict[str, str] | None = None,
    body: bytes | None = None,
    *,
    version: int = CURRENT_VERSION_4,
) -> RemotingCommand:
    """One synchronous request over a fresh TCP connection (a 4.9.8 client's unless ``version``)."""
    return invoke_sync(addr, create_request(code, ext, body, version=version), timeout=10)


def update_and_create_topic(
    broker_addr: str,
    topic: str,
    queues: int = 4,
    attributes: str | None = None,
    *,
    version: int = CURRENT_VERSION_4,
) -> RemotingCommand:
    """The broker's answer to UPDATE_AND_CREATE_TOPIC as mqadmin updateTopic sends it (``attributes``
    such as ``+message.type=FIFO``, a 5.x request field)."""
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": str(queues),
        "writeQueueNums": str(queues),
        "perm": "6",
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
    }
    if attributes is not None:
        ext["attributes"] = attributes
    return call(broker_addr, RequestCode.UPDATE_AND_CREATE_TOPIC, ext, version=version)


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Poll ``condition`` (real time: for what another process or thread does) until it holds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f}s waiting for {what}"
        time.sleep(0.1)
