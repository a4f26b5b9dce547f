"""The real Java RocketMQ client, driven from Python through small programs in conformance/java/.

Each driver is one JVM that reads a JSON spec, acts with the real client and prints one JSON
object per line (``{"event": "sent"|"received"|"error"|"check"|..., ...}``) and a final
``{"event": "summary", ...}``. ``JavaClient`` builds the spec, runs the JVM and parses the lines::

    client = JavaClient("4.9")                       # rocketmq-client 4.9.8 ("5": 5.5.0)
    sent = client.producer(namesrv, "TopicA", mode="async", count=10)
    got = client.push_consumer(namesrv, "TopicA", group="g1", expect=10)
    assert {e["msgId"] for e in sent.sent} == {e["msgId"] for e in got.received}
    client.mqadmin(namesrv, "topicList").stdout

Drivers and their spec keys are documented in each Java class (Producer, PushConsumer,
LitePullConsumer, BenchmarkProducer); keyword arguments here are passed through as spec keys.
``start_*`` variants return a ``DriverProcess`` that runs in the background (start a consumer,
wait for its "started" event, then produce). The Maven build is done by scripts/setup.sh; if
the jars are missing, the first use builds them.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmqtwin.children import dies_with_parent
from rmqtwin.conformance.launcher import (
    JAVA17_OPENS,
    JAVA_PROJECT_DIR,
    RealRocketMQError,
    RocketMQVersion,
    _java_env,
    file_lock,
    jvm_home_options,
    maven_executable,
    prepare_home,
    resolve_version,
)

__all__ = [
    "DriverProcess",
    "DriverResult",
    "GrpcClient",
    "JavaClient",
    "MQAdminResult",
    "SpringApp",
    "build_drivers",
]

Event = dict[str, Any]

DRIVER_CLASSES = {
    "producer": "rmqtwin.conformance.Producer",
    "push_consumer": "rmqtwin.conformance.PushConsumer",
    "lite_pull": "rmqtwin.conformance.LitePullConsumer",
    "pull_consumer": "rmqtwin.conformance.PullConsumer",
    "rebalance": "rmqtwin.conformance.Rebalance",
    "request_reply": "rmqtwin.conformance.RequestReply",
    "benchmark_producer": "rmqtwin.conformance.BenchmarkProducer",
    "acl_probe": "rmqtwin.conformance.AclProbe",
    "grpc_scenario": "rmqtwin.conformance.grpc.GrpcScenario",
    "spring_example": "rmqtwin.example.spring.SpringExample",
}
MQADMIN_CLASS = "rmqtwin.conformance.MQAdmin"
"""MQAdminStartup, then an exit without waiting seconds for Netty's graceful shutdown (MQAdmin.java)."""
TRANSPORT_FAILURES = ("RemotingTimeoutException", "RemotingSendRequestException", "RemotingConnectException")


def target_dir(version: str | RocketMQVersion) -> Path:
    """Build output of one client line: the drivers jar, lib/ (its classpath) and cds/."""
    return JAVA_PROJECT_DIR / "target" / f"client-{resolve_version(version).line}"


GRPC_TARGET = JAVA_PROJECT_DIR / "target" / "grpc-5"
GRPC_JAR = GRPC_TARGET / "drivers-grpc-5-1.0.0.jar"
SPRING_TARGET = JAVA_PROJECT_DIR / "target" / "spring-5"
SPRING_JAR = SPRING_TARGET / "drivers-spring-5-1.0.0.jar"


def build_drivers(force: bool = False) -> None:
    """Run the one Maven build of conformance/java (both client lines) if its jars are missing."""
    jars = [target_dir(v) / f"drivers-client-{v}-1.0.0.jar" for v in ("4.9", "5")] + [GRPC_JAR, SPRING_JAR]
    if not force and all(jar.exists() for jar in jars):
        return
    mvn = maven_executable()
    if mvn is None:
        raise RealRocketMQError("mvn is needed to build the Java drivers in conformance/java")
    with file_lock(JAVA_PROJECT_DIR / "target" / ".build.lock"):
        if not force and all(jar.exists() for jar in jars):
            return
        proc = subprocess.run(
            [mvn, "-q", "-B", "-DskipTests", "package"],
            cwd=JAVA_PROJECT_DIR,
            capture_output=True,
            text=True,
            env=_java_env(),
            check=False,
        )
        if proc.returncode != 0:
            raise RealRocketMQError(
                f"Maven build of {JAVA_PROJECT_DIR} failed:\n{proc.stdout}\n{proc.stderr}"
            )


@dataclass
class DriverResult:
    """What one driver run printed: its events in order, the summary, and the process outcome."""

    driver: str
    events: list[Event]
    returncode: int
    stderr: str
    other_stdout: list[str] = field(default_factory=list)

    @property
    def summary(self) -> Event:
        for event in reversed(self.events):
            if event.get("event") == "summary":
                return event
        raise AssertionError(
            f"{self.driver} printed no summary (rc={self.returncode}):\n{self.stderr[-4000:]}"
        )

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.get("event") == kind]

    @property
    def sent(self) -> list[Event]:
        return self.of("sent")

    @property
    def received(self) -> list[Event]:
        return self.of("received")

    @property
    def errors(self) -> list[Event]:
        return self.of("error") + self.of("fatal")

    def check(self) -> DriverResult:
        """Raise with the driver's output unless it exited 0 with a summary and no fatal error."""
        if self.returncode != 0 or self.of("fatal"):
            raise AssertionError(
                f"{self.driver} failed (rc={self.returncode}): {self.of('fatal')}\n{self.stderr[-4000:]}"
            )
        _ = self.summary
        return self


@dataclass
class MQAdminResult:
    """One mqadmin command: MQAdminStartup prints errors as stack traces and still exits 0."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    attempts: int = 1

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and "Exception" not in self.stderr and "Exception" not in self.stdout

    def check(self) -> MQAdminResult:
        if not self.ok:
            raise AssertionError(
                f"mqadmin {' '.join(self.args)} failed (rc={self.returncode}):\n{self.stdout}\n{self.stderr}"
            )
        return self


def _parse_line(line: str) -> Event | None:
    if not line.startswith("{"):
        return None
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "event" in value else None


class ClassDataArchive:
    """A dynamic AppCDS archive per client line and main class, made by the first run.

    The drivers are short JVMs that mostly load classes (Netty, fastjson, the client); with the
    archive a run starts markedly quicker. The first run of a main class dumps its classes at exit
    into a temporary file, renamed into place afterwards so parallel first runs never see half an
    archive. The name carries the driver jar's size and mtime, so a rebuild makes a new archive
    instead of the JVM rejecting the old one. CDS messages go to stderr, never into the events.
    """

    def __init__(self, target: Path, jar: Path, main_class: str) -> None:
        try:
            stat = jar.stat()
            key = f"{stat.st_size:x}-{stat.st_mtime_ns:x}"
        except OSError:
            key = "nojar"
        self.path = target / "cds" / f"{main_class.rsplit('.', 1)[-1]}-{key}.jsa"
        self.pending: Path | None = None

    def jvm_options(self) -> list[str]:
        quiet = ["-Xlog:disable", "-Xlog:all=warning,cds*=off:stderr"]
        if self.path.exists():
            return [f"-XX:SharedArchiveFile={self.path}", *quiet]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.pending = self.path.with_name(f"{self.path.stem}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
        return [f"-XX:ArchiveClassesAtExit={self.pending}", *quiet]

    def publish(self) -> None:
        """After the JVM exited: move a freshly dumped archive into place (first one wins)."""
        if self.pending is None:
            return
        with contextlib.suppress(OSError):
            if self.pending.exists() and self.pending.stat().st_size > 0 and not self.path.exists():
                os.replace(self.pending, self.path)
        with contextlib.suppress(OSError):
            self.pending.unlink(missing_ok=True)
        self.pending = None


class DriverProcess:
    """A driver JVM running in the background; events are collected as they are printed."""

    def __init__(
        self,
        driver: str,
        process: subprocess.Popen[str],
        home: Path,
        cleanup: bool,
        archive: ClassDataArchive | None = None,
    ) -> None:
        self.driver = driver
        self.process = process
        self.home = home
        self._cleanup = cleanup
        self._archive = archive
        self.events: list[Event] = []
        self.other_stdout: list[str] = []
        self._cond = threading.Condition()
        self._stderr: list[str] = []
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._reader.start()
        self._err_reader.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = raw.rstrip("\n")
            event = _parse_line(line)
            with self._cond:
                if event is None:
                    self.other_stdout.append(line)
                else:
                    self.events.append(event)
                self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self._stderr.append(line)

    def wait_for(self, kind: str, timeout: float = 60.0) -> Event:
        """Block until the driver prints an event of ``kind`` (e.g. "started")."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events:
                    if event.get("event") == kind:
                        return event
                if self.events and self.events[-1].get("event") == "summary":
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    break
                self._cond.wait(min(remaining, 0.5))
        raise AssertionError(
            f"{self.driver} printed no {kind!r} event (rc={self.process.poll()}):\n"
            f"{''.join(self._stderr)[-4000:]}"
        )

    def wait_for_count(self, kind: str, count: int, timeout: float = 60.0) -> None:
        """Block until the driver has printed ``count`` events of ``kind`` (e.g. 200 "sent")."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while sum(1 for event in self.events if event.get("event") == kind) < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(
                        f"{self.driver} printed fewer than {count} {kind!r} events "
                        f"(rc={self.process.poll()}):\n"
                        f"{''.join(self._stderr)[-4000:]}"
                    )
                self._cond.wait(min(remaining, 0.5))

    def result(self, timeout: float = 120.0) -> DriverResult:
        """Wait for the JVM to exit (killing it after ``timeout``) and return what it printed."""
        try:
            rc = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            rc = self.process.wait(timeout=10)
        self._reader.join(timeout=10)
        self._err_reader.join(timeout=10)
        if self._archive is not None:
            self._archive.publish()
        if self._cleanup:
            shutil.rmtree(self.home, ignore_errors=True)
        return DriverResult(
            driver=self.driver,
            events=list(self.events),
            returncode=rc,
            stderr="".join(self._stderr),
            other_stdout=list(self.other_stdout),
        )

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()


class JavaClient:
    """Runs the drivers built against one client line's jars ("4.9" = 4.9.8, "5" = 5.5.0)."""

    def __init__(
        self, version: str | RocketMQVersion = "4.9", *, heap_mb: int = 192, keep_homes: bool = False
    ):
        self.version = resolve_version(version)
        self.heap_mb = heap_mb
        self.keep_homes = keep_homes

    @property
    def classpath(self) -> str:
        build_drivers()
        target = target_dir(self.version)
        return os.pathsep.join(
            [str(target / f"drivers-client-{self.version.line}-1.0.0.jar"), f"{target}/lib/*"]
        )

    def archive(self, main_class: str) -> ClassDataArchive:
        build_drivers()
        target = target_dir(self.version)
        return ClassDataArchive(target, target / f"drivers-client-{self.version.line}-1.0.0.jar", main_class)

    def _command(
        self, main_class: str, args: Sequence[str], home: Path, *, quick: bool, archive: ClassDataArchive
    ) -> list[str]:
        from rmqtwin.conformance.launcher import java_executable

        java = java_executable()
        if java is None:
            raise RealRocketMQError("java (JDK 17) is not installed")
        return [
            java,
            f"-Xmx{self.heap_mb}m",
            "-Xss512k",
            "-XX:+UseSerialGC",
            # Short drivers spend most of their life starting up; C1 only is quicker for them.
            *(["-XX:TieredStopAtLevel=1"] if quick else []),
            *archive.jvm_options(),
            *JAVA17_OPENS,
            *jvm_home_options(home),
            # Logback would default to DEBUG on stdout, where the events go.
            f"-Dlogback.configurationFile={home / 'conf' / 'logback_tools.xml'}",
            "-cp",
            self.classpath,
            main_class,
            *args,
        ]

    def _popen(
        self,
        main_class: str,
        args: Sequence[str],
        *,
        quick: bool,
        archive: ClassDataArchive,
        conf_files: Mapping[str, str] | None = None,
    ) -> tuple[subprocess.Popen[str], Path]:
        home = prepare_home(Path(tempfile.mkdtemp(prefix="rmqtwin-java-")))
        for filename, text in (conf_files or {}).items():
            (home / "conf" / filename).write_text(text, encoding="utf-8")
        env = _java_env()
        env["ROCKETMQ_HOME"] = str(home)
        env.pop("NAMESRV_ADDR", None)
        process = subprocess.Popen(
            dies_with_parent(self._command(main_class, args, home, quick=quick, archive=archive)),
            cwd=home,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        return process, home

    def start(self, driver: str, spec: dict[str, Any]) -> DriverProcess:
        """Start a driver in the background with a spec (see the Java class for its keys)."""
        main_class = DRIVER_CLASSES[driver]
        archive = self.archive(main_class)
        process, home = self._popen(
            main_class,
            [json.dumps(spec, separators=(",", ":"))],
            quick=driver != "benchmark_producer",
            archive=archive,
        )
        return DriverProcess(driver, process, home, cleanup=not self.keep_homes, archive=archive)

    def run(self, driver: str, spec: dict[str, Any], timeout: float | None = None) -> DriverResult:
        if timeout is None:
            timeout = (
                float(spec.get("timeoutMs", 90_000)) / 1000 + float(spec.get("durationMs", 0)) / 1000 + 90
            )
        return self.start(driver, spec).result(timeout)

    # -- the drivers ----------------------------------------------------------------------------

    def producer(self, namesrv: str, topic: str, **spec: Any) -> DriverResult:
        """Send with the real producer: mode sync|async|oneway|batch|ordered|transaction."""
        return self.run("producer", {"namesrv": namesrv, "topic": topic, **spec})

    def push_consumer(self, namesrv: str, topic: str, group: str, **spec: Any) -> DriverResult:
        """Consume with DefaultMQPushConsumer until ``expect`` messages or ``timeoutMs``."""
        return self.run("push_consumer", {"namesrv": namesrv, "topic": topic, "group": group, **spec})

    def start_push_consumer(self, namesrv: str, topic: str, group: str, **spec: Any) -> DriverProcess:
        return self.start("push_consumer", {"namesrv": namesrv, "topic": topic, "group": group, **spec})

    def lite_pull(self, namesrv: str, topic: str, group: str, **spec: Any) -> DriverResult:
        """Poll with DefaultLitePullConsumer, ``mode`` subscribe or assign."""
        return self.run("lite_pull", {"namesrv": namesrv, "topic": topic, "group": group, **spec})

    def benchmark_producer(self, namesrv: str, topic: str, **spec: Any) -> DriverResult:
        """Load for ``durationMs`` with ``threads`` senders; the summary has tps and latencies."""
        return self.run("benchmark_producer", {"namesrv": namesrv, "topic": topic, **spec})

    def mqadmin(
        self,
        namesrv: str | None,
        *args: str,
        timeout: float = 120.0,
        attempts: int = 2,
        conf_files: Mapping[str, str] | None = None,
    ) -> MQAdminResult:
        """Run ``mqadmin <args> -n <namesrv>`` in its own JVM (MQAdminStartup may System.exit).

        A run that failed in the transport (a request not written, no answer in time: seen on a
        heavily loaded machine) is run again, up to ``attempts`` runs; a server's answer, error or
        not, is returned as it is. ``MQAdminResult.attempts`` says how many runs it took.
        ``conf_files`` go into the JVM's ``$ROCKETMQ_HOME/conf/`` (``{"tools.yml": ...}``: the
        accessKey/secretKey mqadmin signs with for an ACL broker).
        """
        argv = [*args, *(["-n", namesrv] if namesrv else [])]
        for attempt in range(1, attempts + 1):
            result = self._mqadmin_once(argv, timeout, conf_files)
            result.attempts = attempt
            if result.ok or not any(name in result.stderr for name in TRANSPORT_FAILURES):
                break
        return result

    def _mqadmin_once(
        self, argv: list[str], timeout: float, conf_files: Mapping[str, str] | None = None
    ) -> MQAdminResult:
        archive = self.archive(MQADMIN_CLASS)
        process, home = self._popen(MQADMIN_CLASS, argv, quick=True, archive=archive, conf_files=conf_files)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        finally:
            archive.publish()
            if not self.keep_homes:
                with contextlib.suppress(OSError):
                    shutil.rmtree(home, ignore_errors=True)
        return MQAdminResult(args=list(argv), returncode=process.returncode, stdout=stdout, stderr=stderr)


class _ModuleClient(JavaClient):
    """A program with its own module of the driver build (its jar and lib/ under ``target``)."""

    target: Path
    jar: Path

    @property
    def classpath(self) -> str:
        build_drivers()
        return os.pathsep.join([str(self.jar), f"{self.target}/lib/*"])

    def archive(self, main_class: str) -> ClassDataArchive:
        build_drivers()
        return ClassDataArchive(self.target, self.jar, main_class)


class GrpcClient(_ModuleClient):
    """The gRPC client, ``rocketmq-client-java`` 5.0.8, which talks to a rocketmq-proxy only.

    Its one driver, ``GrpcScenario`` (conformance/java/grpc-5), runs the steps its Javadoc lists
    (normal, fifo, delay, transaction) against the proxy's gRPC endpoint and prints their events.
    """

    target = GRPC_TARGET
    jar = GRPC_JAR

    def __init__(self, *, heap_mb: int = 256, keep_homes: bool = False) -> None:
        super().__init__("5", heap_mb=heap_mb, keep_homes=keep_homes)

    def scenario(self, endpoint: str, timeout: float = 400.0, **spec: Any) -> DriverResult:
        """Run GrpcScenario against ``endpoint`` (host:port of the proxy's gRPC server)."""
        return self.run("grpc_scenario", {"endpoint": endpoint, **spec}, timeout=timeout)


class SpringApp(_ModuleClient):
    """The example Spring Boot application (conformance/java/spring-5, rocketmq-spring-boot-starter
    2.3.5 on rocketmq-client 5.3.2): ``SpringExample`` sends with each RocketMQTemplate send, consumes
    with @RocketMQMessageListener and decides transactions in a @RocketMQTransactionListener."""

    target = SPRING_TARGET
    jar = SPRING_JAR

    def __init__(self, *, heap_mb: int = 320, keep_homes: bool = False) -> None:
        super().__init__("5", heap_mb=heap_mb, keep_homes=keep_homes)

    def example(self, namesrv: str, timeout: float = 300.0, **spec: Any) -> DriverResult:
        """Run SpringExample with ``rocketmq.name-server`` = ``namesrv`` (spec keys in its Javadoc)."""
        return self.run("spring_example", {"namesrv": namesrv, **spec}, timeout=timeout)
