"""A Java-client target for the pytest scenarios: the twin of a line or that line's shared real cluster."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.conformance.java_client import JavaClient, MQAdminResult
from rmqtwin.conformance.runner import TWIN_BROKER_CONF
from rmqtwin.fakes.pytest_plugin import TwinFaultControl
from tests.fakes.helpers import call, update_and_create_topic


@dataclass
class Target:
    name: str
    namesrv_addr: str
    broker_addr: str
    client: JavaClient
    faults: TwinFaultControl | None = None
    """The twin's own fault rules (None for a real cluster)."""

    def mqadmin(self, *args: str) -> MQAdminResult:
        """mqadmin against this target; a command that timed out (a loaded machine) is run once more."""
        result = self.client.mqadmin(self.namesrv_addr, *args)
        if not result.ok and "RemotingTimeoutException" in result.stdout + result.stderr:
            result = self.client.mqadmin(self.namesrv_addr, *args)
        return result

    def create_topic(self, topic: str, queues: int = 4, attributes: str | None = None) -> None:
        """UPDATE_AND_CREATE_TOPIC straight to the broker, as mqadmin updateTopic does (no JVM); returns
        once the name server routes the topic."""
        answer = update_and_create_topic(self.broker_addr, topic, queues, attributes)
        assert answer.code == ResponseCode.SUCCESS, answer.remark
        deadline = time.monotonic() + 10
        while call(self.namesrv_addr, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}).code != 0:
            assert time.monotonic() < deadline, f"{topic} never reached the name server"
            time.sleep(0.1)


def target_fixture(targets: list[Any], overrides: dict[str, str] | None = None) -> Any:
    """A session-wide ``target`` fixture over ``targets`` (each a :func:`make_target` name), every broker
    with ``overrides`` on top of the suite's broker.conf."""

    @pytest.fixture(scope="session", params=targets)
    def target(
        request: pytest.FixtureRequest,
        java_client_factory: Callable[[str], JavaClient],
        rocketmq_factory: Any,
    ) -> Target:
        return make_target(request, java_client_factory, rocketmq_factory, overrides)

    return target


def make_target(
    request: pytest.FixtureRequest,
    java_client_factory: Callable[[str], JavaClient],
    rocketmq_factory: Any,
    overrides: dict[str, str] | None = None,
) -> Target:
    """The target named by ``request.param``: one twin per broker.conf for the session (with the 4.9.8
    or 5.5.0 client), or the shared real cluster of that line, both with ``overrides`` on top."""
    name = str(request.param)
    overrides = overrides or {}
    if name.startswith("rmqtwin"):
        line = name.removeprefix("rmqtwin-client")
        twins = request.session.__dict__.setdefault("_rmqtwin_target_twins", {})
        # The twin answers as the client's line, the real broker these scenarios compare it with.
        version = "4.9" if line == "4.9" else "5.5"
        key = (version, *sorted(overrides.items()))
        if key not in twins:
            twins[key] = rocketmq_factory(
                broker_conf={**TWIN_BROKER_CONF, **overrides},
                broker_name="broker-a",
                rocketmq_version=version,
            )
        twin = twins[key]
        return Target(name, twin.namesrv_addr, twin.broker_addr, java_client_factory(line), twin.faults)
    line = name.removeprefix("real-")
    real = request.getfixturevalue("real_rocketmq_factory")(line, broker_conf_overrides=overrides)
    return Target(name, real.namesrv_addr, real.broker_addr, java_client_factory(line))
