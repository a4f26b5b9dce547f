"""Through the proxy, the brokers' own names for themselves lead back to the proxy (real Java client).

A send result's offset msgId, the store host of a consumed message and the VIP channel (broker port - 2)
would otherwise send a client or mqadmin straight to the real broker, around the proxy.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.message import decode_offset_msg_id
from rmqtwin.proxy.capture import REC_FRAME, REC_OPEN, Record
from rmqtwin.proxy.process import ProxyProcess, start_proxy
from rmqtwin.proxy.stats import request_topic

launcher = pytest.importorskip("rmqtwin.conformance.launcher")
pytest.importorskip("rmqtwin.conformance.pytest_plugin")

pytestmark = [
    pytest.mark.java,
    pytest.mark.real,
    pytest.mark.skipif(launcher.java_available() is not None, reason=str(launcher.java_available())),
]

SEND_CODES = {10, 310, 320}
VIEW_MESSAGE_BY_ID = 33


@pytest.fixture
def proxy(real_rocketmq: Any, tmp_path: Path) -> Iterator[ProxyProcess]:
    started = start_proxy(real_rocketmq.namesrv_addr, tmp_path / "ids.rmqcap")
    yield started
    assert started.stop() == 0, started.log()
    assert "Unhandled Error" not in started.log(), started.log()


def records_when(proxy: ProxyProcess, done: Any, timeout: float = 5.0) -> list[Record]:
    """The capture once ``done(records)`` holds (the writer thread flushes every few ms)."""
    deadline = time.monotonic() + timeout
    while True:
        records = proxy.records()
        if done(records) or time.monotonic() > deadline:
            return records
        time.sleep(0.1)


def test_offset_msg_ids_store_hosts_and_vip_channel_lead_to_the_proxy(
    real_rocketmq: Any, java_client: Any, proxy: ProxyProcess, unique_name: Any
) -> None:
    topic, group = unique_name("TopicIds"), unique_name("gids")
    broker_host, broker_port = real_rocketmq.broker_addr.rsplit(":", 1)
    messages = [{"body": f"id-{i}", "keys": f"K-{i}"} for i in range(3)]
    sent = java_client.producer(proxy.namesrv, topic, messages=messages, vipChannel=True).check()
    assert len(sent.sent) == 3

    records = records_when(
        proxy, lambda rs: sum(r.code in SEND_CODES and request_topic(r) == topic for r in rs) >= 3
    )
    opens = {r.conn_id: r.meta() for r in records if r.type == REC_OPEN}
    sends = [r for r in records if r.type == REC_FRAME and r.code in SEND_CODES and request_topic(r) == topic]
    assert len(sends) == 3
    # the producer asked for the VIP channel: it dialled the proxy's listener two below the broker's,
    # which went on to the broker's own VIP port
    (vip_conn,) = {opens[r.conn_id]["upstream"] for r in sends}
    assert vip_conn == f"{broker_host}:{int(broker_port) - 2}"
    listener_vip = {opens[r.conn_id]["listener"] for r in sends}.pop()
    listener = f"127.0.0.1:{int(listener_vip.rsplit(':', 1)[1]) + 2}"

    # the offset msgId of every send result names that listener, with the broker's commitlog offset
    for event in sent.sent:
        host, port, _offset = decode_offset_msg_id(event["offsetMsgId"])
        assert f"{host}:{port}" == listener

    # a consumer sees the same offset msgIds, and the listener as the messages' store host
    got = java_client.push_consumer(proxy.namesrv, topic, group=group, expect=3, timeoutMs=60_000).check()
    assert {e["offsetMsgId"] for e in got.received} == {e["offsetMsgId"] for e in sent.sent}
    assert {e["storeHost"].lstrip("/") for e in got.received} == {listener}

    # and mqadmin, handed such an id, reaches the broker through the proxy
    probe = sent.sent[0]
    topic_option = ["-t", topic] if real_rocketmq.version.line == "5" else []  # 5.5.0's tool requires -t
    by_id = java_client.mqadmin(proxy.namesrv, "queryMsgById", "-i", probe["offsetMsgId"], *topic_option)
    by_id.check()
    assert re.search(r"Topic:\s+" + re.escape(topic), by_id.stdout), by_id.stdout
    assert re.search(r"Keys:\s+\[K-0\]", by_id.stdout), by_id.stdout
    records = records_when(proxy, lambda rs: any(r.code == VIEW_MESSAGE_BY_ID for r in rs))
    opens = {r.conn_id: r.meta() for r in records if r.type == REC_OPEN}
    views = [
        r for r in records if r.type == REC_FRAME and r.code == VIEW_MESSAGE_BY_ID and not r.rpc_flag & 1
    ]
    assert views and {opens[r.conn_id]["listener"] for r in views} == {listener}
