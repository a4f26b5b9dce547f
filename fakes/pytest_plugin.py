"""pytest fixtures for rmqtwin's RocketMQ twin (registered as the ``rmqtwin`` pytest11 plugin).

- ``rocketmq``: a fresh name server + broker on free ports with a temporary store, for one test;
  ``rocketmq.namesrv_addr`` is what a client's ``setNamesrvAddr`` takes.
- ``rocketmq_factory(**options)``: start more of them (``broker_conf={...}`` for broker.conf
  properties such as ``messageDelayLevel``, ``broker_name=...``, ``mode=...``).

``--rocketmq-mode`` (ini ``rocketmq_mode``) picks how: ``subprocess`` (default: ``rmqtwin serve``
in a child process, works with any client and any reactor) or ``inprocess`` (inside the test
process on pytest-twisted's reactor; falls back to a subprocess without it). This module imports
nothing heavy: every pytest run in an environment with rmqtwin installed loads it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from rmqtwin.children import dies_with_parent

READY_PATTERN = re.compile(r"rmqtwin ready: (.*)")
START_TIMEOUT = 60.0


class TwinFaultControl:
    """``rocketmq.faults``: the twin's fault rules (:mod:`rmqtwin.proxy.faults` for their fields).

    ``add(effect="answer", codes=["SEND_MESSAGE_V2"], answer_code="SYSTEM_BUSY")`` returns the rule as
    added (with its name); a bad rule raises ``ValueError`` with the reason. A subprocess twin is
    driven over its fault API, an in-process one directly.
    """

    def __init__(self, url: str | None = None, engine: Any = None) -> None:
        self.url = url
        self.engine = engine

    def add(self, rule: dict[str, Any] | None = None, **fields: Any) -> dict[str, Any]:
        spec = {**(rule or {}), **fields}
        if self.engine is not None:
            return dict(self.engine.add(spec).to_json())
        return dict(self._call("POST", "/rules", spec))

    def list(self) -> list[dict[str, Any]]:
        if self.engine is not None:
            return [r.to_json() for r in self.engine.rules.values()]
        return list(self._call("GET", "/rules"))

    def get(self, name: str) -> dict[str, Any]:
        return next(r for r in self.list() if r["name"] == name)

    def remove(self, name: str) -> None:
        if self.engine is not None:
            self.engine.remove(name)
        else:
            self._call("DELETE", f"/rules/{name}")

    def enable(self, name: str, enabled: bool = True) -> None:
        if self.engine is not None:
            self.engine.set_enabled(name, enabled)
        else:
            self._call("POST", f"/rules/{name}", {"enabled": enabled})

    def disable(self, name: str) -> None:
        self.enable(name, False)

    def reset(self) -> None:
        if self.engine is not None:
            self.engine.reset()
        else:
            self._call("POST", "/reset")

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        import json
        import urllib.error
        import urllib.request

        if self.url is None:
            raise RuntimeError("this twin was started without a fault API")
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                return json.loads(answer.read())
        except urllib.error.HTTPError as exc:
            raise ValueError(json.loads(exc.read()).get("error", str(exc))) from None


@dataclass
class RunningTwin:
    """A running fake: addresses, its store, and how to stop it."""

    namesrv_addr: str
    broker_addr: str
    store_dir: str
    broker_name: str
    cluster_name: str
    process: subprocess.Popen[str] | None = None
    server: Any = None
    output: list[str] = field(default_factory=list)
    faults: TwinFaultControl = field(default_factory=TwinFaultControl)
    brokers: dict[str, str] = field(default_factory=dict)
    """Every broker of a ``serve --cluster`` twin, ``name@brokerId`` -> address (ready-line order)."""
    _cleanup_dir: str | None = None

    @property
    def vip_addr(self) -> str:
        host, _, port = self.broker_addr.rpartition(":")
        return f"{host}:{int(port) - 2}"

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.server is not None:
            import pytest_twisted

            pytest_twisted.blockon(self.server.stop())
            self.server = None
        if self._cleanup_dir is not None:
            shutil.rmtree(self._cleanup_dir, ignore_errors=True)
            self._cleanup_dir = None


def _write_conf(path: str, props: dict[str, Any]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for key, value in props.items():
            text = str(value).lower() if isinstance(value, bool) else str(value)
            fh.write(f"{key}={text}\n")


def _parse_ready(line: str) -> dict[str, str]:
    match = READY_PATTERN.search(line)
    if match is None:
        return {}
    return dict(part.split("=", 1) for part in match.group(1).split() if "=" in part)


def start_subprocess(
    store_dir: str,
    *,
    broker_conf: dict[str, Any] | None = None,
    broker_name: str = "broker-a",
    serve_args: Sequence[str] = (),
    start_timeout: float = START_TIMEOUT,
) -> RunningTwin:
    """``rmqtwin serve [SERVE_ARGS]`` on free loopback ports; returns once it printed its ready line
    (killed after ``start_timeout`` seconds without it)."""
    conf_path = os.path.join(store_dir, "broker.conf")
    os.makedirs(store_dir, exist_ok=True)
    _write_conf(conf_path, {"brokerName": broker_name, **(broker_conf or {})})
    argv = [
        sys.executable,
        "-m",
        "rmqtwin",
        "serve",
        "--host",
        "127.0.0.1",
        "--namesrv-port",
        "0",
        "--broker-port",
        "0",
        "--store",
        os.path.join(store_dir, "store"),
        "--config",
        conf_path,
        "--faults-port",
        "0",
        *serve_args,
    ]
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode caching halves the start-up time
    process = subprocess.Popen(
        dies_with_parent(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    assert process.stdout is not None
    output: list[str] = []
    found: dict[str, str] = {}
    timer = threading.Timer(start_timeout, process.kill)
    timer.start()
    try:
        for line in process.stdout:
            output.append(line)
            found = _parse_ready(line)
            if found:
                break
    finally:
        timer.cancel()
    if not found:
        process.kill()
        process.wait()
        raise RuntimeError("rmqtwin serve did not start:\n" + "".join(output[-40:]))
    twin = RunningTwin(
        namesrv_addr=found.get("namesrv", ""),
        broker_addr=found.get("broker", ""),
        store_dir=found.get("store", ""),
        broker_name=found.get("name", broker_name),
        cluster_name=found.get("cluster", "DefaultCluster"),
        process=process,
        output=output,
        faults=TwinFaultControl(url=found.get("faults")),
        brokers=dict(m.split("=", 1) for m in found["brokers"].split(",")) if found.get("brokers") else {},
    )
    threading.Thread(target=_drain, args=(process, output), daemon=True).start()
    return twin


def _drain(process: subprocess.Popen[str], output: list[str]) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        if len(output) < 10_000:
            output.append(line)


def start_inprocess(
    store_dir: str,
    *,
    broker_conf: dict[str, Any] | None = None,
    broker_name: str = "broker-a",
    rocketmq_version: str = "5.5",
) -> RunningTwin:
    """The fake on pytest-twisted's reactor, in this process, answering as ``rocketmq_version``'s line."""
    import pytest_twisted
    from twisted.internet import reactor

    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.fakes.service import ServeOptions, TwinServer
    from rmqtwin.proxy.faults import FaultEngine

    config = BrokerConfig.from_properties({"brokerName": broker_name})
    config.update(
        {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (broker_conf or {}).items()}
    )
    config.rocketmq_version = rocketmq_version
    options = ServeOptions(
        host="127.0.0.1",
        namesrv_port=0,
        broker_port=0,
        store=os.path.join(store_dir, "store"),
        config=config,
        faults=FaultEngine(clock=reactor.seconds),
    )
    server = TwinServer(options, reactor)
    pytest_twisted.blockon(server.start())
    assert server.namesrv_address is not None and server.broker_address is not None
    return RunningTwin(
        namesrv_addr=server.namesrv_address,
        broker_addr=server.broker_address,
        store_dir=os.path.abspath(options.store),
        broker_name=config.broker_name,
        cluster_name=config.broker_cluster_name,
        server=server,
        faults=TwinFaultControl(engine=options.faults),
    )


class RocketMQFactory:
    """Starts fakes for tests and stops them all at the end."""

    def __init__(self, mode: str, base_dir: str, rocketmq_version: str = "5.5") -> None:
        self.mode = mode
        self.base_dir = base_dir
        self.rocketmq_version = rocketmq_version
        self.running: list[RunningTwin] = []
        self._count = 0

    def __call__(
        self,
        *,
        broker_conf: dict[str, Any] | None = None,
        broker_name: str = "broker-a",
        mode: str | None = None,
        store_dir: str | None = None,
        rocketmq_version: str | None = None,
    ) -> RunningTwin:
        """A twin; ``rocketmq_version`` (``4.9``/``5.5``) is the real line it answers as (default: the
        ``--rocketmq-version`` option, else the newest)."""
        version = rocketmq_version or self.rocketmq_version
        self._count += 1
        cleanup = None
        if store_dir is None:
            store_dir = tempfile.mkdtemp(prefix=f"rmqtwin-{self._count}-", dir=self.base_dir)
            cleanup = store_dir
        chosen = mode or self.mode
        if chosen == "inprocess" and "pytest_twisted" in sys.modules:
            twin = start_inprocess(
                store_dir, broker_conf=broker_conf, broker_name=broker_name, rocketmq_version=version
            )
        else:
            twin = start_subprocess(
                store_dir,
                broker_conf=broker_conf,
                broker_name=broker_name,
                serve_args=("--rocketmq-version", version),
            )
        twin._cleanup_dir = cleanup
        self.running.append(twin)
        return twin

    def close(self) -> None:
        for twin in reversed(self.running):
            twin.stop()
        self.running.clear()


_SETTINGS: dict[str, tuple[tuple[str, ...], str, str]] = {
    # NAME: (choices, what it sets, default), as ``--rocketmq-NAME`` and the ini's ``rocketmq_NAME``
    "mode": (("subprocess", "inprocess"), "how the rocketmq fixture runs the twin", "subprocess"),
    "version": (("4.9", "5.5"), "the real broker line the twin answers as", "5.5"),
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rmqtwin", "rmqtwin RocketMQ twin")
    for name, (choices, what, default) in _SETTINGS.items():
        group.addoption(
            f"--rocketmq-{name}", default=None, choices=choices, help=f"{what} (default: {default})"
        )
        parser.addini(f"rocketmq_{name}", what, default=default)


def _setting(config: pytest.Config, name: str) -> str:
    """The command line's ``--rocketmq-NAME``, else the ini's ``rocketmq_NAME``, else its default."""
    return str(
        config.getoption(f"--rocketmq-{name}") or config.getini(f"rocketmq_{name}") or _SETTINGS[name][2]
    )


@pytest.fixture(scope="session")
def rocketmq_factory(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[RocketMQFactory]:
    factory = RocketMQFactory(
        _setting(request.config, "mode"),
        str(tmp_path_factory.mktemp("rmqtwin")),
        _setting(request.config, "version"),
    )
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture
def rocketmq(rocketmq_factory: RocketMQFactory) -> Iterator[RunningTwin]:
    twin = rocketmq_factory()
    try:
        yield twin
    finally:
        twin.stop()
        if twin in rocketmq_factory.running:
            rocketmq_factory.running.remove(twin)
