"""Timer messages (5.x): ``TIMER_DELIVER_MS`` / ``TIMER_DELAY_SEC`` / ``TIMER_DELAY_MS`` on reactor time.

The send path follows ``HookUtils.transformTimerMessage`` of 5.5.0: the delivery time is rounded down to
the timer precision (1 s; a time on a whole second is one second earlier), a time more than
``timerMaxDelaySec`` ahead is refused, and the message is stored in ``rmq_sys_wheel_timer`` queue 0 with
``TIMER_OUT_MS``, ``REAL_TOPIC`` and ``REAL_QID``. A time already passed leaves the message as it is.
This service re-puts each one to its real topic and queue once its ``TIMER_OUT_MS`` has come, with
``TIMER_ENQUEUE_MS`` and ``TIMER_DEQUEUE_MS`` added and the record's properties string keeping
``REAL_TOPIC``/``REAL_QID``, as ``TimerMessageStore.convert`` does.

State that survives a restart is the timer topic itself plus ``config/timerOffset.json``
(twin-specific: 5.5.0 keeps a timer wheel, timer log and checkpoint files the twin does not write):
the queue offset below which every timer message is delivered, and the offsets above it already
delivered. A recall marker (RECALL_MESSAGE, fakes/broker/recall.py) due at the same second drops the
message it names (``TIMER_DEL_UNIQKEY``); neither is delivered. Not modelled: rolling of messages beyond
the wheel's span, flow control.
"""

from __future__ import annotations

import base64
import heapq
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, TypedDict

from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.message import MessageExt, decode_message_record
from rmqtwin.fakes.broker.topics import TIMER_TOPIC  # TimerMessageStore.TIMER_TOPIC
from rmqtwin.store_mirror.config import ConfigManager, JsonObject, json_int, json_list
from rmqtwin.store_mirror.message_store import GetMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner, properties_to_string

if TYPE_CHECKING:
    from rmqtwin.fakes.broker.schedule import Reput
    from rmqtwin.store_mirror.message_store import MessageStore

TIMER_GROUP = "TIMER_CONSUMER"
TIMER_PRECISION_MS = 1000  # MessageStoreConfig.timerPrecisionMs
TIMER_MAX_DELAY_SEC = 3600 * 24 * 3  # MessageStoreConfig.timerMaxDelaySec
TIMER_PROPERTIES = ("TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")
RECALL_HANDLE_VERSION = "v1"


def timer_illegal_remark() -> str:
    """``SendMessageProcessor``'s remark for ``WHEEL_TIMER_MSG_ILLEGAL``."""
    return (
        "timer message illegal, the delay time should not be bigger than the max delay "
        f"{TIMER_MAX_DELAY_SEC * 1000}ms; or if set del msg, the delay time should be bigger than the "
        "current time"
    )


def build_recall_handle(topic: str, broker_name: str, timestamp_ms: int, message_id: str) -> str:
    """``RecallMessageHandle.HandleV1.buildHandle`` (``Base64.getUrlEncoder``, padded): what a timer
    message's send answer carries for RECALL_MESSAGE (fakes/broker/recall.py)."""
    raw = " ".join((RECALL_HANDLE_VERSION, topic, broker_name, str(timestamp_ms), message_id))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii")


def timer_delete_key(topic: str, unique_key: str) -> str:
    """``TimerMessageStore.buildDeleteKey``: what a recall marker's ``TIMER_DEL_UNIQKEY`` names."""
    return f"{topic}+{unique_key}"


def transform_timer_message(props: dict[str, str], topic: str, queue_id: int, now_ms: int) -> bool | None:
    """``HookUtils.checkIfTimerMessage`` + ``transformTimerMessage`` on a message's properties.

    Returns None when the message is not a timer message (left as it is), True when it is parked
    (``props`` now carry ``TIMER_OUT_MS``/``REAL_TOPIC``/``REAL_QID``: store it in ``TIMER_TOPIC`` queue
    0), False when it is illegal (refused with ``timer_illegal_remark``).
    """
    if props.get("DELAY", "0") not in ("", "0"):
        for name in TIMER_PROPERTIES:
            props.pop(name, None)
        return None
    if topic == TIMER_TOPIC or "TIMER_OUT_MS" in props or not any(name in props for name in TIMER_PROPERTIES):
        return None
    try:
        if "TIMER_DELAY_SEC" in props:
            deliver_ms = now_ms + int(props["TIMER_DELAY_SEC"]) * 1000
        elif "TIMER_DELAY_MS" in props:
            deliver_ms = now_ms + int(props["TIMER_DELAY_MS"])
        else:
            deliver_ms = int(props["TIMER_DELIVER_MS"])
    except ValueError:
        return False
    if deliver_ms <= now_ms:
        return False if "TIMER_DEL_UNIQKEY" in props else None
    if deliver_ms - now_ms > TIMER_MAX_DELAY_SEC * 1000:
        return False
    if deliver_ms % TIMER_PRECISION_MS == 0:
        deliver_ms -= TIMER_PRECISION_MS
    else:
        deliver_ms = deliver_ms // TIMER_PRECISION_MS * TIMER_PRECISION_MS
    props["TIMER_OUT_MS"] = str(deliver_ms)
    props["REAL_TOPIC"] = topic
    props["REAL_QID"] = str(queue_id)
    return True


class TimerOffsetJson(TypedDict):
    """``timerOffset.json`` (twin-specific): below ``checkpoint`` all delivered, and the offsets delivered
    at or above it."""

    checkpoint: int
    delivered: list[int]


class TimerMessageService(ConfigManager):
    """Delivers parked timer messages when due; its progress is ``config/timerOffset.json``."""

    def __init__(self, store_dir: str, store: MessageStore, reput: Reput, now_ms: Callable[[], int]) -> None:
        super().__init__(os.path.join(store_dir, "config", "timerOffset.json"))
        self.store = store
        self.reput = reput
        self.now_ms = now_ms
        self.checkpoint = 0  # every timer message below this queue offset is delivered
        self.delivered: set[int] = set()  # offsets at or above the checkpoint already delivered
        self.scanned = 0  # next queue offset to read into the wheel
        self.wheel: list[tuple[int, int]] = []  # (TIMER_OUT_MS, queue offset)
        self.deleted: set[str] = set()  # the recall markers' TIMER_DEL_UNIQKEY still on the wheel

    def encode(self) -> TimerOffsetJson:
        return {"checkpoint": self.checkpoint, "delivered": sorted(self.delivered)}

    def decode(self, obj: JsonObject) -> None:
        self.checkpoint = json_int(obj.get("checkpoint") or 0)
        self.delivered = {json_int(o) for o in json_list(obj.get("delivered"))}
        self.scanned = self.checkpoint

    def _scan(self) -> None:
        """Read timer messages stored since the last scan into the wheel."""
        store = self.store
        max_offset = store.get_max_offset_in_queue(TIMER_TOPIC, 0)
        while self.scanned < max_offset:
            result = store.get_message(TIMER_GROUP, TIMER_TOPIC, 0, self.scanned, 32, None)
            if result.status is not GetMessageStatus.FOUND:
                if result.next_begin_offset > self.scanned:
                    self.scanned = result.next_begin_offset
                    continue
                return
            for i, buffer in enumerate(result.message_buffers):
                offset = result.message_queue_offsets[i]
                self.scanned = offset + 1
                if offset in self.delivered:
                    continue
                try:
                    msg, _ = decode_message_record(buffer, 0, decompress=False)
                    due = int(msg.properties.get("TIMER_OUT_MS", "0"))
                except (CodecError, ValueError):
                    due = 0
                else:
                    deleting = msg.properties.get("TIMER_DEL_UNIQKEY")
                    if deleting is not None:
                        self.deleted.add(deleting)
                heapq.heappush(self.wheel, (due, offset))

    def deliver_due(self) -> int:
        """Re-put every timer message whose time has come; returns how many were taken off the wheel."""
        self._scan()
        now_ms = self.now_ms()
        delivered = 0
        while self.wheel and self.wheel[0][0] <= now_ms:
            _, offset = heapq.heappop(self.wheel)
            result = self.store.get_message(TIMER_GROUP, TIMER_TOPIC, 0, offset, 1, None)
            if result.message_buffers:
                try:
                    msg, _ = decode_message_record(result.message_buffers[0], 0, decompress=False)
                except CodecError:
                    msg = None
                if msg is not None:
                    self._deliver(msg, now_ms)
            self.delivered.add(offset)
            delivered += 1
        self._advance(changed=delivered > 0)
        return delivered

    def _advance(self, *, changed: bool) -> None:
        pending = [offset for _, offset in self.wheel]
        checkpoint = min(pending) if pending else self.scanned
        if checkpoint != self.checkpoint or changed:
            self.checkpoint = checkpoint
            self.delivered = {o for o in self.delivered if o >= checkpoint}
            self.persist()

    def _deliver(self, msg: MessageExt, now_ms: int) -> None:
        props = dict(msg.properties)
        real_topic = props.get("REAL_TOPIC")
        if real_topic is None:
            return
        marker = props.get("TIMER_DEL_UNIQKEY")
        if marker is not None:
            # A recall marker is never delivered (``doPut`` refuses it); it dropped its message.
            self.deleted.discard(marker)
            return
        recalled = timer_delete_key(real_topic, props.get("UNIQ_KEY", ""))
        if recalled in self.deleted:
            self.deleted.discard(recalled)
            return
        props["TIMER_ENQUEUE_MS"] = str(msg.store_timestamp)
        props["TIMER_DEQUEUE_MS"] = str(now_ms)
        stored = properties_to_string(props)
        queue_id = int(props.pop("REAL_QID", "0"))
        props.pop("REAL_TOPIC", None)
        props["WAIT"] = "false"
        self.reput(MessageExtBrokerInner.moved(msg, real_topic, queue_id, props, stored), "timer")
