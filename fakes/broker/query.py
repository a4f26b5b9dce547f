"""QUERY_MESSAGE (by key or UNIQ_KEY, through the index) and VIEW_MESSAGE_BY_ID."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.fakes.dispatch import Channel, ext, field, int_field, response

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.controller import BrokerController

UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"


class QueryProcessor:
    def __init__(self, broker: BrokerController) -> None:
        self.broker = broker

    def query_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        topic, key = field(request, "topic"), field(request, "key")
        max_num = int_field(request, "maxNum")
        if ext(request).get(UNIQUE_MSG_QUERY_FLAG) == "true":
            max_num = self.broker.config.default_query_max_num
        result = self.broker.store.query_message(
            topic, key, max_num, int_field(request, "beginTimestamp"), int_field(request, "endTimestamp")
        )
        header = {
            "indexLastUpdateTimestamp": result.index_last_update_timestamp,
            "indexLastUpdatePhyoffset": result.index_last_update_phyoffset,
        }
        if result.message_buffers:
            body = b"".join(bytes(b) for b in result.message_buffers)
            return response(ext_fields=header, body=body)
        return response(
            ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", header
        )

    def view_message_by_id(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        offset = int_field(request, "offset")
        data = self.broker.store.select_one_message_by_offset(offset)
        if data:
            return response(body=data)
        return response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
