"""RECALL_MESSAGE (5.x): take back a timer message before its time, by the send answer's ``recallHandle``.

Follows ``RecallMessageProcessor`` and ``RecallMessageHandle`` of 5.5.0. A timer message's send answer
carries ``recallHandle``: base64url of ``v1 <topic> <brokerName> <TIMER_OUT_MS + 1> <UNIQ_KEY>``. A recall
stores a marker message in the timer topic due at that same second, carrying ``TIMER_DEL_UNIQKEY``
``<topic>+<UNIQ_KEY>``; the timer service drops the message the marker names and delivers neither
(``TimerMessageStore``'s delete list). Refused unless ``recallMessageEnable`` (off by default).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.headers import RecallMessageRequestHeader, RecallMessageResponseHeader
from rmqtwin.fakes.broker.timer import (
    RECALL_HANDLE_VERSION,
    TIMER_MAX_DELAY_SEC,
    TIMER_TOPIC,
    timer_delete_key,
    transform_timer_message,
)
from rmqtwin.fakes.broker.topics import is_writeable
from rmqtwin.fakes.dispatch import NOT_SET_REMARK, Channel, decode_header, host_tuple, response
from rmqtwin.store_mirror.commitlog import PutMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner, properties_to_string

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.stats import BrokerStats
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore

RECALL_MESSAGE_TAG = "_RECALL_TAG_"
_INVALID = "recall handle is invalid"


def decode_recall_handle(handle: str | None) -> tuple[str, str, str, str]:
    """``RecallMessageHandle.decodeHandle``: (topic, brokerName, timestamp, messageId); ValueError
    with 5.5.0's message for what it refuses."""
    if not handle:
        raise ValueError(_INVALID)
    data = handle.encode("utf-8")
    try:
        raw = base64.b64decode(data + b"=" * (-len(data) % 4), altchars=b"-_", validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(_INVALID) from None
    items = raw.decode("utf-8", "replace").split(" ")
    while len(items) > 1 and items[-1] == "":
        items.pop()  # String.split drops trailing empty strings
    if items[0] != RECALL_HANDLE_VERSION or len(items) < 5:
        raise ValueError(_INVALID)
    return items[1], items[2], items[3], items[4]


@dataclass(eq=False, kw_only=True)
class RecallProcessor:
    config: BrokerConfig
    topics: TopicTable
    store: MessageStore
    store_host: tuple[str, int]
    stats: BrokerStats
    now_ms: Callable[[], int]

    def recall_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        config = self.config
        header = decode_header(request, RecallMessageRequestHeader)
        answer = RecallMessageResponseHeader(msg_region=config.region_id)

        def refuse(code: int, remark: str) -> RemotingCommand:
            return response(code, remark, answer)

        if not config.recall_message_enable:
            return refuse(ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")
        if not is_writeable(config.broker_permission):
            return refuse(ResponseCode.SERVICE_NOT_AVAILABLE, "recall failed, broker service not available")
        if self.topics.get(header.topic) is None:
            return refuse(ResponseCode.TOPIC_NOT_EXIST, f"recall failed, the topic[{header.topic}] not exist")
        try:
            topic, broker_name, timestamp, message_id = decode_recall_handle(header.recall_handle)
        except ValueError as exc:
            return refuse(ResponseCode.ILLEGAL_OPERATION, str(exc))
        if header.topic != topic:
            return refuse(ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match")
        if broker_name != config.broker_name:
            return refuse(ResponseCode.ILLEGAL_OPERATION, "recall failed, broker service not available")
        now = self.now_ms()
        try:
            time_left = int(timestamp) - now
        except ValueError:
            time_left = -1 - now  # NumberUtils.toLong's -1
        if time_left <= 0 or time_left >= TIMER_MAX_DELAY_SEC * 1000:
            return refuse(ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid")

        props = {
            "TAGS": RECALL_MESSAGE_TAG,
            "TIMER_DEL_UNIQKEY": timer_delete_key(topic, message_id),
            "UNIQ_KEY": message_id,
            "TIMER_DELIVER_MS": timestamp,
            "BORN_TIMESTAMP": str(now),
            "TRACE_CONTEXT": "",
        }
        if header.producer_group is not None:
            props["PGROUP"] = header.producer_group
        if transform_timer_message(props, topic, 0, now) is not True:
            return refuse(ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        marker = MessageExtBrokerInner(
            topic=TIMER_TOPIC,
            body=b"0",
            queue_id=0,
            flag=0,
            properties=props,
            properties_string=properties_to_string(props),
            sys_flag=0,
            born_timestamp=now,
            born_host=host_tuple(channel.remote_addr),
            store_host=self.store_host,
            reconsume_times=0,
        )
        result = self.store.put_message(marker)
        if result.status is not PutMessageStatus.PUT_OK:
            return refuse(ResponseCode.SYSTEM_ERROR, "recall failed, execute error")
        self.stats.on_put(TIMER_TOPIC, 1)
        answer.msg_id = message_id
        return response(ResponseCode.SUCCESS, NOT_SET_REMARK, answer)
