"""The ``version`` of what a server sends is its own release's ``MQVersion``, whatever the request's.

Real 4.9.7 sends 407 and real 5.5.0 sends 513 in every answer of the name server and the broker, and
in the requests the broker sends its clients (NOTIFY_CONSUMER_IDS_CHANGED); GET_BROKER_RUNTIME_INFO
names the release (4.9.7 also gives its ordinal, 5.5.0 no longer does). The same literal observations
for the twin of each line and for the shared real cluster of that line.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Callable
from dataclasses import dataclass

import orjson
import pytest

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import CURRENT_VERSION_4, CURRENT_VERSION_5, RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.codec.connection import RemotingConnection, RequestReceived, ResponseReceived
from rmqtwin.fakes.pytest_plugin import RocketMQFactory

EXPECTED = {"4.9": (407, "V4_9_7", "407"), "5.5": (513, "V5_5_0", None)}
"""Line → (version in every command sent, brokerVersionDesc, brokerVersion)."""
TARGETS = [
    "twin-4.9",
    "twin-5.5",
    pytest.param("real-4.9", marks=pytest.mark.real),
    pytest.param("real-5.5", marks=pytest.mark.real),
]


@dataclass
class Target:
    line: str
    namesrv_addr: str
    broker_addr: str


@pytest.fixture(params=TARGETS)
def target(request: pytest.FixtureRequest, rocketmq_factory: RocketMQFactory) -> Target:
    kind, _, line = str(request.param).partition("-")
    if kind == "twin":
        twin = rocketmq_factory(rocketmq_version=line)
        return Target(line, twin.namesrv_addr, twin.broker_addr)
    real = request.getfixturevalue("real_rocketmq_factory")("5" if line == "5.5" else line)
    return Target(line, real.namesrv_addr, real.broker_addr)


class Client:
    """One connection; keeps the requests the server sends."""

    def __init__(self, addr: str) -> None:
        host, _, port = addr.rpartition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=10)
        self.conn = RemotingConnection(first_opaque=1)
        self.requests: list[RemotingCommand] = []
        self.answers: dict[int, RemotingCommand] = {}

    def call(self, request: RemotingCommand) -> RemotingCommand:
        opaque = self.conn.send_request(request, now=0, timeout=10)
        self.sock.sendall(self.conn.data_to_send())
        while opaque not in self.answers:
            self._read()
        return self.answers.pop(opaque)

    def request(self, code: int) -> RemotingCommand:
        while not any(r.code == code for r in self.requests):
            self._read()
        return next(r for r in self.requests if r.code == code)

    def _read(self) -> None:
        data = self.sock.recv(65536)
        assert data, "connection closed"
        for event in self.conn.receive_data(data):
            if isinstance(event, ResponseReceived):
                self.answers[event.command.opaque] = event.command
            elif isinstance(event, RequestReceived):
                self.requests.append(event.command)

    def close(self) -> None:
        self.sock.close()


RUNTIME_INFO_KEYS = {
    *(
        "EndTransactionQueueSize",
        "EndTransactionThreadPoolQueueCapacity",
        "bootTimestamp",
        "brokerVersionDesc",
    ),
    *("commitLogDirCapacity", "commitLogDiskRatio", "commitLogDiskRatio_*", "commitLogMaxOffset"),
    *("commitLogMinOffset", "consumeQueueDiskRatio", "dispatchBehindBytes", "dispatchMaxBuffer"),
    *("earliestMessageTimeStamp", "getFoundTps", "getMessageEntireTimeMax", "getMissTps", "getTotalTps"),
    *("msgGetTotalTodayMorning", "msgGetTotalTodayNow", "msgGetTotalYesterdayMorning"),
    *("msgPutTotalTodayMorning", "msgPutTotalTodayNow", "msgPutTotalYesterdayMorning"),
    *("pageCacheLockTimeMills", "pullThreadPoolQueueCapacity", "pullThreadPoolQueueHeadWaitTimeMills"),
    *("pullThreadPoolQueueSize", "putLatency99", "putLatency999", "putMessageAverageSize"),
    *("putMessageDistributeTime", "putMessageEntireTimeMax", "putMessageFailedTimes", "putMessageSizeTotal"),
    *(
        "putMessageTimesTotal",
        "putTps",
        "queryThreadPoolQueueCapacity",
        "queryThreadPoolQueueHeadWaitTimeMills",
    ),
    *("queryThreadPoolQueueSize", "remainHowManyDataToFlush", "remainTransientStoreBufferNumbs", "runtime"),
    *("sendThreadPoolQueueCapacity", "sendThreadPoolQueueHeadWaitTimeMills", "sendThreadPoolQueueSize"),
    "startAcceptSendRequestTimeStamp",
}
"""GET_BROKER_RUNTIME_INFO's keys on both lines (AdminBrokerProcessor.prepareRuntimeInfo and the store's)."""
RUNTIME_INFO_KEYS_4 = {"brokerVersion", "getTransferedTps"}
RUNTIME_INFO_KEYS_5 = {
    *(
        "brokerActive",
        "getTransferredTps",
        "ackThreadPoolQueueCapacity",
        "ackThreadPoolQueueHeadWaitTimeMills",
    ),
    *(
        "ackThreadPoolQueueSize",
        "litePullThreadPoolQueueCapacity",
        "litePullThreadPoolQueueHeadWaitTimeMills",
    ),
    *("litePullThreadPoolQueueSize", "timerCongestNum", "timerDequeueTps", "timerEnqueueTps"),
    *("timerOffsetBehind", "timerReadBehind"),
}


def _heartbeat(client_id: str, group: str, version: int) -> RemotingCommand:
    data = {
        "groupName": group,
        "consumeType": "CONSUME_PASSIVELY",
        "messageModel": "CLUSTERING",
        "consumeFromWhere": "CONSUME_FROM_LAST_OFFSET",
        "subscriptionDataSet": [],
        "unitMode": False,
    }
    body = {"clientID": client_id, "producerDataSet": [], "consumerDataSet": [data]}
    return create_request(RequestCode.HEART_BEAT, body=orjson.dumps(body), version=version)


def test_every_command_a_server_sends_carries_its_own_release_version(
    target: Target, unique_name: Callable[[str], str]
) -> None:
    version, desc, ordinal = EXPECTED[target.line]
    namesrv, first, second = (
        Client(target.namesrv_addr),
        Client(target.broker_addr),
        Client(target.broker_addr),
    )
    try:
        seen: list[tuple[str, int]] = []
        for asked in (0, CURRENT_VERSION_4, CURRENT_VERSION_5):
            route = namesrv.call(
                create_request(
                    RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": unique_name("No")}, version=asked
                )
            )
            cluster = namesrv.call(create_request(RequestCode.GET_BROKER_CLUSTER_INFO, version=asked))
            offset = first.call(
                create_request(
                    RequestCode.GET_MAX_OFFSET, {"topic": unique_name("No"), "queueId": "0"}, version=asked
                )
            )
            unknown = first.call(create_request(9999, version=asked))
            seen += [
                (f"route {route.code}", route.version),
                (f"cluster {cluster.code}", cluster.version),
                (f"max offset {offset.code}", offset.version),
                (f"unsupported {unknown.code}", unknown.version),
            ]
        group = unique_name("G")
        seen.append(("heartbeat", first.call(_heartbeat("127.0.0.1@1#v", group, CURRENT_VERSION_4)).version))
        seen.append(("heartbeat", second.call(_heartbeat("127.0.0.1@2#v", group, 0)).version))
        notify = first.request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED)
        seen.append(("NOTIFY_CONSUMER_IDS_CHANGED", notify.version))
        info = first.call(create_request(RequestCode.GET_BROKER_RUNTIME_INFO, version=CURRENT_VERSION_5))
    finally:
        for client in (namesrv, first, second):
            client.close()
    codes = [
        f"route {ResponseCode.TOPIC_NOT_EXIST}",
        f"cluster {ResponseCode.SUCCESS}",
        f"max offset {ResponseCode.SUCCESS}",
        f"unsupported {ResponseCode.REQUEST_CODE_NOT_SUPPORTED}",
    ]
    assert seen == [(c, version) for c in codes * 3] + [
        ("heartbeat", version),
        ("heartbeat", version),
        ("NOTIFY_CONSUMER_IDS_CHANGED", version),
    ]
    table = fastjson.loads(info.body or b"")["table"]
    assert (table["brokerVersionDesc"], table.get("brokerVersion")) == (desc, ordinal)
    # The keys mqadmin brokerStatus prints; a commitlog path and each delay level delivered from so
    # far are part of two of them.
    keys = {re.sub(r"^(commitLogDiskRatio|scheduleMessageOffset)_.+", r"\1_*", key) for key in table}
    keys.discard("scheduleMessageOffset_*")  # only once a delayed message was delivered
    five = version == CURRENT_VERSION_5
    assert keys == RUNTIME_INFO_KEYS | (RUNTIME_INFO_KEYS_5 if five else RUNTIME_INFO_KEYS_4)
