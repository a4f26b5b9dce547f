"""Topic attributes (5.x ``TopicAttributes``, ``AttributeParser``, ``AttributeUtil``).

UPDATE_AND_CREATE_TOPIC carries them as ``+key=value,-key``; the broker checks every key against the
known attributes and keeps the result in the topic's config (``topics.json``, GET_TOPIC_CONFIG), where
rocketmq-proxy reads ``message.type``. Failures raise :class:`TopicAttributeError` with the message
5.5.0's ``RuntimeException`` carries (the broker answers it as SYSTEM_ERROR with that remark).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

MESSAGE_TYPE = "message.type"
QUEUE_TYPE = "queue.type"
CLEANUP_POLICY = "cleanup.policy"
RESERVE_TIME = "reserve.time"

MESSAGE_TYPES = ("UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED", "PRIORITY", "LITE")


class TopicAttributeError(Exception):
    """What 5.5.0's ``RuntimeException`` says about a bad attribute change."""


@dataclass(frozen=True, slots=True)
class EnumAttribute:
    name: str
    changeable: bool
    universe: tuple[str, ...]

    def verify(self, value: str) -> None:
        if value not in self.universe:
            # Java prints a HashSet: its iteration order is the strings' hash order.
            raise TopicAttributeError(f"value is not in set: [{', '.join(_hash_set_order(self.universe))}]")


@dataclass(frozen=True, slots=True)
class LongRangeAttribute:
    name: str
    changeable: bool
    low: int
    high: int

    def verify(self, value: str) -> None:
        try:
            number = int(value, 10)
        except ValueError:
            raise TopicAttributeError(f'For input string: "{value}"') from None
        if number < self.low or number > self.high:
            raise TopicAttributeError(f"value is not in range({self.low}, {self.high})")


TOPIC_ATTRIBUTES: dict[str, EnumAttribute | LongRangeAttribute] = {
    QUEUE_TYPE: EnumAttribute(QUEUE_TYPE, False, ("BatchCQ", "SimpleCQ")),
    CLEANUP_POLICY: EnumAttribute(CLEANUP_POLICY, False, ("DELETE", "COMPACTION")),
    MESSAGE_TYPE: EnumAttribute(MESSAGE_TYPE, True, MESSAGE_TYPES),
    RESERVE_TIME: LongRangeAttribute(RESERVE_TIME, True, -1, 2**63 - 1),
}


def _java_hash(text: str) -> int:
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h


def _hash_set_order(values: tuple[str, ...]) -> list[str]:
    """The order Guava's ``Sets.newHashSet(values...)`` iterates strings in (its bucket order)."""
    n = len(values)
    capacity = n + 1 if n < 3 else int(n / 0.75 + 1)
    buckets = 1
    while buckets < capacity:
        buckets <<= 1

    def bucket(value: str) -> int:
        h = _java_hash(value)
        return (h ^ (h >> 16)) & (buckets - 1)

    return sorted(values, key=lambda v: (bucket(v), values.index(v)))


def parse_to_map(modification: str | None) -> dict[str, str]:
    """``AttributeParser.parseToMap``: ``+k=v,-k`` to ``{"+k": "v", "-k": ""}``."""
    if not modification:
        return {}
    attributes: dict[str, str] = {}
    for kv in modification.split(","):
        if "=" in kv:
            splits = kv.split("=")
            while splits and splits[-1] == "":  # String.split drops trailing empty strings
                splits.pop()
            if len(splits) < 2:
                raise TopicAttributeError(f"Index 1 out of bounds for length {len(splits)}")
            key, value = splits[0], splits[1]
            if "+" not in key:
                raise TopicAttributeError(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = kv, ""
            if "-" not in key:
                raise TopicAttributeError(f"delete attribute format is wrong: {key}")
        if key in attributes:
            raise TopicAttributeError(f"key duplication: {key}")
        attributes[key] = value
    return attributes


def alter_current_attributes(
    create: bool, current: Mapping[str, str], new: Mapping[str, str]
) -> dict[str, str]:
    """``AttributeUtil.alterCurrentAttributes`` over the topic attributes: the attributes to keep."""
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    update: dict[str, str] = {}
    delete: dict[str, str] = {}
    seen: set[str] = set()
    for key, value in new.items():
        real_key = key[1:]
        if not real_key or "+" in real_key or "-" in real_key:
            raise TopicAttributeError("kv string format wrong.")
        if real_key in seen:
            raise TopicAttributeError(f"alter duplication key. key: {real_key}")
        seen.add(real_key)
        if create:
            if not key.startswith("+"):
                raise TopicAttributeError(
                    f"only add attribute is supported while creating topic. key: {real_key}"
                )
            init[real_key] = value
        elif key.startswith("+"):
            (update if real_key in current else add)[real_key] = value
        elif key.startswith("-"):
            if real_key not in current:
                raise TopicAttributeError(f"attempt to delete a nonexistent key: {real_key}")
            delete[real_key] = value
        else:
            raise TopicAttributeError(f"wrong format key: {real_key}")
    for alter, is_init, is_delete in ((init, True, False), (add, False, False), (update, False, False)):
        _validate_alter(alter, is_init, is_delete)
    _validate_alter(delete, False, True)
    final = dict(current)
    final.update(init)
    final.update(add)
    final.update(update)
    for key in delete:
        final.pop(key, None)
    return final


def _validate_alter(alter: Mapping[str, str], init: bool, delete: bool) -> None:
    for key, value in alter.items():
        attribute = TOPIC_ATTRIBUTES.get(key)
        if attribute is None:
            raise TopicAttributeError(f"unsupported key: {key}")
        if not init and not attribute.changeable:
            raise TopicAttributeError(f"attempt to update an unchangeable attribute. key: {key}")
        if not delete:
            attribute.verify(value)


def topic_message_type(attributes: Mapping[str, str] | None) -> str:
    """``TopicConfig.getTopicMessageType``: NORMAL unless the topic says otherwise."""
    return (attributes or {}).get(MESSAGE_TYPE, "NORMAL")
