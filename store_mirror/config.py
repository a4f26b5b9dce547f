"""The broker's config JSON files under ``<store>/config`` with Java's ``ConfigManager`` discipline.

Files are written as fastjson's pretty format writes them (tab indents, sorted bean properties, integer
map keys bare and inline) and persisted like 4.9.8 ``MixAll.string2File``: new text to ``<name>.tmp``, the
previous text copied to ``<name>.bak``, then the ``.tmp`` renamed over ``<name>``. Loading falls back to
``.bak`` when the main file is missing, empty or unreadable; only an unreadable ``.bak`` fails the load.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import NotRequired, TypedDict

from rmqtwin.codec import fastjson
from rmqtwin.codec.bodies import Body, DataVersion, SubscriptionGroupConfig, TopicConfig, from_value

log = logging.getLogger(__name__)

__all__ = [
    "BeanJson",
    "ConfigManager",
    "ConsumerOffsetJson",
    "ConsumerOffsetManager",
    "DataVersion",
    "DelayOffsetJson",
    "JsonObject",
    "ScheduleOffsets",
    "SubscriptionGroupConfig",
    "SubscriptionGroupJson",
    "SubscriptionGroupManager",
    "TopicConfig",
    "TopicConfigManager",
    "TopicsJson",
    "bean_to_json",
    "file_to_string",
    "group_from_json",
    "json_int",
    "json_list",
    "json_object",
    "string_to_file",
    "to_pretty_json",
]

TOPIC_GROUP_SEPARATOR = "@"

JsonObject = Mapping[str, object]
"""A config file's top-level JSON object as read: its values are checked as each manager decodes them."""
BeanJson = dict[str, object]
"""A Java bean (``TopicConfig``, ``SubscriptionGroupConfig``, ``DataVersion``) as JSON properties."""


class TopicsJson(TypedDict):
    """``topics.json``."""

    dataVersion: BeanJson
    topicConfigTable: dict[str, BeanJson]


class ConsumerOffsetJson(TypedDict):
    """``consumerOffset.json``: ``topic@group`` → queue id → next offset to consume."""

    offsetTable: dict[str, dict[int, int]]


class DelayOffsetJson(TypedDict):
    """``delayOffset.json``: delay level → next schedule-queue offset."""

    offsetTable: dict[int, int]


class SubscriptionGroupJson(TypedDict):
    """``subscriptionGroup.json`` (``forbiddenTable``: 5.x, only when a group has one)."""

    dataVersion: BeanJson
    subscriptionGroupTable: dict[str, BeanJson]
    forbiddenTable: NotRequired[dict[str, dict[str, int]]]


def json_int(value: object) -> int:
    """A JSON number (or numeric string) as ``int()`` reads it; anything else makes the file unreadable."""
    if not isinstance(value, int | float | str):
        raise fastjson.FastjsonError(f"{value!r} is not a number")
    return int(value)


def json_list(value: object) -> list[object] | tuple[()]:
    """A JSON array member as read (null, missing or empty: ``()``); anything else makes the file
    unreadable."""
    if not value:
        return ()
    if not isinstance(value, list):
        raise fastjson.FastjsonError(f"{value!r} is not a JSON array")
    return value


def json_object(value: object, what: str, *, member: bool = True) -> Mapping[object, object]:
    """A JSON object as read. A top-level ``member`` that is null, missing or empty reads as ``{}``; any
    other value that is no object (an entry's null too) makes the file unreadable, which sends ``load``
    to the ``.bak`` as Java's failed parse does."""
    if member and not value:
        return {}
    if not isinstance(value, Mapping):
        raise fastjson.FastjsonError(f"{what} is not a JSON object")
    return value


# ---------------------------------------------------------------------------------------------- writing


def _pretty(value: object, indent: int, out: list[str]) -> None:
    if isinstance(value, Mapping):
        items = [(k, v) for k, v in value.items() if v is not None]
        if not items:
            out.append("{}")
            return
        out.append("{")
        first = True
        for k, v in items:
            if not first:
                out.append(",")
            first = False
            if isinstance(k, str):
                out.append("\n" + "\t" * (indent + 1))
                fastjson.write(k, out)
            else:
                out.append(str(int(k)))
            out.append(":")
            _pretty(v, indent + 1, out)
        out.append("\n" + "\t" * indent + "}")
    else:
        fastjson.write(value, out)


def to_pretty_json(value: object) -> str:
    """fastjson ``toJSONString(obj, PrettyFormat)`` for trees of dicts, lists and scalars.

    String keys go one per line; integer keys (``Map<Integer,Long>``) stay inline after the brace, with the
    closing brace on its own line, exactly as fastjson lays them out.
    """
    out: list[str] = []
    _pretty(value, 0, out)
    return "".join(out)


def file_to_string(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write_synced(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())


def string_to_file(text: str, path: str) -> str | None:
    """``MixAll.string2File``: ``.tmp`` first, the previous content kept as ``.bak``, then the rename.

    The rename replaces the old file atomically (Java deletes then renames), so a crash never leaves
    neither file behind. Returns the previous content (None without a previous file).
    """
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    _write_synced(tmp, text)
    prev = file_to_string(path)
    if prev is not None:
        _write_synced(path + ".bak", prev)
    os.replace(tmp, path)
    return prev


# ---------------------------------------------------------------------------------------------- base


class ConfigManager:
    """Java's ``ConfigManager``: ``load`` (with the ``.bak`` fallback) and ``persist``."""

    def __init__(self, config_file_path: str) -> None:
        self.config_file_path = config_file_path
        self._settled: str | None = None
        """Text that both the file and its ``.bak`` hold after our last persist."""

    def encode(self) -> JsonObject:
        raise NotImplementedError

    def decode(self, obj: JsonObject) -> None:
        raise NotImplementedError

    def decode_text(self, text: str) -> None:
        """The table from JSON text, as the file holds it and as a master sends it to its slaves."""
        obj = fastjson.loads(text)
        if not isinstance(obj, dict):
            raise fastjson.FastjsonError(f"{self.config_file_path}: not a JSON object")
        self.decode(obj)

    def load(self) -> bool:
        text = file_to_string(self.config_file_path)
        if text:
            try:
                self.decode_text(text)
                return True
            except Exception as exc:  # any parse failure means: try the backup, as Java does
                log.warning("load %s failed (%s), trying .bak", self.config_file_path, exc)
        return self._load_bak()

    def _load_bak(self) -> bool:
        text = file_to_string(self.config_file_path + ".bak")
        if not text:
            return True
        try:
            self.decode_text(text)
        except Exception as exc:
            log.error("load %s.bak failed: %s", self.config_file_path, exc)
            return False
        return True

    def encode_text(self) -> str:
        return to_pretty_json(self.encode())

    def persist(self) -> None:
        """Write the table, unless the file and its ``.bak`` already hold exactly this text (Java would
        rewrite the same bytes): the periodic persists then cost no fsyncs on the reactor thread."""
        text = self.encode_text()
        if text == self._settled:
            return
        prev = string_to_file(text, self.config_file_path)
        self._settled = text if prev == text else None


def _now_ms() -> int:
    return int(time.time() * 1000)


class VersionedConfigManager(ConfigManager):
    """A table with a ``dataVersion`` (topics, subscription groups), which every change moves on."""

    def __init__(self, config_file_path: str) -> None:
        super().__init__(config_file_path)
        self.data_version = DataVersion(timestamp=_now_ms())

    def _changed(self, persist: bool) -> None:
        """The next data version; then the file too, unless the caller persists later itself."""
        self.data_version.next_version(_now_ms())
        if persist:
            self.persist()


# ---------------------------------------------------------------------------------------------- topics


class TopicConfigManager(VersionedConfigManager):
    """``config/topics.json``: ``{"dataVersion":…,"topicConfigTable":{name: TopicConfig}}``."""

    def __init__(self, store_dir: str) -> None:
        super().__init__(os.path.join(store_dir, "config", "topics.json"))
        self.topic_config_table: dict[str, TopicConfig] = {}

    def encode(self) -> TopicsJson:
        return {
            "dataVersion": bean_to_json(self.data_version),
            "topicConfigTable": {name: bean_to_json(tc) for name, tc in self.topic_config_table.items()},
        }

    def decode(self, obj: JsonObject) -> None:
        table = json_object(obj.get("topicConfigTable"), "topicConfigTable")
        for name, tc in table.items():
            config = from_value(TopicConfig, tc)
            if config.topic_name is None:  # a missing ``topicName`` is the table key
                config.topic_name = str(name)
            self.topic_config_table[str(name)] = config
        self.data_version = _data_version(obj.get("dataVersion"))

    def select_topic_config(self, topic: str) -> TopicConfig | None:
        return self.topic_config_table.get(topic)

    def update_topic_config(self, tc: TopicConfig, persist: bool = True) -> None:
        self.topic_config_table[tc.topic_name] = tc
        self._changed(persist)

    def delete_topic_config(self, topic: str, persist: bool = True) -> bool:
        if self.topic_config_table.pop(topic, None) is None:
            return False
        self._changed(persist)
        return True


# ---------------------------------------------------------------------------------------------- offsets


class ConsumerOffsetManager(ConfigManager):
    """``config/consumerOffset.json``: ``{"offsetTable":{"topic@group":{queueId:offset}}}``.

    The offset stored is the next queue offset to consume.
    """

    def __init__(self, store_dir: str) -> None:
        super().__init__(os.path.join(store_dir, "config", "consumerOffset.json"))
        self.offset_table: dict[str, dict[int, int]] = {}

    def encode(self) -> ConsumerOffsetJson:
        return {"offsetTable": self.offset_table}

    def decode(self, obj: JsonObject) -> None:
        table = json_object(obj.get("offsetTable"), "offsetTable")
        self.offset_table = {
            str(k): fastjson.to_ints(json_object(v, str(k), member=False), int) for k, v in table.items()
        }

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = f"{topic}{TOPIC_GROUP_SEPARATOR}{group}"
        self.offset_table.setdefault(key, {})[queue_id] = offset

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """-1 when nothing was committed for this queue (Java's answer)."""
        return self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}).get(queue_id, -1)

    def query_offsets(self, group: str, topic: str) -> dict[int, int]:
        return dict(self.offset_table.get(f"{topic}{TOPIC_GROUP_SEPARATOR}{group}", {}))

    def _topic_groups(self) -> Iterator[tuple[str, str]]:
        """(topic, group) of each ``topic@group`` key of the offset table."""
        for key in self.offset_table:
            topic, _, group = key.rpartition(TOPIC_GROUP_SEPARATOR)
            yield topic, group

    def which_topic_by_consumer(self, group: str) -> set[str]:
        return {t for t, g in self._topic_groups() if g == group}

    def which_group_by_topic(self, topic: str) -> set[str]:
        return {g for t, g in self._topic_groups() if t == topic}

    def clean_offset_by_topic(self, topic: str) -> None:
        for key in [k for k in self.offset_table if k.rpartition(TOPIC_GROUP_SEPARATOR)[0] == topic]:
            del self.offset_table[key]


class ScheduleOffsets(ConfigManager):
    """``config/delayOffset.json``: ``{"offsetTable":{delayLevel:nextConsumeQueueOffset}}``."""

    def __init__(self, store_dir: str) -> None:
        super().__init__(os.path.join(store_dir, "config", "delayOffset.json"))
        self.offset_table: dict[int, int] = {}

    def encode(self) -> DelayOffsetJson:
        return {"offsetTable": self.offset_table}

    def decode(self, obj: JsonObject) -> None:
        self.offset_table = fastjson.to_ints(json_object(obj.get("offsetTable"), "offsetTable"), int)

    def update_offset(self, delay_level: int, offset: int) -> None:
        self.offset_table[delay_level] = offset

    def correct(self, min_max: Callable[[int], tuple[int, int]]) -> None:
        """Clamp every level's offset into its schedule queue's [min, max] (``correctDelayOffset``)."""
        for level, offset in list(self.offset_table.items()):
            low, high = min_max(level)
            if offset < low or offset > high:
                self.offset_table[level] = min(max(offset, low), high)


# ---------------------------------------------------------------------------------------------- groups


def bean_to_json(bean: Body) -> BeanJson:
    """A body's bean properties as a dict (sorted, nulls left out), for the pretty writer."""
    out: BeanJson = {}
    for attr, java in fastjson.bean_fields(type(bean)):
        value = getattr(bean, attr)
        if value is not None:
            out[java] = bean_to_json(value) if isinstance(value, Body) else value
    return out


def _data_version(obj: object) -> DataVersion:
    """A file's ``dataVersion`` (a fresh one when the file has none)."""
    return from_value(DataVersion, obj) if obj else DataVersion(timestamp=_now_ms())


def group_from_json(name: str, obj: object) -> SubscriptionGroupConfig:
    """Read a bean (a missing ``groupName`` is the table key; unknown properties are ignored)."""
    cfg = from_value(SubscriptionGroupConfig, obj)
    if cfg.group_name is None:
        cfg.group_name = name
    return cfg


BUILT_IN_GROUPS = (
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
)


class SubscriptionGroupManager(VersionedConfigManager):
    """``config/subscriptionGroup.json``: ``{"dataVersion":…,"subscriptionGroupTable":{group: config}}``."""

    def __init__(self, store_dir: str, built_ins: bool = True) -> None:
        super().__init__(os.path.join(store_dir, "config", "subscriptionGroup.json"))
        self.subscription_group_table: dict[str, SubscriptionGroupConfig] = {}
        self.forbidden_table: dict[str, dict[str, int]] = {}
        """5.x: group → topic → forbidden permission bits (``PermName.INDEX_PERM_*``)."""
        if built_ins:
            for name in BUILT_IN_GROUPS:
                self.subscription_group_table[name] = SubscriptionGroupConfig(group_name=name)

    def encode(self) -> SubscriptionGroupJson:
        out: SubscriptionGroupJson = {
            "dataVersion": bean_to_json(self.data_version),
            "subscriptionGroupTable": {n: bean_to_json(g) for n, g in self.subscription_group_table.items()},
        }
        if self.forbidden_table:
            out["forbiddenTable"] = self.forbidden_table
        return out

    def decode(self, obj: JsonObject) -> None:
        for name, g in json_object(obj.get("subscriptionGroupTable"), "subscriptionGroupTable").items():
            self.subscription_group_table[str(name)] = group_from_json(str(name), g)
        for group, topics in json_object(obj.get("forbiddenTable"), "forbiddenTable").items():
            self.forbidden_table[str(group)] = {
                str(t): json_int(v) for t, v in json_object(topics, str(group), member=False).items()
            }
        self.data_version = _data_version(obj.get("dataVersion"))

    def get_forbidden(self, group: str, topic: str, index: int) -> bool:
        bit = 1 << index
        return (max(0, self.forbidden_table.get(group, {}).get(topic, 0)) & bit) == bit

    def update_forbidden(self, group: str, topic: str, index: int, forbid: bool) -> None:
        """``updateForbidden``: set or clear one bit. As Java's ``updateForbiddenValue``, a value that
        drops to 0 removes the group's whole entry (its other topics too)."""
        value = max(0, self.forbidden_table.get(group, {}).get(topic, 0))
        value = value | (1 << index) if forbid else value & ~(1 << index)
        if value <= 0:
            self.forbidden_table.pop(group, None)
            return
        self.forbidden_table.setdefault(group, {})[topic] = value
        self._changed(persist=False)

    def update_subscription_group_config(self, cfg: SubscriptionGroupConfig, persist: bool = True) -> None:
        self.subscription_group_table[cfg.group_name] = cfg
        self._changed(persist)

    def find_subscription_group_config(self, group: str) -> SubscriptionGroupConfig | None:
        return self.subscription_group_table.get(group)

    def delete_subscription_group_config(self, group: str, persist: bool = True) -> bool:
        self.forbidden_table.pop(group, None)
        if self.subscription_group_table.pop(group, None) is None:
            return False
        self._changed(persist)
        return True
