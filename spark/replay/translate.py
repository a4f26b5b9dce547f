"""What keeps a replay meaningful on a target whose state differs from the recorded cluster.

Sends keep body, properties, keys, tags and ``UNIQ_KEY`` (new ones with ``new_ids``); pulls and offset
commits move from recorded queue offsets to the target's, relative to the first recorded offset per queue;
END_TRANSACTION points at the replayed half message; client ids get the replay suffix; redacted
credentials are re-signed. :class:`ReplayContext` is what every task needs (it pickles);
:class:`ConnectionTranslator` is the state of one replayed connection.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.errors import MessageIdError
from rmqtwin.codec.message import (
    MessageConst,
    UniqIdGenerator,
    decode_offset_msg_id,
    properties_to_string,
    string_to_properties,
)
from rmqtwin.fakes.broker.acl import ACCESS_KEY, sign_request
from rmqtwin.spark.replay.plan import TRANS_HALF_TOPIC, QueueKey
from rmqtwin.spark.tables import SEND_CODES

__all__ = ["ConnectionTranslator", "ReplayContext", "request_queue", "request_topic"]

UNIQ_KEY = MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX
SYSTEM_TOPIC_PREFIXES = ("%RETRY%", "%DLQ%", "RMQ_SYS_", "TBW102", "SCHEDULE_")
_NAMED_RE = re.compile(rb'"(topic|groupName|consumerGroup|producerGroup)":"([^"]+)"')
GROUP_FIELDS = ("consumerGroup", "producerGroup", "group")
CLIENT_ID_FIELDS = ("clientID", "clientId", "consumerId")
OFFSET_FIELDS: dict[int, tuple[str, ...]] = {
    RequestCode.PULL_MESSAGE: ("queueOffset", "commitOffset"),
    RequestCode.LITE_PULL_MESSAGE: ("queueOffset", "commitOffset"),
    RequestCode.UPDATE_CONSUMER_OFFSET: ("commitOffset",),
}


def request_topic(cmd: RemotingCommand) -> str | None:
    """The topic a request names (``b`` in SEND_MESSAGE_V2's letters)."""
    if cmd.code in SEND_CODES:
        return cmd.ext("b") or cmd.ext("topic")
    return cmd.ext("topic")


def request_queue(cmd: RemotingCommand) -> int | None:
    value = cmd.ext("e") if cmd.code in SEND_CODES and cmd.ext("e") is not None else cmd.ext("queueId")
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass(slots=True)
class ReplayContext:
    """Everything a task needs besides its connections; built once by the driver."""

    namesrv: str
    brokers: dict[str, str]
    """Broker name → target address."""
    recorded_bases: dict[QueueKey, int] = field(default_factory=dict)
    target_bases: dict[QueueKey, int] = field(default_factory=dict)
    shared_queues: set[QueueKey] = field(default_factory=set)
    """Queues several recorded connections sent to (:attr:`CapturePlan.shared_queues`)."""
    client_ids: list[str] = field(default_factory=list)
    target_names: dict[str, tuple[str, str]] = field(default_factory=dict)
    """The target's cluster and broker names that differ from the recorded ones → (the recorded name,
    ``clusterName`` or ``brokerName``: the normaliser that reads one as the other)."""
    run_id: str = "replay"
    speed: float | None = 1.0
    """Recorded time is divided by this; None replays as fast as the target answers (``max``)."""
    window: int = 128
    """At ``max`` speed, at most this many requests wait for their answer per connection."""
    new_ids: bool = False
    access_key: str | None = None
    secret_key: str | None = None
    renames: dict[str, str] = field(default_factory=dict)
    topic_prefix: str = ""
    suffix_topics: bool = False
    """``--scale`` copy K (K ≥ 1) replays topic T as T-K and group G as G-K (a group's consumers must
    subscribe alike), retry and DLQ topics with them (else every copy shares topics and groups)."""
    scale: int = 1
    answer_timeout_s: float = 30.0
    duration_s: float | None = None

    def interleaved(self, queue: QueueKey) -> bool:
        """Whether sends of several replayed connections land in ``queue`` (recorded so, or ``--scale``
        copies sharing topics), or the target writes to it on its own (the transaction half queue, where
        its check service re-puts the half messages it checks, whenever its timer fires): which send
        gets which offset is then the target's interleaving."""
        return (
            queue[1] == TRANS_HALF_TOPIC
            or queue in self.shared_queues
            or (self.scale > 1 and not self.suffix_topics)
        )

    def suffix(self, copy: int) -> str:
        return f"-{self.run_id}" + (f"-{copy}" if copy else "")

    def topic(self, recorded: str, copy: int = 0) -> str:
        """The target's name of a recorded topic for ``--scale`` copy ``copy`` (system, retry and DLQ
        topics keep their names)."""
        for prefix in ("%RETRY%", "%DLQ%"):
            if recorded.startswith(prefix):
                return prefix + self.group(recorded.removeprefix(prefix), copy)
        if recorded in self.renames:
            name = self.renames[recorded]
        elif recorded.startswith(SYSTEM_TOPIC_PREFIXES):
            return recorded
        else:
            name = self.topic_prefix + recorded
        return f"{name}-{copy}" if self.suffix_topics and copy else name

    def group(self, recorded: str, copy: int) -> str:
        """The target's name of a producer or consumer group for ``--scale`` copy ``copy``."""
        if not (self.suffix_topics and copy) or recorded.startswith(
            ("CID_RMQ_SYS_", "CLIENT_INNER_PRODUCER")
        ):
            return recorded
        return f"{recorded}-{copy}"

    def target_base(self, broker: str | None, topic: str, queue: int, copy: int) -> int:
        """The target's offset where the recorded queue's replay starts (its max offset before)."""
        return self.target_bases.get((broker or "", self.topic(topic, copy), queue), 0)

    def translate_offset(
        self, broker: str | None, topic: str, queue: int, recorded: int, copy: int = 0
    ) -> int:
        """``target base + (recorded - first recorded)``; unchanged for a queue the capture never saw."""
        base = self.recorded_bases.get((broker or "", topic, queue))
        if base is None or recorded < 0:
            return recorded
        return max(0, self.target_base(broker, topic, queue, copy) + recorded - base)


@dataclass(slots=True)
class _Sent:
    uniq: str
    offset_msg_id: str | None
    queue_offset: str | None
    transaction_id: str | None


class ConnectionTranslator:
    """Rewrites one connection's recorded requests for the target and learns from its answers."""

    def __init__(self, ctx: ReplayContext, broker: str | None, copy: int) -> None:
        self.ctx = ctx
        self.broker = broker
        self.copy = copy
        self.suffix = ctx.suffix(copy)
        self._cids = [(cid, cid + self.suffix) for cid in ctx.client_ids]
        self._body_cids = [(f'"{a}"'.encode(), f'"{b}"'.encode()) for a, b in self._cids]
        self._new_uniq: dict[str, str] = {}
        self._uniq_gen = UniqIdGenerator() if ctx.new_ids else None
        self.half: dict[str, tuple[_Sent, _Sent]] = {}
        """Recorded UNIQ_KEY of a send → (recorded, replayed) answers, for END_TRANSACTION."""
        self._sends_seen: set[str] = set()

    # --- outgoing ----------------------------------------------------------------------------------

    def waits(self, cmd: RemotingCommand) -> bool:
        """Whether ``cmd`` (recorded, not yet rewritten) must wait: an END_TRANSACTION whose half message
        was sent on this connection and is not answered yet."""
        if cmd.code != RequestCode.END_TRANSACTION:
            return False
        uniq = cmd.ext("msgId")
        return uniq is not None and uniq in self._sends_seen and uniq not in self.half

    def request(self, cmd: RemotingCommand) -> None:
        """Rewrite ``cmd`` in place for the target."""
        ext = cmd.ext_fields
        if ext is not None:
            for name in CLIENT_ID_FIELDS:
                value = ext.get(name)
                if value is not None and value in self.ctx.client_ids:
                    ext[name] = value + self.suffix
            self._translate_offsets(cmd, ext)  # keyed by the recorded topic: before any rename
            if cmd.code == RequestCode.END_TRANSACTION:
                self._end_transaction(ext)
            for name in ("topic", "b") if cmd.code in SEND_CODES else ("topic",):
                if name in ext:
                    ext[name] = self.ctx.topic(ext[name], self.copy)
            for name in ("a",) if cmd.code in SEND_CODES else GROUP_FIELDS:
                if name in ext:
                    ext[name] = self.ctx.group(ext[name], self.copy)
            if cmd.code in SEND_CODES and self._uniq_gen is not None:
                self._mint_ids(ext)
        if cmd.body and cmd.code not in SEND_CODES:
            cmd.body = self._with_topics(self.with_client_ids(cmd.body))

    def with_client_ids(self, body: bytes) -> bytes:
        """A JSON body with the recorded client ids given the replay suffix."""
        for old, new in self._body_cids:
            body = body.replace(old, new)
        return body

    def _with_topics(self, body: bytes) -> bytes:
        """A JSON body (heartbeat subscriptions, locked queues, ...) naming the target's topics and groups."""
        ctx = self.ctx
        if not (ctx.renames or ctx.topic_prefix or (ctx.suffix_topics and self.copy)):
            return body

        def renamed(match: re.Match[bytes]) -> bytes:
            key, value = match[1], match[2].decode()
            new = ctx.topic(value, self.copy) if key == b"topic" else ctx.group(value, self.copy)
            return b'"' + key + b'":"' + new.encode() + b'"'

        return _NAMED_RE.sub(renamed, body)

    def sign(self, cmd: RemotingCommand) -> None:
        """Re-sign with the replay's credentials a request that was signed when recorded."""
        if self.ctx.access_key and self.ctx.secret_key and cmd.ext(ACCESS_KEY) is not None:
            assert cmd.ext_fields is not None
            cmd.ext_fields.pop("Signature", None)
            sign_request(cmd, self.ctx.access_key, self.ctx.secret_key)

    def _mint_ids(self, ext: dict[str, str]) -> None:
        name = "i" if "i" in ext else "properties"
        props = string_to_properties(ext.get(name))
        old = props.get(UNIQ_KEY)
        if not old or self._uniq_gen is None:
            return
        new = self._new_uniq.setdefault(old, self._uniq_gen())
        props[UNIQ_KEY] = new
        ext[name] = properties_to_string(props, trailing_separator=ext.get(name, "").endswith("\x02"))

    def _translate_offsets(self, cmd: RemotingCommand, ext: dict[str, str]) -> None:
        fields = OFFSET_FIELDS.get(cmd.code)
        topic = ext.get("topic")
        queue = request_queue(cmd)
        if not fields or topic is None or queue is None:
            return
        for name in fields:
            value = ext.get(name)
            if value is not None and value.lstrip("-").isdigit():
                ext[name] = str(self.ctx.translate_offset(self.broker, topic, queue, int(value), self.copy))

    def _end_transaction(self, ext: dict[str, str]) -> None:
        uniq = ext.get("msgId")
        pair = self.half.get(uniq) if uniq is not None else None
        if pair is None:  # its half message is not on this connection (or failed): sent as recorded
            return
        recorded, replayed = pair
        ext["msgId"] = replayed.uniq
        if replayed.offset_msg_id is not None:
            with contextlib.suppress(MessageIdError):
                ext["commitLogOffset"] = str(decode_offset_msg_id(replayed.offset_msg_id)[2])
        if replayed.queue_offset is not None:
            ext["tranStateTableOffset"] = replayed.queue_offset
        tid = ext.get("transactionId")
        if tid is not None:
            if tid == recorded.transaction_id and replayed.transaction_id is not None:
                ext["transactionId"] = replayed.transaction_id
            elif tid == recorded.uniq:
                ext["transactionId"] = replayed.uniq

    # --- incoming ----------------------------------------------------------------------------------

    def expect_send(self, cmd: RemotingCommand) -> str | None:
        """Note a recorded half message about to go out (before :meth:`request`); its UNIQ_KEY, which
        an END_TRANSACTION may wait for (None for any other request)."""
        if cmd.code not in SEND_CODES:
            return None
        text = cmd.ext("i") if cmd.ext("i") is not None else cmd.ext("properties")
        if text is None or MessageConst.PROPERTY_TRANSACTION_PREPARED not in text:
            return None  # not a half message (without parsing the properties)
        props = string_to_properties(text)
        uniq = props.get(UNIQ_KEY)
        if uniq is None or props.get(MessageConst.PROPERTY_TRANSACTION_PREPARED) != "true":
            return None
        self._sends_seen.add(uniq)
        return uniq

    def answered_send(
        self, recorded_uniq: str, recorded: RemotingCommand | None, replayed: RemotingCommand
    ) -> None:
        if replayed.code != ResponseCode.SUCCESS:
            return
        self.half[recorded_uniq] = (
            _sent(recorded_uniq, recorded),
            _sent(self.replayed_uniq(recorded_uniq), replayed),
        )

    def replayed_uniq(self, recorded: str) -> str:
        """The UNIQ_KEY a recorded one was sent under (itself unless ``--new-ids`` minted one)."""
        return self._new_uniq.get(recorded, recorded)

    def client_id_free(self, text: str) -> str:
        """``text`` without this replay's suffix on client ids (to compare with what was recorded)."""
        for old, new in self._cids:
            text = text.replace(new, old)
        return text


def _sent(uniq: str, answer: RemotingCommand | None) -> _Sent:
    if answer is None:
        return _Sent(uniq, None, None, None)
    return _Sent(uniq, answer.ext("msgId"), answer.ext("queueOffset"), answer.ext("transactionId"))
