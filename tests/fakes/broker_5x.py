"""What the 5.x broker tests share: a broker target (the twin or the shared real 5.5.0 cluster) spoken
to over plain remoting with the 5.5.0 client's version, and the requests they build."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pytest

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import CURRENT_VERSION_5, RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.conformance.runner import TWIN_BROKER_CONF
from tests.fakes.helpers import call

TARGETS = ["rmqtwin", pytest.param("real-5", marks=pytest.mark.real)]


@dataclass
class Broker:
    name: str
    namesrv_addr: str
    broker_addr: str

    def call(
        self, code: int, ext: dict[str, str] | None = None, body: bytes | None = None
    ) -> RemotingCommand:
        return call(self.broker_addr, code, ext, body, version=CURRENT_VERSION_5)

    def create_topic(self, topic: str, attributes: str | None = None, queues: int = 4) -> RemotingCommand:
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
        return self.call(RequestCode.UPDATE_AND_CREATE_TOPIC, ext)

    def topic_config(self, topic: str) -> Any:
        answer = self.call(RequestCode.GET_TOPIC_CONFIG, {"topic": topic})
        assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
        return fastjson.loads(answer.body or b"")

    def send(self, topic: str, properties: str, code: int = RequestCode.SEND_MESSAGE_V2) -> RemotingCommand:
        if code == RequestCode.SEND_MESSAGE:
            return self.call(
                code,
                {
                    "producerGroup": "PG_5x",
                    "topic": topic,
                    "defaultTopic": "TBW102",
                    "defaultTopicQueueNums": "4",
                    "queueId": "0",
                    "sysFlag": "0",
                    "bornTimestamp": "0",
                    "flag": "0",
                    "properties": properties,
                    "reconsumeTimes": "0",
                    "unitMode": "false",
                    "batch": "false",
                },
                b"body",
            )
        ext = {
            "a": "PG_5x",
            "b": topic,
            "c": "TBW102",
            "d": "4",
            "e": "0",
            "f": "0",
            "g": "0",
            "h": "0",
            "i": properties,
            "j": "0",
            "k": "false",
            "m": "false",
        }
        return self.call(code, ext, b"body")


def broker_target(request: pytest.FixtureRequest, rocketmq_factory: Any) -> Broker:
    """The target ``request.param`` names: the twin the Java conformance targets share (one per
    broker.conf) or the shared real 5.5.0 cluster."""
    name = str(request.param)
    if name == "rmqtwin":
        # The same twin the Java conformance targets share (one per broker.conf).
        twins = request.session.__dict__.setdefault("_rmqtwin_target_twins", {})
        if () not in twins:
            twins[()] = rocketmq_factory(broker_conf=TWIN_BROKER_CONF, broker_name="broker-a")
        twin = twins[()]
        return Broker(name, twin.namesrv_addr, twin.broker_addr)
    real = request.getfixturevalue("real_rocketmq_factory")("5")
    return Broker(name, real.namesrv_addr, real.broker_addr)


def msg_props(**pairs: str) -> str:
    """A message's properties string: name\x01value\x02 each."""
    return "".join(f"{k}\x01{v}\x02" for k, v in pairs.items())


def pop_request(broker: Broker, topic: str, group: str, **extra: str) -> RemotingCommand:
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": "-1",
        "maxMsgNums": "32",
        "invisibleTime": "5000",
        "pollTime": "1000",
        "bornTime": str(int(time.time() * 1000)),
        "initMode": "0",
        "expType": "TAG",
        "exp": "*",
        "order": "false",
    }
    return broker.call(RequestCode.POP_MESSAGE, {**ext, **extra})
