"""pytest fixtures for real Apache RocketMQ and the real Java client (loaded by tests/conftest.py).

Starting a real name server + broker costs seconds to tens of seconds of a loaded machine, so the
whole session shares one cluster per line wherever a test does not need a store or broker of its own:

- ``real_rocketmq``: the shared cluster of a line; a test that takes it runs once per version in
  ``--real-versions`` (default ``4.9,5``; env ``RMQTWIN_REAL_VERSIONS``). Tests sharing it use
  distinct topic and group names (``unique_name``).
- ``real_rocketmq_factory(version, **kwargs)``: the same cache, for tests that pick the version
  themselves. Every instance it starts runs ``SHARED_BROKER_CONF`` (delay level n = n seconds,
  half messages checked every second after 2 s), so retries, delayed messages and transaction
  check-backs happen within a test on the shared cluster: ask for the shared one rather than
  starting your own for those. ``broker_conf_overrides`` are applied on top, and instances are
  cached by (line, effective broker.conf, other arguments): overrides that only repeat the shared
  values get the shared cluster; anything else starts one more instance, kept for the session.
  ``real_rocketmq_factory.shared_conf(**more)`` is the effective broker.conf a test can mirror (for
  example into rmqtwin's own ``broker.conf`` when it runs the same scenario against both).
- ``java_client``: a ``JavaClient`` for the same line as the test's ``real_rocketmq``
  (else 4.9); ``java_client_factory(version)`` for any line.
- ``java_session``: one recorded session of the real Java client (``conformance/session.py``: every
  send mode, a delay message, a transaction, push and lite-pull consumers, through ``rmqtwin proxy``
  and ``tcpdump -i lo``) on the shared cluster of the test's ``real_rocketmq`` line, recorded once per
  line and shared by every test that asks; ``java_session_factory(version)`` for any line. Read it,
  never write into its files.

Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``) every test whose parameter id
names a line (``[rocketmq-<line>]``: the ``real_rocketmq`` parameter; ``[real-<line>]``: a ``target``
or version parameter of that name) runs on the same worker, so each worker starts the shared
cluster of its own line only. Name a new parameter that way to join a line's worker. A module of
``OWN_BROKER_TESTS`` (a broker of its own per line) leaves its line's group; every other test stays with
its module (``tests/golden/`` as one), so module and session fixtures are made on one worker only. The
two lines' groups go out first, one to each worker, then Spark's, docker's and the golden vectors', then
the modules that start processes, the in-process ones last (``scope_order``).

Tests that need a broker of their own (a store of their own, a broker they kill) start
``RealRocketMQ`` themselves and stop it in a ``finally``. Every instance the factory started is
killed when the session ends, pass or fail (nobody reads a shared store afterwards).

Tests using these are marked ``java`` (and ``real`` when they start RocketMQ) automatically, and
skip with the reason when Java or Maven is missing. Heavy imports stay inside the fixtures.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

from rmqtwin.conformance.runner import SHARED_BROKER_CONF

if TYPE_CHECKING:
    from rmqtwin.conformance.java_client import JavaClient
    from rmqtwin.conformance.launcher import RealRocketMQ
    from rmqtwin.conformance.session import JavaSession

DEFAULT_VERSIONS = "4.9,5"
REAL_FIXTURES = frozenset({"real_rocketmq", "real_rocketmq_factory", "java_session", "java_session_factory"})
JAVA_FIXTURES = frozenset({"java_client", "java_client_factory"}) | REAL_FIXTURES

# broker.conf settings every cluster of ``real_rocketmq_factory`` runs with, on top of the launcher's:
# the conformance runner's, so pytest and ``rmqtwin conformance run`` start the same brokers.


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--real-versions",
        default=os.environ.get("RMQTWIN_REAL_VERSIONS", DEFAULT_VERSIONS),
        help="comma-separated real RocketMQ lines the real_rocketmq fixture runs against (default 4.9,5)",
    )


def _versions(config: pytest.Config) -> list[str]:
    from rmqtwin.conformance.launcher import resolve_version

    raw = str(config.getoption("--real-versions"))
    return [resolve_version(v).line for v in raw.split(",") if v.strip()]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "real_rocketmq" in metafunc.fixturenames:
        versions = _versions(metafunc.config)
        metafunc.parametrize(
            "real_rocketmq", versions, indirect=True, scope="session", ids=[f"rocketmq-{v}" for v in versions]
        )


SPARK_TESTS = "tests/spark/"
"""Node ids of the tests that share one SparkSession (and the session's ingest) per worker."""
DOCKER_TESTS = "tests/docker/"
"""Node ids of the tests that start containers on fixed loopback ports (a broker's advertised port must
be the one its container publishes): two workers running them at once collide, so they share one."""
GOLDEN_TESTS = "tests/golden/"
"""Node ids of the tests that read the golden vectors: one generator and one verifier JVM per line for
the whole directory (its session fixture), so on one worker they run once."""
OWN_BROKER_TESTS = ("tests/store_mirror/test_interop_real.py", "tests/conformance/test_launcher_ready.py")
"""Modules whose ``[real-<line>]`` tests start a broker of their own instead of the line's shared one:
they need not wait behind the line's group, so they go to whichever worker is free."""
FIRST = ("real-5", "real-4.9", "spark", "docker", "golden")
"""The longest groups, handed out first in this order (one line to each worker from the start), so the
short units come last and the workers end together."""
SPAWNS = re.compile(r"java_client|JavaClient|RealRocketMQ|real_rocketmq|rocketmq_factory|start_subprocess")
"""What a test module starts JVMs or rmqtwin processes with: such modules are handed out before the
in-process ones."""

_REAL_LINE_ID = re.compile(r"(?<![A-Za-z0-9_.])(?:rocketmq|real)-(4\.9|5)(?![0-9.])")


def real_line_of(nodeid: str) -> str | None:
    """The real line a test runs against, from its parameter id: ``[rocketmq-<line>]`` (the
    ``real_rocketmq`` parameter) or ``[real-<line>]`` (a ``target`` of the twin-vs-real files, the
    store interop's version)."""
    _, bracket, params = nodeid.partition("[")
    match = _REAL_LINE_ID.search(params) if bracket else None
    return match.group(1) if match else None


def xdist_scope(nodeid: str) -> str:
    """The group of tests ``make test`` runs on one xdist worker: ``docker`` for every test under
    ``DOCKER_TESTS``, whatever its parameters; ``golden`` for those under ``GOLDEN_TESTS``;
    ``real-<line>`` for a test of one real line's shared cluster (a module of ``OWN_BROKER_TESTS``:
    ``<module>[real-<line>]``); ``spark`` for the other tests under ``SPARK_TESTS``; otherwise the
    test's module, so its module and session fixtures (a twin, a JVM run of an oracle) are made once."""
    if nodeid.startswith(DOCKER_TESTS):
        return "docker"
    if nodeid.startswith(GOLDEN_TESTS):
        return "golden"
    module = nodeid.split("::", 1)[0]
    line = real_line_of(nodeid)
    if line is not None:
        return f"{module}[real-{line}]" if module in OWN_BROKER_TESTS else f"real-{line}"
    return "spark" if nodeid.startswith(SPARK_TESTS) else module


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & JAVA_FIXTURES:
            item.add_marker(pytest.mark.java)
        if names & REAL_FIXTURES:
            item.add_marker(pytest.mark.real)


def scope_order(scopes: list[str], spawns: Callable[[str], bool]) -> list[str]:
    """The order the scopes are handed out: ``FIRST`` in its order, then the modules that ``spawns``
    processes, then the rest; otherwise as given (xdist's order: most tests first)."""

    def rank(scope: str) -> int:
        if scope in FIRST:
            return FIRST.index(scope)
        return len(FIRST) + (0 if spawns(scope.split("[", 1)[0]) else 1)

    return sorted(scopes, key=rank)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n N --dist loadgroup`` (``make test``): each group of ``xdist_scope`` on one worker.

    Each worker then starts the shared cluster of its own line only; the tests of ``SPARK_TESTS``
    share one Spark and one ingest, not one per worker; the tests of ``DOCKER_TESTS`` never run two
    container stacks on the same fixed ports at once; a module's fixtures are made on one worker.
    The groups go out longest first (``scope_order``). (pytest-xdist's own ``xdist_group`` marks do
    not reach its scheduler under pytest 9, which identifies nodes by ``Node._id``.)
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]

    root = config.rootpath

    def spawns(module: str) -> bool:
        try:
            return SPAWNS.search((root / module).read_text(encoding="utf-8")) is not None
        except OSError:
            return False

    class RealLineScheduling(LoadScopeScheduling):
        _ordered = False

        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            if not self._ordered:  # the queue is complete before the first unit goes out
                self._ordered = True
                for scope in scope_order(list(self.workqueue), spawns):
                    self.workqueue.move_to_end(scope)
            super()._assign_work_unit(node)

    return RealLineScheduling(config, log)


def _skip_without_java() -> None:
    from rmqtwin.conformance.launcher import java_available

    reason = java_available()
    if reason is not None:
        pytest.skip(f"needs Java 17 and Maven: {reason}")


def _conf_text(value: object) -> str:
    """A broker.conf value as the properties file spells it (the launcher writes booleans lower-case)."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value).strip()


class RealRocketMQFactory:
    """Starts real RocketMQ on demand and keeps one instance per (line, effective broker.conf, arguments)."""

    def __init__(self) -> None:
        self._instances: dict[tuple[str, str, str], RealRocketMQ] = {}

    @staticmethod
    def shared_conf(**overrides: object) -> dict[str, object]:
        """The broker.conf overrides an instance gets: ``SHARED_BROKER_CONF`` with ``overrides`` on top."""
        return {**SHARED_BROKER_CONF, **overrides}

    def __call__(self, version: str = "4.9", **kwargs: Any) -> RealRocketMQ:
        from rmqtwin.conformance.launcher import DEFAULT_BROKER_CONF, RealRocketMQ, resolve_version

        if "store_dir" in kwargs:
            raise TypeError("a broker on a store of its own is not shared: start RealRocketMQ in the test")
        conf = self.shared_conf(**dict(kwargs.pop("broker_conf_overrides", None) or {}))
        # Keyed by the broker.conf text the broker reads: an override equal to a launcher default
        # (``enablePropertyFilter="true"``) is the shared cluster too.
        effective = {key: _conf_text(value) for key, value in {**DEFAULT_BROKER_CONF, **conf}.items()}
        key = (resolve_version(version).line, repr(sorted(effective.items())), repr(sorted(kwargs.items())))
        instance = self._instances.get(key)
        if instance is not None and not instance.running:
            instance.stop(graceful=False)
            instance = None
        if instance is None:
            instance = RealRocketMQ(version, broker_conf_overrides=conf, **kwargs).start()
            self._instances[key] = instance
        return instance

    def close(self) -> None:
        # Shared instances hold nothing anyone reads afterwards: kill rather than wait 10-20 s
        # per broker for a graceful shutdown.
        for instance in self._instances.values():
            instance.stop(graceful=False)
        self._instances.clear()


@pytest.fixture(scope="session")
def real_rocketmq_factory() -> Iterator[RealRocketMQFactory]:
    _skip_without_java()
    factory = RealRocketMQFactory()
    try:
        yield factory
    finally:
        factory.close()


@pytest.fixture(scope="session")
def real_rocketmq(request: pytest.FixtureRequest, real_rocketmq_factory: RealRocketMQFactory) -> RealRocketMQ:
    version = getattr(request, "param", "4.9")
    return real_rocketmq_factory(version)


@pytest.fixture(scope="session")
def java_client_factory() -> Callable[[str], JavaClient]:
    _skip_without_java()
    from rmqtwin.conformance.java_client import JavaClient, build_drivers

    build_drivers()
    clients: dict[str, JavaClient] = {}

    def factory(version: str = "4.9") -> JavaClient:
        client = clients.get(version)
        if client is None:
            client = clients[version] = JavaClient(version)
        return client

    return factory


@pytest.fixture
def java_client(
    request: pytest.FixtureRequest, java_client_factory: Callable[[str], JavaClient]
) -> JavaClient:
    callspec = getattr(request.node, "callspec", None)
    version = "4.9"
    if callspec is not None and "real_rocketmq" in callspec.params:
        version = str(callspec.params["real_rocketmq"])
    return java_client_factory(version)


@pytest.fixture(scope="session")
def java_session_factory(
    real_rocketmq_factory: RealRocketMQFactory,
    java_client_factory: Callable[[str], JavaClient],
    tmp_path_factory: pytest.TempPathFactory,
) -> Callable[[str], JavaSession]:
    from rmqtwin.conformance.launcher import resolve_version
    from rmqtwin.conformance.session import record_java_session

    sessions: dict[str, JavaSession | Exception] = {}

    def factory(version: str = "4.9") -> JavaSession:
        line = resolve_version(version).line
        session = sessions.get(line)
        if session is None:  # a failed recording is not tried again by every later test
            out = tmp_path_factory.mktemp(f"java-session-{line}")
            try:
                session = record_java_session(real_rocketmq_factory(line), java_client_factory(line), out)
            except Exception as exc:
                session = exc
            sessions[line] = session
        if isinstance(session, Exception):
            raise session
        return session

    return factory


@pytest.fixture
def java_session(
    real_rocketmq: RealRocketMQ, java_session_factory: Callable[[str], JavaSession]
) -> JavaSession:
    return java_session_factory(real_rocketmq.version.line)


_counter = itertools.count()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> Callable[[str], str]:
    """``unique_name("Topic")`` -> a valid topic/group name no other test in the session uses."""
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", request.node.name)[-60:]

    def make(prefix: str) -> str:
        return f"{prefix}_{stem}_{os.getpid()}_{next(_counter)}"

    return make
