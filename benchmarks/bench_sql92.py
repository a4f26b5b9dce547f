"""What a SQL92 subscription costs the twin's pulls, next to a tag subscription, in one run.

Fills a temporary store with N messages (properties ``a`` 0..9, ``b`` x/y, tag TagA/TagB), then pulls
the whole queue 32 at a time through the store with: no filter, a tag filter (``TagA``), and the
SQL92 filter ``a > 5 AND b = 'x'``; and evaluates the compiled selector alone over the messages'
property maps. Prints messages scanned per second for each, and the ratios to the unfiltered pull.

    .venv/bin/python benchmarks/bench_sql92.py [--messages 20000] [--rounds 3]

The machine is shared: compare the rows of one run, not figures across runs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from typing import Any

from rmqtwin.fakes.broker.filter import SqlMessageFilter, TagMessageFilter, build_subscription_data
from rmqtwin.fakes.broker.sql92 import compile_selector, matches
from rmqtwin.store_mirror.message_store import DefaultMessageStore, MessageStoreConfig, PutMessageStatus
from rmqtwin.store_mirror.record import MessageExtBrokerInner, properties_to_string

TOPIC = "BenchSql"
SQL = "a > 5 AND b = 'x'"


def fill(store: DefaultMessageStore, count: int) -> list[dict[str, str]]:
    props_list = []
    for i in range(count):
        props = {"a": str(i % 10), "b": "x" if i % 3 else "y", "TAGS": "TagA" if i % 2 else "TagB"}
        props_list.append(props)
        msg = MessageExtBrokerInner(
            topic=TOPIC,
            body=b"x" * 256,
            queue_id=0,
            properties=props,
            properties_string=properties_to_string(props),
            born_timestamp=1,
            born_host=("127.0.0.1", 1),
            store_host=("127.0.0.1", 10911),
        )
        result = store.put_message(msg)
        assert result.status is PutMessageStatus.PUT_OK, result.status
    return props_list


def scan(store: DefaultMessageStore, message_filter: Any) -> tuple[int, float]:
    """Pull the whole queue 32 at a time; (messages returned, seconds)."""
    offset, found = 0, 0
    max_offset = store.get_max_offset_in_queue(TOPIC, 0)
    started = time.perf_counter()
    while offset < max_offset:
        result = store.get_message("g", TOPIC, 0, offset, 32, message_filter)
        found += len(result.message_buffers)
        if result.next_begin_offset <= offset:
            break
        offset = result.next_begin_offset
    return found, time.perf_counter() - started


def best(rounds: int, fn: Callable[[], tuple[int, float]]) -> tuple[int, float]:
    runs = [fn() for _ in range(rounds)]
    return min(runs, key=lambda r: r[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    count = args.messages

    with tempfile.TemporaryDirectory(prefix="bench-sql92-") as tmp:
        config = MessageStoreConfig(store_path_root_dir=tmp, mapped_file_size_commit_log=64 * 1024 * 1024)
        store = DefaultMessageStore(tmp, config)
        assert store.load()
        store.start()
        try:
            props_list = fill(store, count)
            tag = TagMessageFilter(build_subscription_data(TOPIC, "TagA"))
            sql = SqlMessageFilter(compile_selector(SQL, 5))
            expression = compile_selector(SQL, 5)

            def evaluate_only() -> tuple[int, float]:
                started = time.perf_counter()
                hits = sum(1 for props in props_list if matches(expression, props))
                return hits, time.perf_counter() - started

            rows = [
                ("pull, no filter", best(args.rounds, lambda: scan(store, None))),
                ("pull, tag TagA", best(args.rounds, lambda: scan(store, tag))),
                (f"pull, SQL92 {SQL}", best(args.rounds, lambda: scan(store, sql))),
                ("selector alone", best(args.rounds, evaluate_only)),
            ]
        finally:
            store.shutdown()

    base = count / rows[0][1][1]
    print(f"{count} messages, best of {args.rounds}")
    print(f"{'what':<34} {'returned':>9} {'msg/s scanned':>14} {'vs unfiltered':>14}")
    for name, (found, seconds) in rows:
        rate = count / seconds
        print(f"{name:<34} {found:>9} {rate:>14,.0f} {rate / base:>13.2f}x")


if __name__ == "__main__":
    main()
