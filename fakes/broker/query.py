"""QUERY_MESSAGE (by key or UNIQ_KEY, through the index) and VIEW_MESSAGE_BY_ID."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.headers import (
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rmqtwin.fakes.dispatch import Channel, decode_header, response

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore


@dataclass(eq=False, kw_only=True)
class QueryProcessor:
    config: BrokerConfig
    store: MessageStore

    def query_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, QueryMessageRequestHeader)
        max_num = header.max_num
        if header.unique_key_query:
            max_num = self.config.default_query_max_num
        result = self.store.query_message(
            header.topic, header.key, max_num, header.begin_timestamp, header.end_timestamp
        )
        answer_header = QueryMessageResponseHeader(
            index_last_update_timestamp=result.index_last_update_timestamp,
            index_last_update_phyoffset=result.index_last_update_phyoffset,
        )
        if result.message_buffers:
            body = b"".join(bytes(b) for b in result.message_buffers)
            return response(ext_fields=answer_header, body=body)
        return response(
            ResponseCode.QUERY_NOT_FOUND, "can not find message, maybe time range not correct", answer_header
        )

    def view_message_by_id(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        offset = decode_header(request, ViewMessageRequestHeader).offset
        data = self.store.select_one_message_by_offset(offset)
        if data:
            return response(body=data)
        return response(ResponseCode.SYSTEM_ERROR, f"can not find message by the offset, {offset}")
