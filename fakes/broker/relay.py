"""Requests the broker relays to its clients (``Broker2Client`` and the parts of ``AdminBrokerProcessor``
that call it): what mqadmin's consumerStatus, queryMsgById -g -d, getConsumerStatus and resetOffsetByTime
ask a running consumer through the broker.

- GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309): ``callConsumer`` finds the client
  by group and client id and forwards the request (same ext fields and body; the stored record of the
  offset msgId for 309, with ``brokerName`` added), answering the client's own response, or SYSTEM_ERROR
  ``The Consumer <g> <c> not online``, or CONSUME_MSG_TIMEOUT after 10 s.
- INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): GET_CONSUMER_STATUS_FROM_CLIENT (221) to each member (or
  the one ``clientAddr`` names), their queue offsets gathered by client id.
- INVOKE_BROKER_TO_RESET_OFFSET (222): as the emulated line does it. 4.9.7 computes the offsets for the
  timestamp and sends them to every member (RESET_CONSUMER_CLIENT_OFFSET, 220, oneway; the client's
  push consumer jumps), CONSUMER_NOT_ONLINE when none is (mqadmin then writes the offsets itself).
  5.5.0 (``useServerSideResetOffset``) writes the offsets and remembers them per queue: the next pull
  of the queue is answered PULL_OFFSET_MOVED to the reset offset, which is how its clients jump.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred, gatherResults, succeed
from twisted.python.failure import Failure

from rmqtwin.codec.bodies import GetConsumerStatusBody, MessageQueue, ResetOffsetBody
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.headers import (
    ConsumeMessageDirectlyResultRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader,
    ResetOffsetRequestHeader,
)
from rmqtwin.codec.message import decode_offset_msg_id
from rmqtwin.fakes.dispatch import Channel, decode_header, request_command, require, require_key, response
from rmqtwin.fakes.server import RemotingTimeout

if TYPE_CHECKING:
    from rmqtwin.fakes.broker.clients import ClientChannelInfo, ConsumerManager
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore

CALL_CLIENT_TIMEOUT = 10.0
"""``Broker2Client.callClient``: ``invokeSync(channel, request, 10000)``."""
CONSUMER_STATUS_TIMEOUT = 5.0
_TIMEOUT_FRAME = (
    "org.apache.rocketmq.remoting.netty.NettyRemotingAbstract.invokeSyncImpl(NettyRemotingAbstract.java:438)"
)


@dataclass(eq=False, kw_only=True)
class ClientRelayProcessor:
    config: BrokerConfig
    topics: TopicTable
    groups: SubscriptionGroupTable
    offsets: ConsumerOffsetTable
    consumers: ConsumerManager
    store: MessageStore

    # -- callConsumer ------------------------------------------------------------------------------
    def get_consumer_running_info(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Deferred[RemotingCommand]:
        header = decode_header(request, GetConsumerRunningInfoRequestHeader, strict=False)
        return self._call_consumer(
            RequestCode.GET_CONSUMER_RUNNING_INFO, request, header.consumer_group, header.client_id
        )

    def consume_message_directly(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Deferred[RemotingCommand]:
        if request.ext_fields is None:
            return response(ResponseCode.SYSTEM_ERROR, _NO_EXT_FIELDS_NPE[self.config.five])
        header = decode_header(request, ConsumeMessageDirectlyResultRequestHeader, strict=False)
        ext = dict(request.ext_fields)
        ext["brokerName"] = self.config.broker_name
        body = request.body
        msg_id = require(header.msg_id, "msgId")
        try:
            _, _, offset = decode_offset_msg_id(msg_id)
        except (CodecError, ValueError):
            offset = None  # Java swallows only UnknownHostException; a bad id leaves the body as it was
        if offset is not None:
            record = self.store.select_one_message_by_offset(offset)
            if record is not None:
                body = record
        relayed = RemotingCommand(code=request.code, ext_fields=ext, body=body)
        return self._call_consumer(
            RequestCode.CONSUME_MESSAGE_DIRECTLY, relayed, header.consumer_group, header.client_id
        )

    def _call_consumer(
        self, code: int, request: RemotingCommand, group: str | None, client_id: str | None
    ) -> RemotingCommand | Deferred[RemotingCommand]:
        info = self._find_channel(require_key(group, "consumerGroup"), client_id)
        if info is None or not getattr(info.channel, "is_active", False):
            return response(ResponseCode.SYSTEM_ERROR, f"The Consumer <{group}> <{client_id}> not online")
        relayed = request_command(code, request.ext_fields, request.body)
        answer = info.channel.invoke(relayed, CALL_CLIENT_TIMEOUT)
        remote = info.channel.remote_addr

        def forwarded(client_answer: RemotingCommand) -> RemotingCommand:
            return RemotingCommand(
                code=client_answer.code,
                remark=client_answer.remark,
                ext_fields=client_answer.ext_fields,
                body=client_answer.body,
                flag=1,
            )

        def failed(failure: Failure) -> RemotingCommand:
            if failure.check(RemotingTimeout):
                timeout = (
                    "org.apache.rocketmq.remoting.exception.RemotingTimeoutException: wait response on the "
                    f"channel <{remote}> timeout, {int(CALL_CLIENT_TIMEOUT * 1000)}(ms), {_TIMEOUT_FRAME}"
                )
                return response(
                    ResponseCode.CONSUME_MSG_TIMEOUT, f"consumer <{group}> <{client_id}> Timeout: {timeout}"
                )
            return response(
                ResponseCode.SYSTEM_ERROR,
                f"invoke consumer <{group}> <{client_id}> Exception: "
                "org.apache.rocketmq.remoting.exception.RemotingSendRequestException: "
                f"send request to <{remote}> failed",
            )

        return answer.addCallbacks(forwarded, failed)

    def _find_channel(self, group: str, client_id: str | None) -> ClientChannelInfo | None:
        info = self.consumers.groups.get(group)
        if info is None:
            return None
        return next((c for c in info.channels.values() if c.client_id == client_id), None)

    # -- consumer status -------------------------------------------------------------------------
    def get_consumer_status(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand | Deferred[RemotingCommand]:
        """``Broker2Client.getConsumeStatus``: a member that fails to answer is left out, as in Java."""
        header = decode_header(request, GetConsumerStatusRequestHeader, strict=False)
        group = require_key(header.group, "group")
        info = self.consumers.groups.get(group)
        if info is None:
            # Java dereferences the missing ConsumerGroupInfo.
            line = 246 if self.config.five else 243
            return response(ResponseCode.SYSTEM_ERROR, f"{_NO_GROUP_INFO_NPE}(Broker2Client.java:{line})")
        wanted = header.client_addr
        members = [c for c in info.channels.values() if not wanted or c.client_id == wanted]
        if wanted:
            members = members[:1]
        ask = request_command(
            RequestCode.GET_CONSUMER_STATUS_FROM_CLIENT,
            GetConsumerStatusRequestHeader(topic=header.topic, group=group),
        )
        table: dict[str, dict[MessageQueue, int]] = {}

        def ask_one(member: ClientChannelInfo) -> Deferred[None]:
            def answered(answer: RemotingCommand) -> None:
                if answer.code == ResponseCode.SUCCESS and answer.body:
                    table[member.client_id] = GetConsumerStatusBody.decode(answer.body).message_queue_table

            d = member.channel.invoke(request_command(ask.code, ask.ext_fields), CONSUMER_STATUS_TIMEOUT)
            return d.addCallbacks(answered, lambda _: None)

        def done(_: Any) -> RemotingCommand:
            return response(
                body=GetConsumerStatusBody(consumer_table=table).encode(fastjson2=self.config.five)
            )

        asked = [ask_one(m) for m in members if getattr(m.channel, "is_active", False)]
        return gatherResults(asked).addCallback(done) if asked else succeed(None).addCallback(done)

    # -- reset offset ----------------------------------------------------------------------------
    def reset_offset(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, ResetOffsetRequestHeader, strict=False)
        topic, group = require_key(header.topic, "topic"), require_key(header.group, "group")
        timestamp = require(header.timestamp, "timestamp")
        if self.config.five:
            queue_id = header.queue_id if header.queue_id is not None else -1
            return self._reset_offset_server_side(topic, group, queue_id, timestamp, header.offset)
        return self._reset_offset_in_clients(topic, group, timestamp, bool(header.is_force))

    def _reset_offset_in_clients(
        self, topic: str, group: str, timestamp: int, force: bool
    ) -> RemotingCommand:
        config = self.topics.get(topic)
        if config is None:
            return response(
                ResponseCode.SYSTEM_ERROR,
                f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}",
            )
        table: dict[MessageQueue, int] = {}
        for queue_id in range(config.write_queue_nums):
            current = self.offsets.query_offset(group, topic, queue_id)
            if current == -1:
                return response(ResponseCode.SYSTEM_ERROR, f"THe consumer group <{group}> not exist")
            target = self._offset_for(topic, queue_id, timestamp)
            table[self._mq(topic, queue_id)] = target if force or target < current else current
        info = self.consumers.groups.get(group)
        if info is None or not info.channels:
            return response(
                ResponseCode.CONSUMER_NOT_ONLINE,
                f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                f"Timestamp: {timestamp}",
            )
        body = ResetOffsetBody(offset_table=table).encode(fastjson2=self.config.five)
        tell = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=False)
        for member in info.channels.values():
            member.channel.send_oneway(
                request_command(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, tell, body, oneway=True)
            )
        return response(body=body)

    def _reset_offset_server_side(
        self, topic: str, group: str, queue_id: int, timestamp: int, offset: int | None
    ) -> RemotingCommand:
        """5.5.0's ``resetOffsetInner``."""
        if self.config.slave:
            return response(ResponseCode.SYSTEM_ERROR, "Can not reset offset in slave broker")
        config = self.topics.get(topic)
        if config is None:
            return response(ResponseCode.TOPIC_NOT_EXIST, f"Topic {topic} does not exist")
        if group not in self.groups.table:  # containsSubscriptionGroup: no auto-creation here
            return response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, f"Group {group} does not exist")
        store = self.store
        targets: dict[int, int] = {}
        if queue_id >= 0:
            if offset is not None and offset != -1:
                low = store.get_min_offset_in_queue(topic, queue_id)
                high = store.get_max_offset_in_queue(topic, queue_id)
                if (low >= 0 and offset < low) or offset > high + 1:
                    return response(
                        ResponseCode.SYSTEM_ERROR,
                        f"Target offset {offset} not in consume queue range [{low}-{high}]",
                    )
            else:
                offset = self._offset_for(topic, queue_id, timestamp, clamp=False)
            targets[queue_id] = offset
        else:
            for index in range(config.read_queue_nums):
                targets[index] = self._offset_for(topic, index, timestamp, clamp=False)
        if not targets:
            return response(ResponseCode.SYSTEM_ERROR, "No queues to reset.")
        for index, target in targets.items():
            self.offsets.assign_reset_offset(topic, group, index, target)
        body = ResetOffsetBody(offset_table={self._mq(topic, q): o for q, o in targets.items()})
        return response(body=body.encode(fastjson2=self.config.five))

    def _offset_for(self, topic: str, queue_id: int, timestamp: int, *, clamp: bool = True) -> int:
        store = self.store
        if timestamp < 0 if not clamp else timestamp == -1:
            found = store.get_max_offset_in_queue(topic, queue_id)
        else:
            found = store.get_offset_in_queue_by_time(topic, queue_id, timestamp)
        return max(0, found) if clamp else found

    def _mq(self, topic: str, queue_id: int) -> MessageQueue:
        return MessageQueue(topic=topic, broker_name=self.config.broker_name, queue_id=queue_id)


_NO_GROUP_INFO_NPE = (
    'java.lang.NullPointerException: Cannot invoke "org.apache.rocketmq.broker.client.ConsumerGroupInfo.'
    'getChannelInfoTable()" because the return value of "org.apache.rocketmq.broker.client.ConsumerManager.'
    'getConsumerGroupInfo(String)" is null, '
    "org.apache.rocketmq.broker.client.net.Broker2Client.getConsumeStatus"
)
_NO_EXT_FIELDS_NPE = {
    five: 'java.lang.NullPointerException: Cannot invoke "java.util.HashMap.put(Object, Object)" because the '
    'return value of "org.apache.rocketmq.remoting.protocol.RemotingCommand.getExtFields()" is null, '
    "org.apache.rocketmq.broker.processor.AdminBrokerProcessor.consumeMessageDirectly"
    f"(AdminBrokerProcessor.java:{2427 if five else 1232})"
    for five in (False, True)
}
"""CONSUME_MESSAGE_DIRECTLY without any ext field (real 4.9.7 / 5.5.0, keyed by ``five``)."""
