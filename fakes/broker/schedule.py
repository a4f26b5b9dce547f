"""Delay-level delivery (``ScheduleMessageService``) on reactor time.

The store parks a message with ``DELAY=n`` in ``SCHEDULE_TOPIC_XXXX`` queue ``n-1``; this service
re-puts each one to its ``REAL_TOPIC``/``REAL_QID`` once ``storeTimestamp + level delay`` has
passed. As in 4.9.8 the re-put record keeps the parked properties string (``DELAY``, ``REAL_TOPIC``,
``REAL_QID`` stay visible to consumers) while the in-memory map has no ``DELAY``, so it is not
parked again. Offsets per level are what ``delayOffset.json`` holds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from twisted.logger import Logger

from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.message import MessageExt, decode_message_record
from rmqtwin.fakes.broker.topics import SCHEDULE_TOPIC, TRANS_HALF_TOPIC
from rmqtwin.store_mirror.commitlog import PutMessageStatus
from rmqtwin.store_mirror.config import ScheduleOffsets
from rmqtwin.store_mirror.message_store import GetMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner, properties_to_string

if TYPE_CHECKING:
    from rmqtwin.fakes.broker.stats import BrokerStats
    from rmqtwin.store_mirror.message_store import MessageStore

SCHEDULE_GROUP = "SCHEDULE_CONSUMER"
TICK_SECONDS = 0.1
"""How often the delay-level and timer services look for due messages (the broker ticks them)."""

log = Logger()


class Reput:
    """Puts a due message back to its real topic, counts it and wakes the pulls parked on its queue:
    the last step of ``ScheduleMessageService`` and of the timer message store."""

    def __init__(self, store: MessageStore, stats: BrokerStats, notify: Callable[[str, int], None]) -> None:
        self.store = store
        self.stats = stats
        self.notify = notify

    def __call__(self, inner: MessageExtBrokerInner, service: str) -> bool:
        result = self.store.put_message(inner)
        if result.status is not PutMessageStatus.PUT_OK:
            log.warn(
                "{service} re-put of {topic} failed: {status}",
                service=service,
                topic=inner.topic,
                status=result.status.name,
            )
            return False
        self.stats.on_put(inner.topic, 1)
        self.notify(inner.topic, inner.queue_id)
        return True


class ScheduleMessageService(ScheduleOffsets):
    """Delivers due delay-level messages; its offsets per level are ``config/delayOffset.json``."""

    def __init__(
        self,
        store_dir: str,
        levels_ms: list[int],
        store: MessageStore,
        reput: Reput,
        now_ms: Callable[[], int],
    ) -> None:
        super().__init__(store_dir)
        self.levels_ms = levels_ms
        self.store = store
        self.reput = reput
        self.now_ms = now_ms

    def deliver_due(self) -> int:
        """Re-put every parked message whose time has come; returns how many were delivered."""
        delivered = 0
        store = self.store
        now_ms = self.now_ms()
        for level in range(1, len(self.levels_ms) + 1):
            queue_id = level - 1
            offset = self.offset_table.get(level, 0)
            max_offset = store.get_max_offset_in_queue(SCHEDULE_TOPIC, queue_id)
            moved = False
            while offset < max_offset:
                result = store.get_message(SCHEDULE_GROUP, SCHEDULE_TOPIC, queue_id, offset, 32, None)
                if result.status is not GetMessageStatus.FOUND:
                    if result.next_begin_offset > offset:
                        offset, moved = result.next_begin_offset, True
                        continue
                    break
                stop = False
                for i, buffer in enumerate(result.message_buffers):
                    queue_offset = result.message_queue_offsets[i] if result.message_queue_offsets else offset
                    try:
                        msg, _ = decode_message_record(buffer, 0, decompress=False)
                    except CodecError:
                        offset, moved = queue_offset + 1, True
                        continue
                    deliver_at = msg.store_timestamp + self.levels_ms[queue_id]
                    if deliver_at > now_ms:
                        stop = True
                        break
                    if self._deliver(msg):
                        delivered += 1
                    offset, moved = queue_offset + 1, True
                if stop:
                    break
            if moved:
                self.update_offset(level, offset)
        return delivered

    def _deliver(self, msg: MessageExt) -> bool:
        props = dict(msg.properties)
        real_topic = props.get("REAL_TOPIC")
        if real_topic is None or real_topic == TRANS_HALF_TOPIC:
            return False
        stored_props = properties_to_string(props)
        props.pop("DELAY", None)
        props["WAIT"] = "false"
        inner = MessageExtBrokerInner.moved(
            msg, real_topic, int(props.get("REAL_QID", "0")), props, stored_props
        )
        return self.reput(inner, "schedule")
