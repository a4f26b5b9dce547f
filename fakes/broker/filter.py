"""SQL92 subscriptions on the broker: the pull's message filter and CHECK_CLIENT_CONFIG.

``ExpressionMessageFilter`` for a SQL92 subscription accepts every consume-queue entry (no bloom
filter bit map, as with ``enableCalcFilterBitMap=false``) and decides on the stored record's
properties; ``ConsumerFilterManager`` compiles a subscription once. Which grammar applies follows
the client's line: 5.x clients (version ≥ 413) get 5.x's (CONTAINS, STARTSWITH, ENDSWITH), older ones
4.9's, as the rest of the twin does with 4.9/5.x differences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rmqtwin.codec.bodies import CheckClientRequestBody, SubscriptionData
from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.java import java_int, java_string_hash
from rmqtwin.codec.message import read_record_properties
from rmqtwin.fakes.broker.sql92 import Expression, SelectorParseError, compile_selector, matches
from rmqtwin.fakes.dispatch import Channel, response

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.config import BrokerConfig

EXPRESSION_TYPE_TAG = "TAG"
EXPRESSION_TYPE_SQL92 = "SQL92"
SUB_ALL = "*"


class FilterError(Exception):
    """A subscription the broker refuses; ``code`` and ``remark`` are the real broker's answer."""

    def __init__(self, code: int, remark: str) -> None:
        super().__init__(remark)
        self.code = code
        self.remark = remark


def grammar_version(five: bool) -> int:
    """The filter grammar of the emulated broker line (the broker's, whatever the client's version)."""
    return 5 if five else 4


def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: null, empty and ``TAG`` are tag subscriptions."""
    return not expression_type or expression_type == EXPRESSION_TYPE_TAG


def build_subscription_data(
    topic: str, sub_string: str | None, expression_type: str | None = EXPRESSION_TYPE_TAG
) -> SubscriptionData:
    """``FilterAPI.buildSubscriptionData``: tag set and their Java hash codes."""
    data = SubscriptionData(
        topic=topic, sub_string=sub_string or SUB_ALL, expression_type=expression_type or EXPRESSION_TYPE_TAG
    )
    if data.sub_string == SUB_ALL:
        return data
    for raw in data.sub_string.split("||"):
        tag = raw.strip()
        if tag and tag not in data.tags_set:
            data.tags_set.append(tag)
            data.code_set.append(java_string_hash(tag))
    return data


class TagMessageFilter:
    """``ExpressionMessageFilter`` for TAG subscriptions: matches consume-queue tag hash codes."""

    def __init__(self, subscription: SubscriptionData | None) -> None:
        self.all = subscription is None or subscription.sub_string in (None, "", SUB_ALL)
        codes = [] if subscription is None else subscription.code_set or []
        self.codes = {int(c) for c in codes}

    def is_matched_by_consume_queue(self, tags_code: int | None, cq_ext: object | None = None) -> bool:
        if self.all or tags_code is None:
            return True
        return java_int(tags_code) in self.codes

    def is_matched_by_commit_log(
        self, msg_buffer: bytes | None = None, properties: dict[str, str] | None = None
    ) -> bool:
        return True

    def __call__(self, tags_code: int | None) -> bool:
        return self.is_matched_by_consume_queue(tags_code)


class SqlMessageFilter:
    """A compiled SQL92 subscription applied to stored records."""

    def __init__(self, expression: Expression | None) -> None:
        self.expression = expression  # None: no filter data, every message matches (as in Java)

    def is_matched_by_consume_queue(self, tags_code: int | None, cq_ext_unit: object | None = None) -> bool:
        return True

    def is_matched_by_commit_log(
        self, msg_buffer: bytes | None, properties: Mapping[str, str] | None
    ) -> bool:
        if self.expression is None:
            return True
        props = properties
        if props is None:
            if msg_buffer is None:
                return True
            props = read_record_properties(msg_buffer)
            if props is None:
                return False
        return matches(self.expression, props)


def compile_subscription(subscription: SubscriptionData, five: bool) -> Expression:
    """``FilterFactory.get(type).compile(subString)``; raises SelectorParseError."""
    expression_type = subscription.expression_type
    if expression_type != EXPRESSION_TYPE_SQL92:  # FilterFactory has no such type: Java 17's NPE text
        raise SelectorParseError(
            'Cannot invoke "org.apache.rocketmq.filter.FilterSpi.compile(String)" because the return '
            'value of "org.apache.rocketmq.filter.FilterFactory.get(String)" is null'
        )
    return compile_selector(str(subscription.sub_string or ""), grammar_version(five))


def message_filter_for(
    subscription: SubscriptionData, five: bool, *, from_request: bool, strict: bool = False
) -> TagMessageFilter | SqlMessageFilter:
    """The pull's message filter: tags for TAG subscriptions, the compiled selector for SQL92.

    ``from_request``: the subscription came with the pull. When it does not compile, real 4.9.7 and
    5.5.0 (``ConsumerFilterManager.build`` logs and returns null) pull unfiltered and answer FOUND with
    every message; so does the twin unless ``strict`` (broker.conf ``rejectUnparsableSql92=true``, a
    twin-only key) asks for ``SUBSCRIPTION_PARSE_FAILED``. Otherwise it is the heartbeat's, whose
    failed compile left no filter data (``FILTER_DATA_NOT_EXIST``).
    """
    if is_tag_type(subscription.expression_type):
        return TagMessageFilter(subscription)
    if from_request and subscription.expression_type != EXPRESSION_TYPE_SQL92:
        # ConsumerFilterManager.build finds no filter for the type and the pull goes on unfiltered.
        return SqlMessageFilter(None)
    try:
        return SqlMessageFilter(compile_subscription(subscription, five))
    except SelectorParseError:
        if from_request and not strict:
            return SqlMessageFilter(None)
        if from_request:
            raise FilterError(
                ResponseCode.SUBSCRIPTION_PARSE_FAILED, "parse the consumer's subscription failed"
            ) from None
        raise FilterError(
            ResponseCode.FILTER_DATA_NOT_EXIST,
            "The broker's consumer filter data is not exist!Your expression may be wrong!",
        ) from None


@dataclass(eq=False, kw_only=True)
class ConsumerFilterProcessor:
    """CHECK_CLIENT_CONFIG (``ClientManageProcessor.checkClientConfig``)."""

    config: BrokerConfig

    def check_client_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        # A null body is a null CheckClientRequestBody, which the processor does not read further.
        subscription = CheckClientRequestBody.decode(request.body).subscription_data if request.body else None
        if subscription is not None:
            expression_type = subscription.expression_type
            if is_tag_type(expression_type):
                return response()
            if not self.config.enable_property_filter:
                return response(
                    ResponseCode.SYSTEM_ERROR,
                    f"The broker does not support consumer to filter message by {expression_type}",
                )
            try:
                compile_subscription(subscription, self.config.five)
            except SelectorParseError as exc:
                return response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, str(exc))
        return response()
