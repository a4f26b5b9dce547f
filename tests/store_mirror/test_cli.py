"""``rmqtwin store dump`` / ``stats`` read a store strictly read-only."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import pytest

from rmqtwin.cli import main

from .conftest import StoreFactory, make_msg


def snapshot(root: str) -> dict[str, tuple[str, float]]:
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                out[os.path.relpath(path, root)] = (
                    hashlib.sha256(f.read()).hexdigest(),
                    os.path.getmtime(path),
                )
    return out


@pytest.fixture
def written(stores: StoreFactory) -> str:
    store = stores.open()
    for i in range(30):
        store.put_message(
            make_msg(topic=f"T{i % 2}", queue_id=i % 3, body=b"body %d" % i, keys=f"k{i}", uniq=f"U{i}")
        )
    store.put_message(make_msg(topic="T0", body=b"\xff\xfe binary"))
    store.shutdown()
    stores.opened.remove(store)
    return stores.root


def test_dump_json_lines(written: str, capsys: pytest.CaptureFixture[str]) -> None:
    before = snapshot(written)
    assert main(["store", "dump", written, "--json", "--topic", "T1"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [m["uniqKey"] for m in lines] == [f"U{i}" for i in range(1, 30, 2)]
    first: dict[str, Any] = lines[0]
    assert (first["topic"], first["queueId"], first["queueOffset"], first["body"]) == ("T1", 1, 0, "body 1")
    assert first["properties"]["KEYS"] == "k1" and first["storeHost"] == "10.1.2.3:10911"
    assert snapshot(written) == before


def test_dump_table_and_stats_leave_a_running_store_alone(
    stores: StoreFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    store = stores.open()
    for i in range(5):
        store.put_message(make_msg(body=b"%d" % i))
    binary = store.put_message(make_msg(body=b"\xff\xfe"))
    assert binary.append is not None
    before = snapshot(stores.root)
    assert os.path.exists(os.path.join(stores.root, "abort"))  # a live store: dump must not recover it
    assert main(["store", "dump", stores.root]) == 0
    table = capsys.readouterr().out
    assert "TopicTest" in table and f"{binary.append.wrote_offset:>12}" in table
    assert main(["store", "stats", stores.root]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["commitlog"]["messages"] == 6 and not stats["cleanShutdown"]
    assert stats["consumeQueues"] == [{"topic": "TopicTest", "queueId": 0, "minOffset": 0, "maxOffset": 6}]
    assert snapshot(stores.root) == before


def test_dump_of_missing_directory_fails_cleanly(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["store", "dump", str(tmp_path / "nope")]) == 1
    assert "nope" in capsys.readouterr().err
    assert not (tmp_path / "nope").exists()
