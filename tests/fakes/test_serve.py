"""``rmqtwin serve`` as a process, through the ``rocketmq`` fixture, spoken to over real sockets."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import orjson
import pytest
import pytest_twisted

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.fakes.pytest_plugin import RunningTwin, start_subprocess
from tests.fakes.helpers import call, update_and_create_topic


def test_fixture_gives_a_registered_broker(rocketmq: RunningTwin) -> None:
    info = fastjson.loads(call(rocketmq.namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO).body or b"")
    assert info["clusterAddrTable"] == {"DefaultCluster": ["broker-a"]}
    assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: rocketmq.broker_addr}
    route = call(rocketmq.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "TBW102"})
    assert route.code == ResponseCode.SUCCESS
    # The VIP channel (port - 2) serves the same broker.
    assert call(rocketmq.vip_addr, RequestCode.GET_BROKER_RUNTIME_INFO).code == ResponseCode.SUCCESS


def test_created_topic_is_registered_at_once_and_survives_a_restart(tmp_path: object) -> None:
    store = os.path.join(str(tmp_path), "twin")
    twin = start_subprocess(store)
    try:
        assert update_and_create_topic(twin.broker_addr, "Kept", queues=2).code == ResponseCode.SUCCESS
        route = call(twin.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Kept"})
        assert route.code == ResponseCode.SUCCESS
        assert orjson.loads(route.body or b"")["queueDatas"][0]["writeQueueNums"] == 2
    finally:
        twin.stop()
    assert not os.path.exists(os.path.join(store, "store", "abort")), (
        "clean shutdown removes the abort marker"
    )
    again = start_subprocess(store)
    try:
        route = call(again.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "Kept"})
        assert route.code == ResponseCode.SUCCESS
    finally:
        again.stop()


def test_sigint_also_shuts_down_cleanly(tmp_path: object) -> None:
    store = os.path.join(str(tmp_path), "s")
    argv = [sys.executable, "-m", "rmqtwin", "serve", "--host", "127.0.0.1", "--namesrv-port", "0"]
    argv += ["--broker-port", "0", "--store", store]
    # SIGINT's default action restored in the child: a test run started in the background by a
    # non-interactive shell ignores SIGINT, the twin would inherit that, and Twisted then installs no
    # handler for it (the twin ran on, and this test waited in vain).
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)  # caught here: default in the child
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, ignored)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert line.startswith("rmqtwin ready: namesrv=127.0.0.1:")
    assert os.path.exists(os.path.join(store, "abort"))
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    deadline = time.monotonic() + 5
    while os.path.exists(os.path.join(store, "abort")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not os.path.exists(os.path.join(store, "abort"))


@pytest.fixture
def inprocess_twin(rocketmq_factory: Any) -> RunningTwin:
    return rocketmq_factory(mode="inprocess")


@pytest_twisted.inlineCallbacks
def test_inprocess_twin_on_the_test_reactor(inprocess_twin: RunningTwin) -> Any:
    """In-process mode shares pytest-twisted's reactor, so the test talks to it asynchronously."""
    from twisted.internet import reactor
    from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol

    from rmqtwin.fakes.dispatch import request_command
    from rmqtwin.fakes.server import RemotingProtocol

    assert inprocess_twin.process is None and inprocess_twin.server is not None
    host, _, port = inprocess_twin.namesrv_addr.rpartition(":")
    proto = RemotingProtocol(None, reactor)
    yield connectProtocol(TCP4ClientEndpoint(reactor, host, int(port)), proto)
    try:
        answer = yield proto.invoke(request_command(RequestCode.GET_BROKER_CLUSTER_INFO), 5.0)
    finally:
        proto.close()
    info = fastjson.loads(answer.body or b"")
    assert info["brokerAddrTable"]["broker-a"]["brokerAddrs"] == {0: inprocess_twin.broker_addr}
