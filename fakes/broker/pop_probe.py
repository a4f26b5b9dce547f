"""Looking at a group's POP state without popping (5.x): PEEK_MESSAGE, NOTIFICATION, POLLING_INFO.

Follows ``PeekMessageProcessor``, ``NotificationProcessor`` and ``PollingInfoProcessor`` of 5.5.0. They
share POP's topic, queue and group checks (``PopProcessor.readable_by``) and its offsets: a queue is
read from the group's consumer offset (the queue's minimum for a group without one), or from the
offset POP has already handed out when that is further on.

- PEEK returns up to ``maxMsgNums`` messages from there (the pop retry topic first one time in five)
  and changes nothing: no checkpoint, no offset, no retry topic. Nothing found is PULL_NOT_FOUND.
- NOTIFICATION answers ``hasMsg``: whether any queue (or the one asked) holds a message past that
  offset, an orderly one counting only while the queue is not blocked by an orderly pop. Without one
  it waits up to ``pollTime`` for a message, as a POP does, and answers ``hasMsg=false`` at the end.
- POLLING_INFO answers ``pollingNum``: how many POPs of the group wait on ``topic@queueId``.

Their successful answers (and RECALL_MESSAGE's) keep ``createResponseCommand(Class)``'s remark.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.headers import (
    NotificationRequestHeader,
    NotificationResponseHeader,
    PeekMessageRequestHeader,
    PollingInfoRequestHeader,
    PollingInfoResponseHeader,
    PopMessageResponseHeader,
)
from rmqtwin.fakes.broker.pop import PopProcessor, PopRequest, java_defaults, stamp_born_time
from rmqtwin.fakes.broker.topics import is_readable
from rmqtwin.fakes.dispatch import NOT_SET_REMARK, Channel, decode_header, response
from rmqtwin.store_mirror.message_store import GetMessageStatus

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.broker.offsets import ConsumerOffsetTable
    from rmqtwin.fakes.broker.stats import BrokerStats
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.store_mirror.message_store import MessageStore

_OFFSET_WRONG = (GetMessageStatus.OFFSET_TOO_SMALL, GetMessageStatus.OFFSET_OVERFLOW_BADLY)


@dataclass(eq=False, kw_only=True)
class PopProbeProcessor:
    pop: PopProcessor
    """The pop state these read (pop offsets, orderly infos, parked requests) and its shared checks."""
    config: BrokerConfig
    offsets: ConsumerOffsetTable
    store: MessageStore
    stats: BrokerStats
    now_ms: Callable[[], int]

    def _broker_unreadable(self) -> RemotingCommand | None:
        if is_readable(self.config.broker_permission):
            return None
        ip = self.config.broker_ip1
        return response(ResponseCode.NO_PERMISSION, f"the broker[{ip}] peeking message is forbidden")

    def _queues_in_pop_order(
        self, topic: str, group: str, queue_id: int, enough: Callable[[], bool]
    ) -> Iterator[tuple[str, int]]:
        """PEEK and NOTIFICATION look at the pop retry topic first one time in five (``randomQ % 5``)."""
        random_q = random.randrange(100)
        return self.pop.queues_in_pop_order(
            topic, group, queue_id, random_q, need_retry=random_q % 5 == 0, enough=enough
        )

    def _offset(self, topic: str, group: str, queue_id: int) -> int:
        """``getPopOffset``: the consumer offset (else the queue's minimum), or POP's further one."""
        offset = self.offsets.query_offset(group, topic, queue_id)
        if offset < 0:
            offset = self.store.get_min_offset_in_queue(topic, queue_id)
        handed_out = self.pop.pop_offsets.get((topic, group, queue_id))
        return offset if handed_out is None else max(handed_out, offset)

    # -- PEEK_MESSAGE ------------------------------------------------------------------------------
    def peek_message(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, PeekMessageRequestHeader, strict=False)
        java_defaults(header, queue_id=0, max_msg_nums=0)
        refused = self._broker_unreadable() or self.pop.readable_by(
            channel, header.topic, header.queue_id, header.consumer_group
        )
        if refused is not None:
            return refused
        found: list[bytes] = []
        queues = self._queues_in_pop_order(
            header.topic, header.consumer_group, header.queue_id, lambda: len(found) >= header.max_msg_nums
        )
        rest = sum(self._peek_queue(header, topic, queue_id, found) for topic, queue_id in queues)
        answer = PopMessageResponseHeader(pop_time=0, invisible_time=0, revive_qid=0, rest_num=rest)
        if not found:
            return response(ResponseCode.PULL_NOT_FOUND, "NO_MESSAGE_IN_QUEUE", answer)
        self.stats.on_get(header.topic, len(found), header.consumer_group)
        return response(ResponseCode.SUCCESS, "FOUND", answer, b"".join(found))

    def _peek_queue(
        self, header: PeekMessageRequestHeader, topic: str, queue_id: int, found: list[bytes]
    ) -> int:
        """``peekMsgFromQueue``: appends what it reads to ``found``; returns the queue's rest."""
        store, group = self.store, header.consumer_group
        offset = self._offset(topic, group, queue_id)
        rest = store.get_max_offset_in_queue(topic, queue_id) - offset
        wanted = header.max_msg_nums - len(found)
        if wanted <= 0:
            return rest
        result = store.get_message(group, topic, queue_id, offset, wanted, None)
        if result.status in _OFFSET_WRONG:
            result = store.get_message(group, topic, queue_id, result.next_begin_offset, wanted, None)
        found.extend(bytes(buffer) for buffer in result.message_buffers)
        return rest

    # -- NOTIFICATION ------------------------------------------------------------------------------
    def notification(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        stamp_born_time(request, self.now_ms)
        header = decode_header(request, NotificationRequestHeader, strict=False)
        java_defaults(header, queue_id=0, poll_time=0, born_time=0)
        refused = self._broker_unreadable() or self.pop.readable_by(
            channel, header.topic, header.queue_id, header.consumer_group
        )
        if refused is not None:
            return refused
        has_msg = any(
            self._queue_has_message(header, topic, queue_id)
            for topic, queue_id in self._queues_in_pop_order(
                header.topic, header.consumer_group, header.queue_id, lambda: False
            )
        )
        if not has_msg and header.poll_time > 0:
            expired_ms = header.born_time + header.poll_time
            if self.now_ms() < expired_ms:
                self.pop.park(
                    PopRequest(
                        request,
                        channel,
                        header.topic,
                        header.consumer_group,
                        header.queue_id,
                        expired_ms,
                        self.notification,
                    )
                )
                return None
        return response(ResponseCode.SUCCESS, NOT_SET_REMARK, NotificationResponseHeader(has_msg=has_msg))

    def _queue_has_message(self, header: NotificationRequestHeader, topic: str, queue_id: int) -> bool:
        if header.order:
            info = self.pop.order_infos.get((header.topic, header.consumer_group, queue_id))
            if info is not None and info.need_block(header.attempt_id, 0, self.now_ms()):
                return False
        offset = self._offset(topic, header.consumer_group, queue_id)
        return self.store.get_max_offset_in_queue(topic, queue_id) - offset > 0

    # -- POLLING_INFO ------------------------------------------------------------------------------
    def polling_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, PollingInfoRequestHeader, strict=False)
        java_defaults(header, queue_id=0)
        refused = self._broker_unreadable() or self.pop.readable_by(
            channel, header.topic, header.queue_id, header.consumer_group
        )
        if refused is not None:
            return refused
        waiting = self.pop.polling_num(header.topic, header.consumer_group, header.queue_id)
        return response(ResponseCode.SUCCESS, NOT_SET_REMARK, PollingInfoResponseHeader(polling_num=waiting))
