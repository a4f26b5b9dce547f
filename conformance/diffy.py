"""Comparing a candidate broker with a reference honestly: named normalisers, then the Diffy method.

An observation (what one scenario step saw: driver events, an mqadmin table, a raw answer) is first
passed through named normalisers that take out what legitimately differs between any two brokers
(message ids, timestamps, host:port, client ids, the run's own topic and group names, the order in
which queues interleave). It is then flattened to ``path -> value``.

The reference target runs every scenario twice. A path whose value differs between the two reference
runs is *noise*: it is reported, never compared. A candidate differs only at a path where both
reference runs agree and the candidate does not (a path missing on one side counts as a value,
``<absent>``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = [
    "ABSENT",
    "NORMALISERS",
    "Comparison",
    "compare",
    "flatten",
    "normalise",
]

ABSENT = "<absent>"

Json = object  # a JSON value: dict, list, str, int, float, bool or None

_HOST_RE = re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}:\d{1,5}\b")
_HOST_ONLY_RE = re.compile(r"(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.:])")
_UNIQ_ID_RE = re.compile(r"\b[0-9A-F]{32}\b")
_TIMESTAMP_RE = re.compile(r"(?<!\d)1[5-9]\d{11}(?!\d)")
_DATE_RE = re.compile(r"\b\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,3})?\b")
_CLIENT_ID_RE = re.compile(r"<(?:ip|host)>@[\w.\-#]+")

MSG_ID_FIELDS = frozenset(
    {"msgId", "offsetMsgId", "uniqKey", "transactionId", "UNIQ_KEY", "ORIGIN_MESSAGE_ID", "__transactionId__"}
)
TIMESTAMP_FIELDS = frozenset({"bornTimestamp", "storeTimestamp", "TRAN_MSG_TIMESTAMP", "bootTimestamp"})


def _texts(value: Json, change: Callable[[str], str]) -> Json:
    """``change`` applied to every string inside a JSON value (keys included)."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, list):
        return [_texts(v, change) for v in value]
    if isinstance(value, dict):
        return {change(str(k)): _texts(v, change) for k, v in value.items()}
    return value


def _fields(value: Json, names: frozenset[str], token: str) -> Json:
    """Every field called one of ``names`` (at any depth) replaced by ``token`` unless null."""
    if isinstance(value, list):
        return [_fields(v, names, token) for v in value]
    if isinstance(value, dict):
        return {
            k: (token if k in names and v is not None else _fields(v, names, token)) for k, v in value.items()
        }
    return value


def _hosts(value: Json, ctx: Mapping[str, str]) -> Json:
    return _texts(value, lambda s: _HOST_ONLY_RE.sub("<ip>", _HOST_RE.sub("<host>", s)))


def _msg_ids(value: Json, ctx: Mapping[str, str]) -> Json:
    return _texts(_fields(value, MSG_ID_FIELDS, "<msgId>"), lambda s: _UNIQ_ID_RE.sub("<msgId>", s))


def _timestamps(value: Json, ctx: Mapping[str, str]) -> Json:
    value = _fields(value, TIMESTAMP_FIELDS, "<ts>")
    return _texts(value, lambda s: _DATE_RE.sub("<date>", _TIMESTAMP_RE.sub("<ts>", s)))


def _client_ids(value: Json, ctx: Mapping[str, str]) -> Json:
    return _texts(value, lambda s: _CLIENT_ID_RE.sub("<clientId>", s))


QUEUE_POSITION_FIELDS = frozenset({"MIN_OFFSET", "MAX_OFFSET"})


def _interleaving(value: Json, ctx: Mapping[str, str]) -> Json:
    """A delivered message's MIN_OFFSET/MAX_OFFSET: where its queue stood at pull time, which depends on
    how the producer spread messages over queues (events themselves are keyed by body, not by order)."""
    return _fields(value, QUEUE_POSITION_FIELDS, "<queue position>")


def _names(value: Json, ctx: Mapping[str, str]) -> Json:
    """The run's unique topic/group names back to the scenario's ``$variables``."""
    pairs = sorted(ctx.items(), key=lambda kv: -len(kv[1]))

    def change(text: str) -> str:
        for var, actual in pairs:
            text = text.replace(actual, f"${var}")
        return text

    return _texts(value, change)


def _broker_names(value: Json, ctx: Mapping[str, str]) -> Json:
    def change(text: str) -> str:
        return re.sub(r"\bbroker-[a-z]\b", "<brokerName>", text)

    return _texts(value, change)


NORMALISERS: dict[str, tuple[str, Callable[[Json, Mapping[str, str]], Json]]] = {
    "names": ("the run's own topic and group names become the scenario's $variables", _names),
    "hosts": ("host:port and bare IPv4 addresses (every target listens elsewhere)", _hosts),
    "clientId": ("client ids (ip@pid#...)", _client_ids),
    "msgId": ("message ids, offset msgIds, transaction ids (minted per run)", _msg_ids),
    "timestamps": ("epoch-millisecond values and printed dates", _timestamps),
    "interleaving": (
        "MIN_OFFSET/MAX_OFFSET of a delivered message (how sends spread over queues)",
        _interleaving,
    ),
    "brokerName": ("broker names", _broker_names),
}
"""Name -> (what it discounts, function). Applied in this order; a scenario may skip some by name."""

DEFAULT_NORMALISERS = ("names", "hosts", "clientId", "msgId", "timestamps", "interleaving")


def normalise(value: Json, ctx: Mapping[str, str], names: tuple[str, ...] = DEFAULT_NORMALISERS) -> Json:
    for name in NORMALISERS:
        if name in names:
            value = NORMALISERS[name][1](value, ctx)
    return value


def flatten(value: Json, prefix: str = "") -> dict[str, str]:
    """``{"a": [{"b": 1}]}`` -> ``{"a[0].b": "1"}``; scalars as their JSON text."""
    out: dict[str, str] = {}
    if isinstance(value, dict):
        if not value and prefix:
            out[prefix] = "{}"
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list):
        if not value and prefix:
            out[prefix] = "[]"
        for index, item in enumerate(value):
            out.update(flatten(item, f"{prefix}[{index}]"))
    else:
        out[prefix or "."] = value if isinstance(value, str) else json.dumps(value)
    return out


@dataclass
class Comparison:
    """One step of one candidate against the two reference runs."""

    reference: tuple[dict[str, str], dict[str, str]]
    candidate: dict[str, str]
    noise: list[str] = field(default_factory=list)
    differing: list[str] = field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differing

    def paths(self) -> list[str]:
        return sorted(set(self.reference[0]) | set(self.reference[1]) | set(self.candidate))


def noise_of(first: Mapping[str, str], second: Mapping[str, str]) -> list[str]:
    """Paths whose value differs between the two reference runs."""
    return sorted(p for p in set(first) | set(second) if first.get(p, ABSENT) != second.get(p, ABSENT))


def compare(first: dict[str, str], second: dict[str, str], candidate: dict[str, str]) -> Comparison:
    noise = noise_of(first, second)
    noisy = set(noise)
    differing = sorted(
        p
        for p in set(first) | set(candidate)
        if p not in noisy and first.get(p, ABSENT) != candidate.get(p, ABSENT)
    )
    return Comparison(reference=(first, second), candidate=candidate, noise=noise, differing=differing)
