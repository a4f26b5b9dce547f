"""Small-file store fixtures: segment sizes of a few KiB so rolling and recovery happen in a few messages."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from rmqtwin.store_mirror.flush import TwistedFlushDriver
from rmqtwin.store_mirror.message_store import DefaultMessageStore, MessageStoreConfig
from rmqtwin.store_mirror.record import MessageExtBrokerInner

STORE_HOST = ("10.1.2.3", 10911)
BORN_HOST = ("10.9.8.7", 53000)


def small_config(**overrides: Any) -> MessageStoreConfig:
    values: dict[str, Any] = {
        "mapped_file_size_commit_log": 16 * 1024,
        "mapped_file_size_consume_queue": 20 * 50,
        "max_hash_slot_num": 64,
        "max_index_num": 256,
    }
    values.update(overrides)
    return MessageStoreConfig(**values)


def run_inline(fn: Callable[[], Any]) -> defer.Deferred[Any]:
    return defer.succeed(fn())


class StoreFactory:
    """Opens stores on one directory with a fake clock; closes whatever it opened."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.clock = Clock()
        self.now = 1_700_000_000_000
        self.opened: list[DefaultMessageStore] = []

    def now_ms(self) -> int:
        return self.now

    def open(
        self, config: MessageStoreConfig | None = None, *, start: bool = True, **kw: Any
    ) -> DefaultMessageStore:
        store = DefaultMessageStore(
            self.root,
            config or small_config(),
            flush=TwistedFlushDriver(self.clock, kw.pop("run_blocking", run_inline)),
            now_ms=self.now_ms,
            **kw,
        )
        assert store.load()
        if start:
            store.start()
        self.opened.append(store)
        return store

    def close_all(self) -> None:
        for s in self.opened:
            s.shutdown()
        self.opened = []


@pytest.fixture
def stores(tmp_path: Any) -> Iterator[StoreFactory]:
    factory = StoreFactory(str(tmp_path / "store"))
    yield factory
    factory.close_all()


def make_msg(
    topic: str = "TopicTest",
    queue_id: int = 0,
    body: bytes = b"hello",
    *,
    tags: str | None = "TagA",
    keys: str | None = None,
    uniq: str | None = None,
    extra: dict[str, str] | None = None,
    sys_flag: int = 0,
) -> MessageExtBrokerInner:
    props: dict[str, str] = {}
    if tags is not None:
        props["TAGS"] = tags
    if keys is not None:
        props["KEYS"] = keys
    if uniq is not None:
        props["UNIQ_KEY"] = uniq
    if extra:
        props.update(extra)
    return MessageExtBrokerInner(
        topic=topic,
        body=body,
        queue_id=queue_id,
        properties=props,
        sys_flag=sys_flag,
        born_timestamp=1_699_999_999_000,
        born_host=BORN_HOST,
        store_host=STORE_HOST,
    )
