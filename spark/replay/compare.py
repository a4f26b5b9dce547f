"""Each replayed answer against the recorded one, after named normalisers for what legitimately differs.

A normaliser is applied only when the two sides differ in that field; the verdict row lists the ones
used, so a reader sees "same after msgId, queue offsets" rather than a silent pass. Pulled messages are
compared by body, keys and tags in order; per queue the whole pulled sequence is compared at the end.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from rmqtwin.codec.codes import ResponseCode, response_code_name
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.message import MessageConst, decode_message_records
from rmqtwin.spark.replay.plan import PULL_CODES
from rmqtwin.spark.tables import SEND_CODES

__all__ = [
    "NORMALISERS",
    "Comparison",
    "PulledMessage",
    "compare_answers",
    "pulled_messages",
]

SAME = "same"
DIFFERS = "differs"

_HOST_RE = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b")
_TIMESTAMP_RE = re.compile(r"\b1\d{12}\b")
_OFFSET_MSG_ID_RE = re.compile(r"\b[0-9A-F]{32}\b")

NORMALISERS: dict[str, str] = {
    "msgId": "message ids minted anew (--new-ids)",
    "offsetMsgId": "offset msgIds: store host and commitlog offset of the target",
    "timestamps": "store/born timestamps and other epoch-millisecond values",
    "hosts": "host:port addresses of the target instead of the recorded cluster",
    "brokerName": "broker names of the target",
    "queueOffset": "queue offsets shifted by the translation (compared relative to the first per queue)",
    "maxOffset": "a pull answer's maxOffset: what the queue held when the target answered (sends race it)",
    "interleaving": "a send's queue offset in a queue several connections send to (the target interleaves)",
    "clientId": "client ids with the replay suffix",
    "clusterName": "the target's cluster name instead of the recorded cluster's (one each)",
    "transactionId": "transaction ids derived from the new offset msgId",
}

_IGNORED_FIELDS = {
    "msgId": "offsetMsgId",  # a send answer's msgId is the offset msgId
    "transactionId": "transactionId",
    "MSG_REGION": "brokerName",
    "brokerName": "brokerName",
    "bname": "brokerName",
    "storeTimestamp": "timestamps",
    "timestamp": "timestamps",
    "suggestWhichBrokerId": "brokerName",
}
_OFFSET_FIELDS = ("queueOffset", "nextBeginOffset", "minOffset", "maxOffset", "offset")


@dataclass(frozen=True, slots=True)
class PulledMessage:
    body: bytes
    tags: str | None
    keys: str | None


@dataclass(slots=True)
class Comparison:
    verdict: str
    detail: str = ""
    normalisers: list[str] = field(default_factory=list)


def pulled_messages(cmd: RemotingCommand) -> list[PulledMessage]:
    """The messages of a FOUND pull answer (empty for any other answer or an undecodable body)."""
    if cmd.code != ResponseCode.SUCCESS or not cmd.body:
        return []
    try:
        records = decode_message_records(cmd.body)
    except (CodecError, ValueError):
        return []
    return [
        PulledMessage(
            bytes(m.body or b""),
            (m.properties or {}).get(MessageConst.PROPERTY_TAGS),
            (m.properties or {}).get(MessageConst.PROPERTY_KEYS),
        )
        for m in records
    ]


def _text_normalisers(text: str, other: str, used: set[str]) -> tuple[str, str]:
    for name, pattern, token in (
        ("hosts", _HOST_RE, "<host>"),
        ("timestamps", _TIMESTAMP_RE, "<ts>"),
        ("offsetMsgId", _OFFSET_MSG_ID_RE, "<offsetMsgId>"),
    ):
        if text == other:
            break
        a, b = pattern.sub(token, text), pattern.sub(token, other)
        if (a, b) != (text, other):
            used.add(name)
        text, other = a, b
    return text, other


def _recorded_names(
    recorded: str, replayed: str, names: Mapping[str, tuple[str, str]], used: set[str]
) -> str:
    """``replayed`` with the target's cluster/broker names (as JSON strings) read as the recorded ones."""
    for target, (original, normaliser) in names.items():
        quoted = f'"{target}"'
        if quoted in replayed and quoted not in recorded:
            replayed = replayed.replace(quoted, f'"{original}"')
            used.add(normaliser)
    return replayed


def _first_difference(a: str, b: str, context: int = 40) -> str:
    """Where two normalised texts part: ``; at N: '…recorded' → '…replayed'``."""
    at = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, at - 10)
    return f"; at {at}: {a[start : at + context]!r} → {b[start : at + context]!r}"


def _shown(value: str | None) -> str:
    return "absent" if value is None else repr(value)


def _holds_what_was_read(
    max_offset: str, recorded: Mapping[str, str], offset_shift: Callable[[int], int] | None
) -> bool:
    """Whether a replayed pull answer's ``maxOffset`` (in recorded terms) covers the recorded answer's
    ``nextBeginOffset``: the queue held what the consumer read, and more or less besides as the sends
    racing the pull went (the pulled messages are compared on their own)."""
    read = recorded.get("nextBeginOffset")
    if not max_offset.isdigit() or read is None or not read.isdigit():
        return False
    held = int(max_offset) if offset_shift is None else offset_shift(int(max_offset))
    return held >= int(read)


def compare_answers(
    request_code: int,
    recorded: RemotingCommand,
    replayed: RemotingCommand,
    *,
    offset_shift: Callable[[int], int] | None = None,
    client_id_free: Callable[[str], str] = lambda s: s,
    target_names: Mapping[str, tuple[str, str]] | None = None,
    interleaved: bool = False,
) -> Comparison:
    """The verdict of one answer; ``offset_shift`` maps a replayed queue offset back into recorded terms,
    ``target_names`` the target's cluster and broker names (JSON strings of a body) to the recorded ones
    and the normaliser that names the change; ``interleaved``: the send's queue has other senders, so its
    offset is the target's interleaving (one send overtaking another shifts every later one)."""
    used: set[str] = set()
    diffs: list[str] = []
    if recorded.code != replayed.code:
        diffs.append(f"code {response_code_name(recorded.code)} → {response_code_name(replayed.code)}")
    rec_remark, rep_remark = recorded.remark or "", client_id_free(replayed.remark or "")
    if rec_remark != rep_remark:
        rec_remark, rep_remark = _text_normalisers(rec_remark, rep_remark, used)
        if rec_remark != rep_remark:
            diffs.append(f"remark {recorded.remark!r} → {replayed.remark!r}")
    rec_ext, rep_ext = recorded.ext_fields or {}, replayed.ext_fields or {}
    for name in sorted(set(rec_ext) | set(rep_ext)):
        a, b = rec_ext.get(name), rep_ext.get(name)
        if a == b:
            continue
        if a is None or b is None:
            if name in _IGNORED_FIELDS:
                used.add(_IGNORED_FIELDS[name])
                continue
            diffs.append(
                f"{name} {'absent' if a is None else repr(a)} → {'absent' if b is None else repr(b)}"
            )
            continue
        if name in _IGNORED_FIELDS:
            used.add(_IGNORED_FIELDS[name])
            continue
        if interleaved and name == "queueOffset" and request_code in SEND_CODES:
            used.add("interleaving")
            continue
        if (
            name == "maxOffset"
            and request_code in PULL_CODES
            and _holds_what_was_read(b, rec_ext, offset_shift)
        ):
            used.add("maxOffset")
            continue
        shifted = name in _OFFSET_FIELDS and offset_shift is not None and b.lstrip("-").isdigit()
        if shifted and offset_shift is not None and str(offset_shift(int(b))) == a:
            used.add("queueOffset")
            continue
        a2, b2 = _text_normalisers(a, client_id_free(b), used)
        if a2 != b2:
            diffs.append(f"{name} {a!r} → {b!r}")
    if request_code in PULL_CODES:
        rec_msgs, rep_msgs = pulled_messages(recorded), pulled_messages(replayed)
        if rec_msgs != rep_msgs:
            diffs.append(f"pulled {len(rec_msgs)} messages → {len(rep_msgs)}, not the same bodies in order")
        elif rec_msgs:
            used.update(("offsetMsgId", "timestamps"))
    elif request_code not in SEND_CODES and (recorded.body or b"") != (replayed.body or b""):
        a = (recorded.body or b"").decode("utf-8", "replace")
        raw = (replayed.body or b"").decode("utf-8", "replace")
        b = client_id_free(raw)
        if b != raw:
            used.add("clientId")
        b = _recorded_names(a, b, target_names or {}, used)
        a, b = _text_normalisers(a, b, used)
        if a != b:
            diffs.append(
                f"body differs ({len(recorded.body or b'')} → {len(replayed.body or b'')} bytes"
                f"{_first_difference(a, b)})"
            )
    return Comparison(DIFFERS if diffs else SAME, "; ".join(diffs), sorted(used))
