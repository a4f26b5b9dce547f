"""What the 5.x broker tests share: a broker target (the twin or the shared real 5.5.0 cluster) spoken
to over plain remoting with the 5.5.0 client's version, and the requests they build."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import CURRENT_VERSION_5, RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.message import MessageExt, decode_message_records
from rmqtwin.conformance.runner import TWIN_BROKER_CONF
from tests.fakes.helpers import call, update_and_create_topic

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
        return update_and_create_topic(self.broker_addr, topic, queues, attributes, version=CURRENT_VERSION_5)

    def topic_config(self, topic: str) -> Any:
        answer = self.call(RequestCode.GET_TOPIC_CONFIG, {"topic": topic})
        assert answer.code == ResponseCode.SUCCESS, (answer.code, answer.remark)
        return fastjson.loads(answer.body or b"")

    def send(
        self,
        topic: str,
        properties: str,
        code: int = RequestCode.SEND_MESSAGE_V2,
        body: bytes = b"body",
        reconsume_times: int = 0,
    ) -> RemotingCommand:
        """A send as the 5.x producer writes it: SEND_MESSAGE's named header, SEND_MESSAGE_V2's and
        SEND_BATCH_MESSAGE's letters (a batch's ``body`` from ``encode_batch``)."""
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
                    "reconsumeTimes": str(reconsume_times),
                    "unitMode": "false",
                    "batch": "false",
                },
                body,
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
            "j": str(reconsume_times),
            "k": "false",
            "m": "true" if code == RequestCode.SEND_BATCH_MESSAGE else "false",
        }
        return self.call(code, ext, body)


def broker_target(
    request: pytest.FixtureRequest, rocketmq_factory: Any, overrides: dict[str, object] | None = None
) -> Broker:
    """The target ``request.param`` names: a twin shared by broker.conf (the suite's settings with
    ``overrides``) or the real 5.5.0 cluster shared the same way (``overrides`` start one of its own)."""
    name = str(request.param)
    overrides = overrides or {}
    if name == "rmqtwin":
        twins = request.session.__dict__.setdefault("_rmqtwin_target_twins", {})
        key = tuple(sorted(overrides.items()))
        if key not in twins:
            twins[key] = rocketmq_factory(
                broker_conf={**TWIN_BROKER_CONF, **overrides}, broker_name="broker-a"
            )
        twin = twins[key]
        return Broker(name, twin.namesrv_addr, twin.broker_addr)
    real = request.getfixturevalue("real_rocketmq_factory")("5", broker_conf_overrides=overrides)
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


def pop_until(
    broker: Broker, topic: str, group: str, count: int, timeout: float = 30.0, **extra: str
) -> list[MessageExt]:
    """Pop until ``count`` messages came (or ``timeout`` passed): what comes back later (revived,
    timer messages) is due in real time, on the twin as on the real broker."""
    got: list[MessageExt] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        answer = pop_request(broker, topic, group, **extra)
        if answer.code == ResponseCode.SUCCESS:
            got += decode_message_records(answer.body or b"")
    return got


def ack_request(broker: Broker, topic: str, group: str, msg: MessageExt, extra_info: str) -> RemotingCommand:
    """ACK_MESSAGE of a popped message by its ``extraInfo`` (the handle the client builds)."""
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(msg.queue_id),
        "extraInfo": extra_info,
        "offset": str(msg.queue_offset),
    }
    return broker.call(RequestCode.ACK_MESSAGE, ext)


def assert_refuses_missing_topic_and_bad_queue(
    ask: Callable[..., RemotingCommand], topic: str, missing_topic: str, read_queues: int
) -> None:
    """POP, PEEK, NOTIFICATION and POLLING_INFO refuse alike (``PopProcessor``'s checks, 5.5.0's
    words): ``ask(topic, queueId=...)`` of a topic that does not exist, of a queue past the topic's."""
    missing = ask(missing_topic, queueId="-1")
    assert missing.code == ResponseCode.TOPIC_NOT_EXIST
    remark = missing.remark or ""
    assert remark.startswith(f"topic[{missing_topic}]") and "not exist, apply first please!" in remark
    bad = read_queues + 5
    bad_queue = ask(topic, queueId=str(bad))
    assert bad_queue.code == ResponseCode.INVALID_PARAMETER
    assert (bad_queue.remark or "").startswith(
        f"queueId[{bad}] is illegal, topic:[{topic}] topicConfig.readQueueNums:[{read_queues}]"
    )
