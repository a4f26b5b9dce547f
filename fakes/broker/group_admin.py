"""5.x admin requests about consumer groups (``AdminBrokerProcessor`` of 5.5.0); 4.9.7 has none of them
and answers REQUEST_CODE_NOT_SUPPORTED, as the twin does when it emulates that line.

- UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST (225): several groups in one request; every name is checked
  before any is written.
- QUERY_TOPICS_BY_CONSUMER (343): the topics a group has committed offsets for.
- QUERY_SUBSCRIPTION_BY_CONSUMER (345): an online group's subscription to a topic.
- UPDATE_AND_GET_GROUP_FORBIDDEN (353): ``mqadmin updateGroupForbidden``; a forbidden group's pulls are
  answered NO_PERMISSION (``PullProcessor``).

Real 5.5.0 does not refuse these headers for a missing ``@CFNotNull`` field: the null is met where the
processor first uses it (a table lookup's NPE, or nothing), as the twin does here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rmqtwin.codec.bodies import (
    GroupForbidden,
    QuerySubscriptionResponseBody,
    SubscriptionGroupList,
    TopicList,
)
from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.headers import (
    QuerySubscriptionByConsumerRequestHeader,
    QueryTopicsByConsumerRequestHeader,
    UpdateGroupForbiddenRequestHeader,
)
from rmqtwin.fakes.broker.topics import validate_group
from rmqtwin.fakes.dispatch import Channel, decode_header, require_key, response
from rmqtwin.store_mirror.config import TOPIC_GROUP_SEPARATOR

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.clients import ConsumerManager
    from rmqtwin.fakes.broker.groups import SubscriptionGroupTable
    from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable
    from rmqtwin.fakes.config import BrokerConfig

INDEX_PERM_READ = 2
"""``PermName.INDEX_PERM_READ``: the bit of a read-forbidden group in the forbidden table."""
SUBSCRIPTION_FORBIDDEN = 5
"""``ForbiddenType.SUBSCRIPTION_FORBIDDEN``: a pull answer's ``forbiddenType`` for such a group."""

_NO_GROUP_LIST_NPE = (
    'java.lang.NullPointerException: Cannot invoke "org.apache.rocketmq.remoting.protocol.body.'
    'SubscriptionGroupList.getGroupConfigList()" because "subscriptionGroupList" is null, '
    "org.apache.rocketmq.broker.processor.AdminBrokerProcessor.updateAndCreateSubscriptionGroupList"
    "(AdminBrokerProcessor.java:1592)"
)
"""UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST without a body, as real 5.5.0 answers it."""
_NULL_GROUP_NPE = (
    'java.lang.NullPointerException: Cannot invoke "String.equals(Object)" because "group" is null, '
    "org.apache.rocketmq.broker.offset.ConsumerOffsetManager.whichTopicByConsumer(ConsumerOffsetManager.java:149)"
)
"""QUERY_TOPICS_BY_CONSUMER without a group on a broker with committed offsets, as real 5.5.0 answers it."""


@dataclass(eq=False, kw_only=True)
class GroupAdminProcessor:
    config: BrokerConfig
    groups: SubscriptionGroupTable
    offsets: ConsumerOffsetTable
    consumers: ConsumerManager

    def _not_supported(self, request: RemotingCommand) -> RemotingCommand | None:
        if self.config.five:
            return None
        return response(
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
        )

    def update_and_create_subscription_group_list(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        refused = self._not_supported(request)
        if refused is not None:
            return refused
        if not request.body:
            return response(ResponseCode.SYSTEM_ERROR, _NO_GROUP_LIST_NPE)
        try:
            configs = SubscriptionGroupList.decode(request.body).group_config_list
        except CodecError as exc:
            return response(ResponseCode.SYSTEM_ERROR, str(exc))
        for config in configs:
            problem = validate_group(config.group_name)
            if problem is not None:
                return response(ResponseCode.INVALID_PARAMETER, problem)
        for config in configs:
            self.groups.put(config)
        return response()

    def query_topics_by_consumer(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        refused = self._not_supported(request)
        if refused is not None:
            return refused
        group = decode_header(request, QueryTopicsByConsumerRequestHeader, strict=False).group
        if group is None:
            if any(key.count(TOPIC_GROUP_SEPARATOR) == 1 for key in self.offsets.offset_table):
                return response(ResponseCode.SYSTEM_ERROR, _NULL_GROUP_NPE)
            topics = []
        else:
            topics = sorted(self.offsets.which_topic_by_consumer(group))
        addr = f"{self.config.broker_ip1}:{self.config.listen_port}"
        return response(
            body=TopicList(topic_list=topics, broker_addr=addr).encode(fastjson2=self.config.five)
        )

    def query_subscription_by_consumer(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        refused = self._not_supported(request)
        if refused is not None:
            return refused
        header = decode_header(request, QuerySubscriptionByConsumerRequestHeader, strict=False)
        group = require_key(header.group, "group")  # the consumer table lookup
        found = self.consumers.find_subscription(group, header.topic) if header.topic else None
        body = QuerySubscriptionResponseBody(
            group=header.group,
            topic=header.topic,
            subscription_data=found,
        )
        return response(body=body.encode(fastjson2=self.config.five))

    def update_and_get_group_forbidden(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        refused = self._not_supported(request)
        if refused is not None:
            return refused
        header = decode_header(request, UpdateGroupForbiddenRequestHeader, strict=False)
        group, topic = require_key(header.group, "group"), header.topic
        groups = self.groups
        if topic is None:
            # The group's topic map is looked up with the null key only when the group has one; a
            # group without one reads as readable (real 5.5.0 answers so), and the twin writes nothing.
            if group in groups.forbidden_table:
                require_key(topic, "topic")
            body = GroupForbidden(group=group, readable=True)
            return response(remark="", body=body.encode(fastjson2=self.config.five))
        if header.readable is not None:
            groups.update_forbidden(group, topic, INDEX_PERM_READ, not header.readable)
            groups.on_change()
        readable = not groups.get_forbidden(group, topic, INDEX_PERM_READ)
        body = GroupForbidden(group=group, topic=topic, readable=readable)
        return response(remark="", body=body.encode(fastjson2=self.config.five))
