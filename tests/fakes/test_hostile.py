"""Hostile names never reach the file system: the broker refuses them as the real one does, and the
store refuses any path outside its root whatever the broker let through."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.bodies import SubscriptionGroupConfig
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.fakes.broker.topics import IllegalNameError, is_topic_or_group_illegal, validate_group
from rmqtwin.store_mirror.config import TopicConfig
from rmqtwin.store_mirror.consume_queue import PathOutsideStoreError, queue_dir_inside
from tests.fakes.helpers import Peer, clocked_broker, send_v2


@pytest.fixture
def env(tmp_path: Path) -> Any:
    with clocked_broker(tmp_path) as (broker, clock):
        yield broker, clock, tmp_path


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.mark.parametrize("version", [409, 513])
def test_send_back_with_a_traversing_group_is_refused_and_creates_nothing(env: Any, version: int) -> None:
    broker, clock, tmp_path = env
    p = Peer(broker.dispatcher, clock, on_close=broker.channel_closed)
    send_v2(p, "TopicT", b"x")
    outside = tmp_path / "outside"
    before = _tree(tmp_path)
    group = "/../../../../" + str(outside).lstrip("/") + "/x"
    back = {"offset": 0, "group": group, "delayLevel": -1, "originTopic": "TopicT", "maxReconsumeTimes": 16}
    answer = p.call(RequestCode.CONSUMER_SEND_MSG_BACK, back, version=version)
    assert answer.code == ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST
    assert not outside.exists()
    assert _tree(tmp_path) - before <= {"store/config/subscriptionGroup.json.bak"}


@pytest.mark.parametrize("name", ["Topic\n", "a/b", "..", "../../x", "a b", "é", ""])
def test_names_outside_the_character_table_are_illegal(name: str) -> None:
    assert is_topic_or_group_illegal(name)
    assert validate_group(name) is not None


def test_topic_and_group_tables_refuse_illegal_names(env: Any) -> None:
    broker, _clock, _tmp = env
    with pytest.raises(IllegalNameError):
        broker.topics.put(TopicConfig("../evil", 1, 1))
    with pytest.raises(IllegalNameError):
        broker.groups.put(SubscriptionGroupConfig(group_name="../../x"))
    assert broker.groups.find("a/b") is None
    assert "a/b" not in broker.groups.table


@pytest.mark.parametrize("topic", ["..", ".", "", "../x", "a/../../b", "/abs/path", "a/b"])
def test_the_store_refuses_consume_queue_paths_outside_its_root(tmp_path: Path, topic: str) -> None:
    with pytest.raises(PathOutsideStoreError):
        queue_dir_inside(str(tmp_path), topic, 0)
    assert queue_dir_inside(str(tmp_path), "%DLQ%g", 0) == os.path.join(str(tmp_path), "%DLQ%g", "0")


def test_a_newline_terminated_topic_is_refused(env: Any) -> None:
    broker, clock, tmp_path = env
    p = Peer(broker.dispatcher, clock, on_close=broker.channel_closed)
    answer = send_v2(p, "Topic\n", b"x")
    assert answer.code != ResponseCode.SUCCESS
    assert not any(name.endswith("\n") for name in _tree(tmp_path))
