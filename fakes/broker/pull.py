"""PULL_MESSAGE (and 5.x LITE_PULL_MESSAGE) with tag filtering and long polling.

Follows ``PullMessageProcessor`` of 4.9.8. A pull that finds nothing new with the suspend flag is
parked (``PullRequestHoldService``): it is re-run without suspension when a message arrives for
its queue or when its suspend time runs out, and answered then with the original opaque. Time is
the injected reactor's, so a ``Clock`` drives it in tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from twisted.internet.interfaces import IDelayedCall, IReactorTime

from rmqtwin.codec.bodies import SubscriptionData
from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.headers import PullMessageRequestHeader, PullMessageResponseHeader
from rmqtwin.fakes.broker.filter import FilterError, build_subscription_data, message_filter_for
from rmqtwin.fakes.broker.group_admin import INDEX_PERM_READ, SUBSCRIPTION_FORBIDDEN
from rmqtwin.fakes.broker.groups import refuse_consuming, refuse_reading
from rmqtwin.fakes.broker.topics import is_readable, parameter_error
from rmqtwin.fakes.dispatch import (
    REJECT_REQUEST_REMARK,
    Channel,
    decode_header_fast,
    require,
    response,
    suggest_todo,
)
from rmqtwin.store_mirror.message_store import GetMessageStatus

if TYPE_CHECKING:
    from rmqtwin.codec.bodies import SubscriptionGroupConfig, TopicConfig
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.clients import ConsumerManager
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable
    from rmqtwin.fakes.broker.stats import BrokerStats
    from rmqtwin.fakes.broker.topics import TopicTable
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import GetMessageResult, MessageStore

FLAG_COMMIT_OFFSET = 0x1
FLAG_SUSPEND = 0x2
FLAG_SUBSCRIPTION = 0x4
MASTER_ID = 0

_STATUS_CODES = {
    GetMessageStatus.FOUND: ResponseCode.SUCCESS,
    GetMessageStatus.MESSAGE_WAS_REMOVING: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.NO_MATCHED_MESSAGE: ResponseCode.PULL_RETRY_IMMEDIATELY,
    GetMessageStatus.OFFSET_FOUND_NULL: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY: ResponseCode.PULL_OFFSET_MOVED,
    GetMessageStatus.OFFSET_OVERFLOW_ONE: ResponseCode.PULL_NOT_FOUND,
    GetMessageStatus.OFFSET_TOO_SMALL: ResponseCode.PULL_OFFSET_MOVED,
}


@dataclass
class PullRequest:
    """A parked pull (Java ``PullRequest``)."""

    request: RemotingCommand
    channel: Channel
    pull_from_offset: int
    deadline: float
    timer: IDelayedCall | None = None


class PullRequestHoldService:
    """Parked pulls by ``topic@queueId``; re-run on message arrival or at their deadline."""

    def __init__(self, processor: PullProcessor) -> None:
        self.processor = processor
        self.table: dict[str, list[PullRequest]] = {}

    @staticmethod
    def key(topic: str, queue_id: int) -> str:
        return f"{topic}@{queue_id}"

    def suspend(self, topic: str, queue_id: int, pull: PullRequest) -> None:
        key = self.key(topic, queue_id)
        self.table.setdefault(key, []).append(pull)
        clock = self.processor.clock
        delay = max(0.0, pull.deadline - clock.seconds())
        pull.timer = clock.callLater(delay, self._expire, key, pull)

    def _expire(self, key: str, pull: PullRequest) -> None:
        pulls = self.table.get(key)
        if pulls is None or pull not in pulls:
            return
        pulls.remove(pull)
        if not pulls:
            del self.table[key]
        pull.timer = None
        self.processor.execute_when_wakeup(pull)

    def notify_message_arriving(self, topic: str, queue_id: int, max_offset: int) -> None:
        key = self.key(topic, queue_id)
        pulls = self.table.get(key)
        if not pulls:
            return
        keep = []
        for pull in pulls:
            if max_offset > pull.pull_from_offset:
                if pull.timer is not None and pull.timer.active():
                    pull.timer.cancel()
                pull.timer = None
                self.processor.execute_when_wakeup(pull)
            else:
                keep.append(pull)
        if keep:
            self.table[key] = keep
        else:
            self.table.pop(key, None)

    def channel_closed(self, channel: Channel) -> None:
        for key, pulls in list(self.table.items()):
            remaining = []
            for pull in pulls:
                if pull.channel is channel:
                    if pull.timer is not None and pull.timer.active():
                        pull.timer.cancel()
                else:
                    remaining.append(pull)
            if remaining:
                self.table[key] = remaining
            else:
                del self.table[key]

    def stop(self) -> None:
        for pulls in self.table.values():
            for pull in pulls:
                if pull.timer is not None and pull.timer.active():
                    pull.timer.cancel()
        self.table.clear()

    def parked(self) -> int:
        return sum(len(p) for p in self.table.values())


@dataclass(eq=False, kw_only=True)
class PullProcessor:
    config: BrokerConfig
    clock: IReactorTime
    topics: TopicTable
    groups: SubscriptionGroupTable
    consumers: ConsumerManager
    offsets: ConsumerOffsetTable
    store: MessageStore
    stats: BrokerStats
    hold: PullRequestHoldService = field(init=False)

    def __post_init__(self) -> None:
        self.hold = PullRequestHoldService(self)

    def process(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        config = self.config
        if config.five and config.slave and not config.slave_read_enable:
            # 5.x PullMessageProcessor.rejectRequest: a slave that may not be read turns pulls away.
            return response(ResponseCode.SYSTEM_BUSY, REJECT_REQUEST_REMARK)
        return self.process_request(channel, request, allow_suspend=True)

    def _suggest_which_broker_id(self, group_config: SubscriptionGroupConfig, slow: bool) -> int:
        """Where the consumer should pull next: with ``slaveReadEnable``, the group's slave when it
        reads far behind (``whichBrokerWhenConsumeSlowly``) else the group's broker; without, the master."""
        config = self.config
        if not config.slave_read_enable:
            return MASTER_ID
        if slow:
            return group_config.which_broker_when_consume_slowly
        return MASTER_ID if config.five and config.slave else group_config.broker_id

    def _subscription(
        self,
        header: PullMessageRequestHeader,
        group: str,
        group_config: SubscriptionGroupConfig,
        topic: str,
        *,
        from_request: bool,
    ) -> SubscriptionData | RemotingCommand:
        """What the pull filters by: the subscription the request carries (FLAG_SUBSCRIPTION), else the
        one the group registered by heartbeat; or the answer refusing the pull."""
        if from_request:
            try:
                return build_subscription_data(topic, header.subscription, header.expression_type or "TAG")
            except Exception:
                return response(
                    ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
                )
        group_info = self.consumers.groups.get(group)
        if group_info is None:
            return response(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's group info not exist{suggest_todo(self.config.five)}",
            )
        if not group_config.consume_broadcast_enable and group_info.message_model == "BROADCASTING":
            return response(
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{group}] can not consume by broadcast way",
            )
        if self.config.five and self.groups.get_forbidden(group, topic, INDEX_PERM_READ):
            # 5.x ``updateGroupForbidden`` (UPDATE_AND_GET_GROUP_FORBIDDEN): reads refused.
            return response(
                ResponseCode.NO_PERMISSION,
                f"the consumer group[{group}] is forbidden for topic[{topic}]",
                {"forbiddenType": SUBSCRIPTION_FORBIDDEN},
            )
        found = group_info.subscriptions.get(topic)
        if found is None:
            return response(
                ResponseCode.SUBSCRIPTION_NOT_EXIST,
                f"the consumer's subscription not exist{suggest_todo(self.config.five)}",
            )
        if found.sub_version < require(header.sub_version, "subVersion"):
            return response(ResponseCode.SUBSCRIPTION_NOT_LATEST, "the consumer's subscription not latest")
        return found

    def _server_side_reset(self, topic: str, group: str, queue_id: int) -> RemotingCommand | None:
        """5.x useServerSideResetOffset: a queue reset by INVOKE_BROKER_TO_RESET_OFFSET moves the client's
        pull offset there (OFFSET_RESET answered as PULL_OFFSET_MOVED); None when it was not reset."""
        reset = self.offsets.query_then_erase_reset_offset(topic, group, queue_id)
        if reset is None:
            return None
        moved = PullMessageResponseHeader(
            suggest_which_broker_id=0,
            next_begin_offset=reset,
            min_offset=self.store.get_min_offset_in_queue(topic, queue_id),
            max_offset=self.store.get_max_offset_in_queue(topic, queue_id),
        )
        return response(ResponseCode.PULL_OFFSET_MOVED, "OFFSET_RESET", moved)

    def _answer_header(
        self, result: GetMessageResult, group_config: SubscriptionGroupConfig, topic_config: TopicConfig
    ) -> PullMessageResponseHeader:
        header = PullMessageResponseHeader(
            suggest_which_broker_id=self._suggest_which_broker_id(
                group_config, result.suggest_pulling_from_slave
            ),
            next_begin_offset=result.next_begin_offset,
            min_offset=result.min_offset,
            max_offset=result.max_offset,
        )
        if self.config.five:  # composeResponseHeader (5.x) reports both flags on every store answer
            header.topic_sys_flag = topic_config.topic_sys_flag
            header.group_sys_flag = group_config.group_sys_flag or 0
        return header

    def _suspend(  # noqa: PLR0917 - the held pull's place and its deadline
        self,
        channel: Channel,
        request: RemotingCommand,
        topic: str,
        queue_id: int,
        queue_offset: int,
        suspend_millis: int,
    ) -> None:
        """Hold a pull that found nothing until a message arrives or it times out (long polling; the
        short polling time without it)."""
        timeout = suspend_millis if self.config.long_polling_enable else self.config.short_polling_time_mills
        pull = PullRequest(
            request=request,
            channel=channel,
            pull_from_offset=queue_offset,
            deadline=self.clock.seconds() + timeout / 1000.0,
        )
        self.hold.suspend(topic, queue_id, pull)

    def execute_when_wakeup(self, pull: PullRequest) -> None:
        if not pull.channel.is_active:
            return
        answer = self.process_request(pull.channel, pull.request, allow_suspend=False)
        if answer is not None:
            pull.channel.send_response(pull.request, answer)

    def process_request(
        self, channel: Channel, request: RemotingCommand, *, allow_suspend: bool
    ) -> RemotingCommand | None:
        # A missing field fails where PullMessageProcessor first meets it, after the checks before it.
        header = decode_header_fast(request, PullMessageRequestHeader)

        if not is_readable(self.config.broker_permission):
            return response(
                ResponseCode.NO_PERMISSION,
                f"the broker[{self.config.broker_ip1}] pulling message is forbidden",
            )
        group = require(header.consumer_group, "consumerGroup")
        group_config = self.groups.find(group)
        refused = refuse_consuming(group, group_config, self.config.five)
        if refused is not None:
            return refused
        assert group_config is not None
        sys_flag = require(header.sys_flag, "sysFlag")
        has_suspend = bool(sys_flag & FLAG_SUSPEND)
        has_commit = bool(sys_flag & FLAG_COMMIT_OFFSET)
        has_subscription = bool(sys_flag & FLAG_SUBSCRIPTION)
        suspend_millis = require(header.suspend_timeout_millis, "suspendTimeoutMillis") if has_suspend else 0

        topic = require(header.topic, "topic")
        topic_config = self.topics.get(topic)
        refused = refuse_reading(topic, topic_config, self.config.five, "pulling")
        if refused is not None:
            return refused
        assert topic_config is not None
        queue_id = require(header.queue_id, "queueId")
        if queue_id < 0 or queue_id >= topic_config.read_queue_nums:
            five = self.config.five
            consumer = f"/{channel.remote_addr}"  # both lines print the channel's SocketAddress
            return response(
                parameter_error(five),
                f"queueId[{queue_id}] is illegal, topic:[{topic}] topicConfig.readQueueNums:"
                f"[{topic_config.read_queue_nums}] consumer:[{consumer}]",
            )

        subscription = self._subscription(header, group, group_config, topic, from_request=has_subscription)
        if not isinstance(subscription, SubscriptionData):
            return subscription  # the pull refused
        try:
            message_filter = message_filter_for(
                subscription,
                self.config.five,
                from_request=has_subscription,
                strict=self.config.reject_unparsable_sql92,
            )
        except FilterError as exc:
            return response(exc.code, exc.remark)
        expression_type = subscription.expression_type or "TAG"
        if expression_type != "TAG" and not self.config.enable_property_filter:
            return response(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {expression_type}",
            )

        queue_offset = require(header.queue_offset, "queueOffset")
        max_msg_nums = require(header.max_msg_nums, "maxMsgNums")
        if self.config.five:
            moved = self._server_side_reset(topic, group, queue_id)
            if moved is not None:
                return moved
        store_offset = allow_suspend and has_commit and self.config.broker_role != "SLAVE"
        commit_offset = require(header.commit_offset, "commitOffset") if store_offset else 0
        result = self.store.get_message(group, topic, queue_id, queue_offset, max_msg_nums, message_filter)
        if self.config.five:  # tryCommitOffset: every answer from the store moves the group's pull offset
            self.offsets.commit_pull_offset(group, topic, queue_id, result.next_begin_offset)
        status = result.status
        if status in (GetMessageStatus.NO_MATCHED_LOGIC_QUEUE, GetMessageStatus.NO_MESSAGE_IN_QUEUE):
            code = ResponseCode.PULL_OFFSET_MOVED if queue_offset != 0 else ResponseCode.PULL_NOT_FOUND
        else:
            code = _STATUS_CODES.get(status, ResponseCode.SYSTEM_ERROR)
        answer: RemotingCommand | None = None
        if code == ResponseCode.SUCCESS:
            body = b"".join(bytes(buf) for buf in result.message_buffers)
            self.stats.on_get(topic, len(result.message_buffers), group)
            answer = response(
                code, status.name, self._answer_header(result, group_config, topic_config), body
            )
        elif code == ResponseCode.PULL_NOT_FOUND and allow_suspend and has_suspend:
            self._suspend(channel, request, topic, queue_id, queue_offset, suspend_millis)
        else:
            answer = response(code, status.name, self._answer_header(result, group_config, topic_config))
        if store_offset:
            self.offsets.commit_offset(group, topic, queue_id, commit_offset)
        return answer
