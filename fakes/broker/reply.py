"""SEND_REPLY_MESSAGE / SEND_REPLY_MESSAGE_V2 (``ReplyMessageProcessor``, the same on 4.9.7 and 5.5.0).

Request-reply: ``DefaultMQProducer.request`` sends a message carrying ``REPLY_TO_CLIENT`` (its client
id) and ``CORRELATION_ID``; the consumer answers with ``MessageUtil.createReplyMessage`` to
``<cluster>_REPLY_TOPIC``, which its producer sends as SEND_REPLY_MESSAGE(_V2). The broker pushes the
reply to the requester's channel (PUSH_REPLY_MESSAGE_TO_CLIENT, the producer table found by client id,
10 s) and answers the replier SUCCESS when the requester took it, SYSTEM_ERROR with Java's remark when
it is unknown, silent or refused. Then, as ``storeReplyMessageEnable`` (default true) asks, the reply
is stored like any message, whatever the push did, and the answer carries its offsets.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from twisted.internet.defer import Deferred, succeed
from twisted.python.failure import Failure

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.headers import ReplyMessageRequestHeader, SendMessageResponseHeader
from rmqtwin.codec.message import MessageConst, string_to_properties
from rmqtwin.fakes.broker.relay import CALL_CLIENT_TIMEOUT
from rmqtwin.fakes.broker.send import send_header
from rmqtwin.fakes.dispatch import Channel, host_tuple, request_command, response
from rmqtwin.store_mirror.commitlog import PutMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner, properties_to_string

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.codec.headers import SendMessageRequestHeader
    from rmqtwin.fakes.broker.clients import ProducerManager
    from rmqtwin.fakes.broker.send import SendProcessor

_STORED = (
    PutMessageStatus.PUT_OK,
    PutMessageStatus.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE,
)


@dataclass(eq=False, kw_only=True)
class ReplyProcessor:
    """SEND_REPLY_MESSAGE(_V2) (``ReplyMessageProcessor``, which extends the send processors'
    ``AbstractSendMessageProcessor``): checked, stored and counted as a send is, through the send
    processor's own config, store, stats, store host and clock; pushed to the requester."""

    send: SendProcessor
    producers: ProducerManager

    def send_reply_message(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Deferred[RemotingCommand]:
        send = self.send
        header = send_header(request)
        config, failure = send.msg_check(channel, header)
        if failure is not None or config is None:
            return failure  # type: ignore[return-value]
        queue_id = header.queue_id
        if queue_id < 0:
            queue_id = random.randrange(99_999_999) % max(1, config.write_queue_nums)
        props = string_to_properties(header.properties or "")
        msg = MessageExtBrokerInner(
            topic=header.topic,
            body=request.body or b"",
            queue_id=queue_id,
            flag=header.flag,
            properties=props,
            properties_string=header.properties or "",
            born_timestamp=header.born_timestamp,
            born_host=host_tuple(channel.remote_addr),
            store_host=send.store_host,
            reconsume_times=header.reconsume_times or 0,
        )
        pushed = self._push_reply(channel, header, msg)

        def answer(push_remark: str | None) -> RemotingCommand:
            ext: SendMessageResponseHeader | None = None
            if push_remark is None:  # "set to zero to avoid client decoding exception"
                ext = SendMessageResponseHeader(msg_id="0", queue_id=queue_id, queue_offset=0)
            if send.config.store_reply_message_enable:
                result = send.store.put_message(msg)
                if result.status in _STORED and result.append is not None:
                    send.stats.on_put(msg.topic, result.append.msg_num or 1)
                    send.notify_message_arriving(msg.topic, queue_id)
                    ext = SendMessageResponseHeader(
                        msg_id=result.append.msg_id,
                        queue_id=queue_id,
                        queue_offset=result.append.logics_offset,
                    )
            code = ResponseCode.SYSTEM_ERROR if push_remark is not None else ResponseCode.SUCCESS
            if ext is None:
                return response(code, push_remark, send.response_ext())
            ext.msg_region, ext.trace_on = send.config.region_id, send.config.trace_on
            return response(code, push_remark, ext)

        return pushed.addCallback(answer)

    def _push_reply(
        self, channel: Channel, header: SendMessageRequestHeader, msg: MessageExtBrokerInner
    ) -> Deferred[str | None]:
        """``pushReplyMessage``: None when the requester took the reply, else the answer's remark."""
        sender_id = msg.properties.get(MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT)
        if sender_id is None:
            return succeed(
                f"reply message properties[{MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT}] is null"
            )
        requester = self.producers.find_channel(sender_id)
        if requester is None:
            return succeed(f"push reply message fail, channel of <{sender_id}> not found.")
        born_host, born_port = host_tuple(channel.remote_addr)
        store_ip, store_port = self.send.store_host
        now_ms = self.send.now_ms
        pushed_props = dict(msg.properties)
        pushed_props[MessageConst.PROPERTY_PUSH_REPLY_TIME] = str(now_ms())
        push = request_command(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
            ReplyMessageRequestHeader(
                producer_group=header.producer_group,
                topic=header.topic,
                default_topic=header.default_topic,
                default_topic_queue_nums=header.default_topic_queue_nums,
                queue_id=header.queue_id,
                sys_flag=header.sys_flag,
                born_timestamp=header.born_timestamp,
                flag=header.flag,
                properties=properties_to_string(pushed_props),
                reconsume_times=header.reconsume_times,
                unit_mode=header.unit_mode,
                born_host=f"{born_host}:{born_port}",
                store_host=f"{store_ip}:{store_port}",
                store_timestamp=now_ms(),
            ),
            msg.body,
        )
        failed_remark = f"push reply message to {sender_id}fail."  # sic: Java's remark has no space

        def taken(answer: RemotingCommand) -> str | None:
            return None if answer.code == ResponseCode.SUCCESS else failed_remark

        def lost(_: Failure) -> str | None:
            return failed_remark

        return requester.invoke(push, CALL_CLIENT_TIMEOUT).addCallbacks(taken, lost)
