"""Real Apache RocketMQ (name server + brokers) started from Maven Central jars, no Docker.

This is the project's oracle: whatever the real broker answers is what our fakes must answer.

Versions (``VERSIONS``, chosen by line name):

- ``"4.9"``: namesrv/broker/tools **4.9.7**, Java client **4.9.8**. The 4.9.8 release published
  only the client-side artifacts on Maven Central (no ``rocketmq-broker``/``rocketmq-namesrv``
  4.9.8), so 4.9.7 is the newest 4.9.x server one can fetch.
- ``"5"``: everything **5.5.0**.

Jars are fetched once with Maven (``conformance/java/servers/pom.xml``,
``dependency:copy-dependencies``) into ``~/.cache/rmqtwin/rocketmq/<version>/lib`` (or
``$RMQTWIN_CACHE/rocketmq/...``) and reused; ``fetch(version)`` is the only code that does it,
called by ``rmqtwin real fetch``, ``scripts/setup.d/10-rocketmq.sh`` and on demand by
``RealRocketMQ``.

Use::

    from rmqtwin.conformance.launcher import RealRocketMQ

    with RealRocketMQ("5") as rmq:                    # namesrv + one broker on free ports
        rmq.namesrv_addr                              # "127.0.0.1:40123"
        rmq.broker_addr                               # "127.0.0.1:40211" (also uses -2 and +1)
        rmq.store_dir                                 # the broker's storePathRootDir

    # A broker on an existing store (not deleted afterwards), with broker.conf overrides:
    RealRocketMQ("4.9", store_dir=path, broker_conf_overrides={"mappedFileSizeCommitLog": 1 << 30})

    # Two brokers (broker-a, broker-b) in one cluster:
    RealRocketMQ("4.9", brokers=2).broker_addrs

    # A real slave of a master registered with another name server (a twin's, say):
    RealRocketMQ("5", namesrv_addr=twin_namesrv, broker_conf_overrides={
        "brokerName": "broker-a", "brokerId": 1, "brokerRole": "SLAVE"})

``start()`` returns once every broker is listed by the name server (GET_BROKER_CLUSTER_INFO
over a socket), not after a sleep; a process that dies or a timeout raises ``RealRocketMQError``
with the tail of its logs. ``stop()`` sends SIGTERM, waits, then kills. Every process gets its
own home directory under the work dir (``user.home``/``ROCKETMQ_HOME``), so logs land in
``<work_dir>/<name>/logs/rocketmqlogs`` and nothing is written to the real home.

Broker defaults (``DEFAULT_BROKER_CONF``): brokerIP1=127.0.0.1, 16 MiB commitlog files, small
consume queue files, autoCreateTopicEnable and enablePropertyFilter (SQL92) on. A broker started
on an existing store must be given that store's ``mappedFileSizeCommitLog`` (and consume queue
size) in ``broker_conf_overrides``, or its ``load()`` rejects the files.
"""

from __future__ import annotations

import abc
import atexit
import base64
import contextlib
import fcntl
import functools
import hashlib
import hmac
import json
import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

import yaml

from rmqtwin.children import dies_with_parent

__all__ = [
    "DEFAULT_BROKER_CONF",
    "VERSIONS",
    "RealRocketMQ",
    "RealRocketMQError",
    "RealRocketMQProxy",
    "RocketMQVersion",
    "fetch",
    "fetch_proxy",
    "fetch_sources",
    "java_available",
    "java_executable",
    "maven_executable",
    "resolve_version",
]

CONFORMANCE_DIR = Path(__file__).resolve().parent
JAVA_PROJECT_DIR = CONFORMANCE_DIR / "java"
SERVERS_POM = JAVA_PROJECT_DIR / "servers" / "pom.xml"
PROXY_POM = JAVA_PROJECT_DIR / "proxy" / "pom.xml"
JAVA17_HOME = Path("/usr/lib/jvm/java-17-openjdk-amd64")


@dataclass(frozen=True)
class RocketMQVersion:
    """One release line: which server jars and which Java client the oracle uses for it."""

    line: str
    server: str
    client: str


# The ``-sources.jar`` files ``rmqtwin real fetch`` also caches: the Java the codec's code tables are
# checked against (tests/codec/test_codes.py reads RequestCode, ResponseCode, LanguageCode, MQVersion).
SOURCE_JARS: tuple[tuple[str, str], ...] = (
    ("rocketmq-common", "4.9.8"),
    ("rocketmq-common", "5.3.3"),
    ("rocketmq-remoting", "5.3.3"),
    ("rocketmq-common", "5.5.0"),
    ("rocketmq-remoting", "5.5.0"),
)

VERSIONS: dict[str, RocketMQVersion] = {
    "4.9": RocketMQVersion(line="4.9", server="4.9.7", client="4.9.8"),
    "5": RocketMQVersion(line="5", server="5.5.0", client="5.5.0"),
}


def resolve_version(name: str | RocketMQVersion) -> RocketMQVersion:
    """Accept a line ("4.9", "5"), a release ("4.9.7", "4.9.8", "5.5.0"), "4" or "5.x"."""
    if isinstance(name, RocketMQVersion):
        return name
    text = name.strip().lower().removeprefix("v").removesuffix(".x")
    if text in VERSIONS:
        return VERSIONS[text]
    for version in VERSIONS.values():
        if text in (version.server, version.client) or text == version.line.split(".")[0]:
            return version
    raise ValueError(f"unknown RocketMQ version {name!r}; known lines: {', '.join(VERSIONS)}")


class RealRocketMQError(RuntimeError):
    """Real RocketMQ could not be fetched, started or stopped; the message carries log tails."""


# ---------------------------------------------------------------------------------------------
# Tools and the jar cache


def java_executable() -> str | None:
    """Java 17: $JAVA_HOME, then the Debian JDK 17, then whatever ``java`` is on PATH."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    candidates.append(JAVA17_HOME / "bin" / "java")
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("java")


def maven_executable() -> str | None:
    return shutil.which("mvn")


def java_available() -> str | None:
    """None when Java and Maven are both there, else the reason tests should skip."""
    if java_executable() is None:
        return "java (JDK 17) is not installed"
    if maven_executable() is None:
        return "mvn (Maven) is not installed"
    return None


def cache_dir() -> Path:
    return Path(os.environ.get("RMQTWIN_CACHE", "~/.cache/rmqtwin")).expanduser()


def server_lib_dir(version: str | RocketMQVersion) -> Path:
    return cache_dir() / "rocketmq" / resolve_version(version).server / "lib"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive lock shared by every process on the machine (parallel test runs, set-up)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _java_env() -> dict[str, str]:
    env = dict(os.environ)
    java = java_executable()
    if java is not None and "JAVA_HOME" not in env:
        env["JAVA_HOME"] = str(Path(java).resolve().parent.parent)
    return env


def fetch(version: str | RocketMQVersion, *, quiet: bool = True) -> Path:
    """Return the lib directory with namesrv, broker and tools jars, fetching them if missing."""
    resolved = resolve_version(version)
    lib = server_lib_dir(resolved)
    return _fetch_jars(SERVERS_POM, resolved.server, lib, "rocketmq-broker-*.jar", quiet=quiet)


def proxy_lib_dir(version: str | RocketMQVersion = "5") -> Path:
    return cache_dir() / "rocketmq-proxy" / resolve_version(version).server / "lib"


def fetch_proxy(version: str | RocketMQVersion = "5", *, quiet: bool = True) -> Path:
    """Return the lib directory with the rocketmq-proxy jars (5.x lines only), fetching them if missing."""
    resolved = resolve_version(version)
    if resolved.line.startswith("4"):
        raise RealRocketMQError(f"rocketmq-proxy exists from 5.0 on, not for {resolved.server}")
    lib = proxy_lib_dir(resolved)
    return _fetch_jars(PROXY_POM, resolved.server, lib, "rocketmq-proxy-*.jar", quiet=quiet)


def sources_dir() -> Path:
    return cache_dir() / "rocketmq-sources"


def fetch_sources(artifact: str, version: str, *, quiet: bool = True) -> Path:
    """The ``-sources.jar`` of ``org.apache.rocketmq:<artifact>:<version>``, fetched from Maven Central once.

    ``mvn dependency:copy`` writes it to a temporary sibling; it is renamed into place, so a jar in the
    cache is always whole.
    """
    directory = sources_dir()
    jar = directory / f"{artifact}-{version}-sources.jar"
    if jar.exists():
        return jar
    mvn = maven_executable()
    if mvn is None:
        raise RealRocketMQError(f"mvn is needed to fetch {jar.name} from Maven Central")
    with file_lock(directory / ".fetch.lock"):
        if jar.exists():
            return jar
        staging = Path(tempfile.mkdtemp(prefix="sources-", dir=directory))
        try:
            command = [
                mvn,
                *(["-q"] if quiet else []),
                "-B",
                "dependency:copy",
                f"-Dartifact=org.apache.rocketmq:{artifact}:{version}:jar:sources",
                f"-DoutputDirectory={staging}",
            ]
            proc = subprocess.run(
                command, capture_output=True, text=True, env=_java_env(), cwd=staging, check=False
            )
            fetched = staging / jar.name
            if proc.returncode != 0 or not fetched.is_file():
                tail = _tail_text(proc.stdout + proc.stderr)
                raise RealRocketMQError(f"fetching {jar.name} failed (rc={proc.returncode}):\n{tail}")
            fetched.rename(jar)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return jar


def _fetch_jars(pom: Path, version: str, lib: Path, main_jar: str, *, quiet: bool) -> Path:
    """``dependency:copy-dependencies`` of ``pom`` at ``version`` into ``lib``, once.

    The copy goes to a temporary sibling and is renamed into place, with a ``.complete`` marker,
    so an interrupted fetch is never mistaken for a finished one.
    """
    marker = lib / ".complete"
    if marker.exists():
        return lib
    mvn = maven_executable()
    if mvn is None:
        raise RealRocketMQError("mvn is needed to fetch RocketMQ jars from Maven Central")
    with file_lock(lib.parent / ".fetch.lock"):
        if marker.exists():
            return lib
        staging = Path(tempfile.mkdtemp(prefix="lib-", dir=lib.parent))
        command = [
            mvn,
            *(["-q"] if quiet else []),
            "-B",
            "-f",
            str(pom),
            f"-Drocketmq.version={version}",
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
        ]
        proc = subprocess.run(command, capture_output=True, text=True, env=_java_env(), check=False)
        if proc.returncode != 0 or not any(staging.glob(main_jar)):
            shutil.rmtree(staging, ignore_errors=True)
            raise RealRocketMQError(
                f"fetching {pom.parent.name} jars of RocketMQ {version} failed (rc={proc.returncode}):\n"
                f"{_tail_text(proc.stdout + proc.stderr)}"
            )
        if lib.exists():
            shutil.rmtree(lib)
        staging.rename(lib)
        marker.write_text(f"{version}\n")
    return lib


# ---------------------------------------------------------------------------------------------
# Ports and the name server probe


def _port_free(port: int) -> bool:
    if not 0 < port < 65536:
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _ephemeral_ports() -> range:
    """The range the kernel hands out for outgoing connections and port-0 binds."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return range(int(low), int(high) + 1)
    except (OSError, ValueError):
        return range(32768, 61000)


def free_port() -> int:
    """A free loopback port for a JVM to bind a moment later, chosen outside the ephemeral range.

    A port the kernel picked for a port-0 bind is from the range it also gives to outgoing
    connections: on a busy machine one of those can take it before the JVM binds (BindException).
    """
    ephemeral = _ephemeral_ports()
    candidates = [p for p in range(10240, 32768) if p not in ephemeral] or list(range(10240, 65536))
    for _ in range(200):
        port = random.choice(candidates)
        if _port_free(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def free_broker_port(taken: set[int] | None = None) -> int:
    """A listenPort whose fast port (listenPort-2) and HA port (listenPort+1) are free as well."""
    taken = taken or set()
    for _ in range(200):
        port = free_port()
        group = {port - 2, port - 1, port, port + 1}
        if group & taken:
            continue
        if all(_port_free(p) for p in (port - 2, port + 1)):
            return port
    raise RealRocketMQError("no free group of broker ports found on 127.0.0.1")


def _encode_request(code: int, opaque: int, credentials: tuple[str, str] | None = None) -> bytes:
    ext_fields: dict[str, str] = {}
    if credentials is not None:
        # AclClientRPCHook's signature of a request whose only ext field is the access key:
        # base64(HmacSHA1(secretKey, accessKey)), written independently of fakes/broker/acl.py.
        access_key, secret_key = credentials
        digest = hmac.new(secret_key.encode(), access_key.encode(), hashlib.sha1).digest()
        ext_fields = {"AccessKey": access_key, "Signature": base64.b64encode(digest).decode()}
    header = json.dumps(
        {
            "code": code,
            "extFields": ext_fields,
            "flag": 0,
            "language": "JAVA",
            "opaque": opaque,
            "serializeTypeCurrentRPC": "JSON",
            "version": 409,
        },
        separators=(",", ":"),
    ).encode()
    return struct.pack(">II", 4 + len(header), len(header)) + header


def _read_exact(sock: socket.socket, size: int) -> bytes:
    chunks = []
    while size:
        chunk = sock.recv(size)
        if not chunk:
            raise ConnectionError("connection closed mid-frame")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


GET_BROKER_RUNTIME_INFO = 28
GET_BROKER_CLUSTER_INFO = 106


def probe(
    addr: str, code: int, timeout: float = 3.0, credentials: tuple[str, str] | None = None
) -> tuple[int, str | None, bytes]:
    """Send one header-only request to ``addr``; return (response code, remark, body).

    ``credentials`` (access key, secret key) sign it for a broker with ``aclEnable``.

    A deliberately tiny blocking client (JSON header, no codec dependency): it is the
    readiness probe, so it must not share bugs with the code under test.
    """
    host, _, port = addr.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(_encode_request(code, opaque=1, credentials=credentials))
        (length,) = struct.unpack(">I", _read_exact(sock, 4))
        frame = _read_exact(sock, length)
    (word,) = struct.unpack(">I", frame[:4])
    header_len = word & 0xFFFFFF
    header = json.loads(frame[4 : 4 + header_len])
    remark = header.get("remark")
    return int(header["code"]), None if remark is None else str(remark), frame[4 + header_len :]


def acl_probe_credentials(conf_files: Mapping[str, str]) -> tuple[str, str] | None:
    """The account the readiness probe signs with when the brokers get a ``plain_acl.yml``.

    A broker with ``aclEnable`` (4.9's ACL 1.0) refuses the unsigned probe before it reads its stats,
    so the probe signs as the first admin account (else the first account); 5.3.3+ ignores the file
    and the signature.
    """
    text = conf_files.get("plain_acl.yml")
    if text is None:
        return None
    accounts = (yaml.safe_load(text) or {}).get("accounts") or []
    if not accounts:
        return None
    account = next((a for a in accounts if a.get("admin")), accounts[0])
    return str(account["accessKey"]), str(account["secretKey"])


def query_cluster_info(namesrv_addr: str, timeout: float = 3.0) -> tuple[int, bytes]:
    """GET_BROKER_CLUSTER_INFO to a name server: (response code, body)."""
    code, _, body = probe(namesrv_addr, GET_BROKER_CLUSTER_INFO, timeout)
    return code, body


# ---------------------------------------------------------------------------------------------
# Processes

JAVA17_OPENS = (
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
    "--add-opens=java.base/java.net=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-opens=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-exports=java.base/jdk.internal.misc=ALL-UNNAMED",
)
"""Java 17 closes JDK internals RocketMQ reaches into: MappedFile.clean goes through
DirectByteBuffer.attachment (java.nio) and jdk.internal.ref.Cleaner. Without them the 4.9 store's
shutdown hook throws before it deletes the abort file, and the next start recovers abnormally."""

# 4.9.x configures logback from $ROCKETMQ_HOME/conf/<file> and refuses to start without it
# (5.x ships its logback configuration inside the jars and ignores these files).
_LOGBACK_XML = """<?xml version="1.0" encoding="UTF-8"?>
<configuration>
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${user.home}/logs/rocketmqlogs/%(name)s.log</file>
    <encoder>
      <pattern>%%d{yyyy-MM-dd HH:mm:ss.SSS} %%-5level [%%thread] %%logger{24} - %%msg%%n</pattern>
    </encoder>
  </appender>
  <root level="INFO"><appender-ref ref="FILE"/></root>
</configuration>
"""
LOGBACK_FILES = {
    "logback_namesrv.xml": "namesrv",
    "logback_broker.xml": "broker",
    "logback_tools.xml": "tools",
}


def prepare_home(home: Path) -> Path:
    """A ROCKETMQ_HOME/user.home for one JVM: conf/ with logback files, logs/ for output."""
    (home / "conf").mkdir(parents=True, exist_ok=True)
    (home / "logs" / "rocketmqlogs").mkdir(parents=True, exist_ok=True)
    for filename, name in LOGBACK_FILES.items():
        target = home / "conf" / filename
        if not target.exists():
            target.write_text(_LOGBACK_XML % {"name": name})
    return home


def jvm_home_options(home: Path) -> list[str]:
    return [
        f"-Duser.home={home}",
        f"-Drocketmq.home.dir={home}",
        f"-Drocketmq.client.logRoot={home / 'logs' / 'rocketmqlogs'}",
        "-Djava.net.preferIPv4Stack=true",
        "-Dfile.encoding=UTF-8",
    ]


def _tail_text(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _tail_file(path: Path, lines: int = 40) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            return _tail_text(handle.read().decode("utf-8", "replace"), lines)
    except OSError:
        return ""


def _format_properties(values: Mapping[str, object]) -> str:
    def text(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return "".join(f"{key}={text(value)}\n" for key, value in values.items())


@dataclass
class JavaProcess:
    """One running JVM (name server or broker) and where its output goes."""

    name: str
    home: Path
    process: subprocess.Popen[bytes]
    stdout_path: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        parts = [f"--- {self.name} stdout ({self.stdout_path})", _tail_file(self.stdout_path, lines)]
        log_dir = self.home / "logs" / "rocketmqlogs"
        for log in sorted(log_dir.glob("*.log")):
            if log.name in ("namesrv.log", "broker.log", "store.log") and log.stat().st_size:
                parts += [f"--- {self.name} {log}", _tail_file(log, lines)]
        return "\n".join(parts)

    def terminate(self) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGTERM)

    def wait_or_kill(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            return self.process.wait(timeout=10)


def start_java(
    name: str,
    home: Path,
    *,
    classpath: str,
    main_class: str,
    args: list[str],
    heap_mb: int,
    extra_jvm: list[str] | None = None,
) -> JavaProcess:
    """Start one JVM detached from our terminal (own session: Ctrl-C reaches us, not it)."""
    java = java_executable()
    if java is None:
        raise RealRocketMQError("java (JDK 17) is not installed")
    prepare_home(home)
    command = [
        java,
        "-server",
        f"-Xms{min(heap_mb, 256)}m",
        f"-Xmx{heap_mb}m",
        f"-XX:MaxDirectMemorySize={max(256, heap_mb)}m",
        "-XX:+UseG1GC",
        "-XX:-OmitStackTraceInFastThrow",
        *JAVA17_OPENS,
        *jvm_home_options(home),
        *(extra_jvm or []),
        "-cp",
        classpath,
        main_class,
        *args,
    ]
    env = _java_env()
    env["ROCKETMQ_HOME"] = str(home)
    env.pop("NAMESRV_ADDR", None)
    stdout_path = home / "stdout.log"
    with stdout_path.open("wb") as out:
        process = subprocess.Popen(
            dies_with_parent(command),
            cwd=home,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    return JavaProcess(name=name, home=home, process=process, stdout_path=stdout_path)


BUSY_THREADS = ("TransactionalOp",)
"""Broker threads (Linux thread names, at most 15 characters) that busy-loop in a released version.

5.5.0's ``TransactionalOpBatchService`` spins on a full core once any transaction has ended: in
``TransactionalMessageServiceImpl.batchSendOpMessage`` an idle queue context (nothing left to write)
still pulls the next wake-up to its last write time + ``transactionOpBatchInterval``, which is in
the past three seconds later, so the method returns 0 and the thread runs it again at once."""


def lower_busy_thread_priority(pid: int) -> list[int]:
    """Give the ``BUSY_THREADS`` of a JVM the lowest priority (nice 19), so their spinning takes only
    otherwise idle CPU. Their work is unchanged: a nice thread still runs when it has work, just not
    ahead of everything else. Returns the thread ids changed (none where /proc is not Linux's)."""
    changed: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return changed
    for tid in tasks:
        try:
            name = Path(f"/proc/{pid}/task/{tid}/comm").read_text().strip()
            if name.startswith(BUSY_THREADS):
                os.setpriority(os.PRIO_PROCESS, int(tid), 19)
                changed.append(int(tid))
        except (OSError, ValueError):
            continue
    return changed


DEFAULT_BROKER_CONF: dict[str, object] = {
    "brokerClusterName": "rmqtwin",
    "brokerId": 0,
    "brokerIP1": "127.0.0.1",
    "brokerIP2": "127.0.0.1",  # the HA address it registers (Java's default: this host's outbound address)
    "brokerRole": "ASYNC_MASTER",
    "flushDiskType": "ASYNC_FLUSH",
    "mappedFileSizeCommitLog": 16 * 1024 * 1024,
    "mappedFileSizeConsumeQueue": 20 * 30_000,
    "autoCreateTopicEnable": True,
    "autoCreateSubscriptionGroup": True,
    "enablePropertyFilter": True,
    "deleteWhen": "04",
    "fileReservedTime": 48,
    # A test machine is often loaded: the broker's load shedding (send requests that waited over
    # 200 ms in its queue answered "[TIMEOUT_CLEAN_QUEUE]broker busy", a commitlog lock held over
    # 1 s answered "[PC_SYNCHRONIZED]broker busy") would fail sends the scenarios expect to succeed.
    "brokerFastFailureEnable": False,
    "osPageCacheBusyTimeOutMills": 10_000,
}


class _Launched(abc.ABC):
    """What the launcher starts (a cluster, a proxy): started by ``with``, stopped at its end whatever
    the end, and kept in ``_live`` from start to stop."""

    @abc.abstractmethod
    def start(self) -> Self: ...

    @abc.abstractmethod
    def stop(self, timeout: float = 30.0) -> None: ...

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


_live: weakref.WeakSet[_Launched] = weakref.WeakSet()
"""Clusters and proxies started and not yet stopped."""


@atexit.register
def _stop_leftovers() -> None:
    """Never leave JVMs behind when the interpreter exits without stop() (a crashed test run)."""
    for instance in list(_live):
        with contextlib.suppress(Exception):
            instance.stop(timeout=10.0)


class RealRocketMQ(_Launched):
    """A real name server and ``brokers`` real brokers of one version on free loopback ports.

    Arguments: ``version`` ("4.9" or "5", see ``resolve_version``); ``store_dir``: the
    storePathRootDir of the (first) broker, kept after stop (with several brokers each gets
    ``store_dir/<brokerName>``); ``broker_conf_overrides``: extra or replaced broker.conf keys for
    every broker; ``brokers``: how many masters (named broker-a, broker-b, ...) in cluster
    ``rmqtwin``; ``namesrv_port``/``broker_port``: fixed ports instead of free ones (further
    brokers use broker_port + 4*i); ``work_dir``: where homes and logs go (default a temp dir,
    removed by stop() unless ``keep_work_dir``); ``conf_files``: file name -> text written into
    every broker's ``$ROCKETMQ_HOME/conf/`` before it starts (``{"plain_acl.yml": ...}``).
    """

    def __init__(
        self,
        version: str | RocketMQVersion = "4.9",
        *,
        store_dir: str | os.PathLike[str] | None = None,
        broker_conf_overrides: Mapping[str, object] | None = None,
        brokers: int = 1,
        namesrv_port: int | None = None,
        broker_port: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        keep_work_dir: bool = False,
        namesrv_heap_mb: int = 128,
        broker_heap_mb: int = 384,
        start_timeout: float = 240.0,
        conf_files: Mapping[str, str] | None = None,
        namesrv_addr: str | None = None,
    ) -> None:
        if brokers < 0 or (brokers == 0 and namesrv_addr is not None):
            raise ValueError("brokers must be at least 1 (0: a name server alone)")
        self.version = resolve_version(version)
        self.broker_names = [f"broker-{chr(ord('a') + i)}" for i in range(brokers)]
        self._store_root = Path(store_dir).resolve() if store_dir is not None else None
        self.broker_conf_overrides = dict(broker_conf_overrides or {})
        self._namesrv_port_wanted = namesrv_port
        self._broker_port_wanted = broker_port
        self._work_dir_given = Path(work_dir).resolve() if work_dir is not None else None
        self.keep_work_dir = keep_work_dir or work_dir is not None
        self.namesrv_heap_mb = namesrv_heap_mb
        self.broker_heap_mb = broker_heap_mb
        self.start_timeout = start_timeout
        self.conf_files = dict(conf_files or {})
        self.work_dir: Path | None = None
        self.namesrv: JavaProcess | None = None
        self.brokers: list[JavaProcess] = []
        self.namesrv_port = 0
        self.external_namesrv = namesrv_addr
        """A name server already running (a twin's, say): none is started, the brokers register there."""
        self._started = False
        self.broker_ports: list[int] = []
        self.store_dirs: list[Path] = []
        self._lock = threading.Lock()
        self.last_probe_answer: tuple[int, str | None] | None = None

    # -- addresses ------------------------------------------------------------------------------

    @property
    def namesrv_addr(self) -> str:
        self._require_started()
        return self.external_namesrv or f"127.0.0.1:{self.namesrv_port}"

    @property
    def broker_addrs(self) -> list[str]:
        self._require_started()
        return [f"127.0.0.1:{port}" for port in self.broker_ports]

    @property
    def broker_addr(self) -> str:
        return self.broker_addrs[0]

    @property
    def store_dir(self) -> Path:
        self._require_started()
        return self.store_dirs[0]

    @property
    def running(self) -> bool:
        own = self.namesrv
        namesrv_alive = self.external_namesrv is not None or (own is not None and own.alive())
        return self._started and namesrv_alive and all(b.alive() for b in self.brokers)

    def _require_started(self) -> None:
        if not self._started:
            raise RealRocketMQError("RealRocketMQ is not started")

    # -- life cycle -----------------------------------------------------------------------------

    def start(self) -> RealRocketMQ:
        with self._lock:
            if self._started:
                return self
            lib = fetch(self.version)
            classpath = f"{lib}/*"
            prefix = f"rmqtwin-real-{self.version.line}-"
            self.work_dir = self._work_dir_given or Path(tempfile.mkdtemp(prefix=prefix))
            self.work_dir.mkdir(parents=True, exist_ok=True)
            _live.add(self)
            deadline = time.monotonic() + self.start_timeout
            try:
                self._started = True
                if self.external_namesrv is None:
                    self._start_namesrv(classpath, deadline)
                else:
                    self.namesrv_port = int(self.external_namesrv.rpartition(":")[2])
                self._start_brokers(classpath, deadline)
            except BaseException:
                self._started = False
                self._stop_processes(timeout=10.0)
                raise
        return self

    def _start_namesrv(self, classpath: str, deadline: float) -> None:
        assert self.work_dir is not None
        home = self.work_dir / "namesrv"
        prepare_home(home)
        self.namesrv_port = self._namesrv_port_wanted or free_port()
        conf = home / "namesrv.properties"
        conf.write_text(_format_properties({"listenPort": self.namesrv_port}))
        self.namesrv = start_java(
            "namesrv",
            home,
            classpath=classpath,
            main_class="org.apache.rocketmq.namesrv.NamesrvStartup",
            args=["-c", str(conf)],
            heap_mb=self.namesrv_heap_mb,
        )
        self._wait(lambda: self._cluster_info() is not None, deadline, "the name server to answer")

    def broker_conf(self, index: int) -> dict[str, object]:
        """broker.conf of broker ``index``: defaults, then ports/paths, then the overrides."""
        store = self.store_dirs[index]
        conf = dict(DEFAULT_BROKER_CONF)
        conf.update(
            brokerName=self.broker_names[index],
            namesrvAddr=self.external_namesrv or f"127.0.0.1:{self.namesrv_port}",
            listenPort=self.broker_ports[index],
            haListenPort=self.broker_ports[index] + 1,
            storePathRootDir=str(store),
            storePathCommitLog=str(store / "commitlog"),
        )
        conf.update(self.broker_conf_overrides)
        return conf

    def _start_brokers(self, classpath: str, deadline: float) -> None:
        assert self.work_dir is not None
        taken = {self.namesrv_port}
        for index, name in enumerate(self.broker_names):
            if self._broker_port_wanted:
                port = self._broker_port_wanted + 4 * index
            else:
                port = free_broker_port(taken)
            taken |= {port - 2, port - 1, port, port + 1}
            self.broker_ports.append(port)
            if self._store_root is None:
                store = self.work_dir / name / "store"
            elif len(self.broker_names) == 1:
                store = self._store_root
            else:
                store = self._store_root / name
            store.mkdir(parents=True, exist_ok=True)
            self.store_dirs.append(store)
        for index, name in enumerate(self.broker_names):
            home = prepare_home(self.work_dir / name)
            for filename, text in self.conf_files.items():
                (home / "conf" / filename).write_text(text, encoding="utf-8")
            conf_path = home / "broker.conf"
            conf_path.write_text(_format_properties(self.broker_conf(index)))
            self.brokers.append(
                start_java(
                    name,
                    home,
                    classpath=classpath,
                    main_class="org.apache.rocketmq.broker.BrokerStartup",
                    args=["-c", str(conf_path)],
                    heap_mb=self.broker_heap_mb,
                )
            )
        wanted = [f'"127.0.0.1:{port}"'.encode() for port in self.broker_ports]

        def registered() -> bool:
            body = self._cluster_info()
            return body is not None and all(addr in body for addr in wanted)

        self._wait(registered, deadline, "every broker to register with the name server")
        # Registered is not ready: a broker registers within a second of starting its store, while
        # StoreStatsService takes its first sample one second after it starts, and until then
        # GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus, clusterList) fails in getPutTps with
        # SYSTEM_ERROR "java.util.NoSuchElementException" (LinkedList.getLast of an empty list;
        # 4.9.7 and 5.5.0 alike).
        credentials = acl_probe_credentials(self.conf_files)
        for addr in self.broker_addrs:
            self.last_probe_answer = None
            self._wait(
                functools.partial(self._answers_runtime_info, addr, credentials),
                deadline,
                f"broker {addr} to answer GET_BROKER_RUNTIME_INFO with SUCCESS (its store stats sampled)",
                last=lambda: f"last answer (code, remark): {self.last_probe_answer}",
            )
        for broker in self.brokers:
            lower_busy_thread_priority(broker.process.pid)

    def _cluster_info(self) -> bytes | None:
        try:
            code, body = query_cluster_info(self.namesrv_addr, timeout=2.0)
        except (OSError, ValueError, struct.error):
            return None
        return body if code == 0 else None

    def _answers_runtime_info(self, broker_addr: str, credentials: tuple[str, str] | None) -> bool:
        try:
            code, remark, _ = probe(
                broker_addr, GET_BROKER_RUNTIME_INFO, timeout=2.0, credentials=credentials
            )
        except (OSError, ValueError, struct.error):
            return False
        self.last_probe_answer = (code, remark)
        return code == 0

    def _processes(self) -> list[JavaProcess]:
        return [*self.brokers, *([self.namesrv] if self.namesrv else [])]

    def _wait(
        self, ready: Callable[[], bool], deadline: float, what: str, last: Callable[[], str] | None = None
    ) -> None:
        while time.monotonic() < deadline:
            for proc in self._processes():
                if not proc.alive():
                    raise RealRocketMQError(
                        f"RocketMQ {self.version.server} {proc.name} exited with {proc.process.returncode} "
                        f"while waiting for {what}\n{self.log_tail()}"
                    )
            if ready():
                return
            time.sleep(0.2)
        raise RealRocketMQError(
            f"RocketMQ {self.version.server}: timed out after {self.start_timeout:.0f}s waiting for {what}\n"
            + (f"{last()}\n" if last is not None else "")
            + self.log_tail()
        )

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(proc.log_tail(lines) for proc in self._processes())

    def stop(self, timeout: float = 30.0, *, graceful: bool = True) -> None:
        """SIGTERM the brokers (they unregister and flush), then the name server; kill on timeout.

        ``graceful=False`` kills at once: quick (a graceful 5.x broker takes 10-20 s), for
        throw-away instances whose store nobody reads afterwards.
        """
        with self._lock:
            if graceful:
                self._stop_processes(timeout)
            else:
                for proc in self._processes():
                    if proc.alive():
                        with contextlib.suppress(ProcessLookupError):
                            proc.process.kill()
                    proc.wait_or_kill(10.0)
            _live.discard(self)
            self._started = False
            if self.work_dir is not None and not self.keep_work_dir:
                shutil.rmtree(self.work_dir, ignore_errors=True)

    def _stop_processes(self, timeout: float) -> None:
        for broker in self.brokers:
            broker.terminate()
        for broker in self.brokers:
            broker.wait_or_kill(timeout)
        if self.namesrv is not None:
            self.namesrv.terminate()
            self.namesrv.wait_or_kill(timeout)

    def describe(self) -> str:
        lines = [f"Apache RocketMQ {self.version.server} (line {self.version.line})"]
        lines.append(f"  namesrv   {self.namesrv_addr}")
        for name, addr, store in zip(self.broker_names, self.broker_addrs, self.store_dirs, strict=True):
            lines.append(f"  {name:<9} {addr}  store {store}")
        lines.append(f"  logs      {self.work_dir}")
        return "\n".join(lines)


class RealRocketMQProxy(_Launched):
    """The real ``rocketmq-proxy`` (cluster mode) in front of any name server and its cluster.

    The gRPC front most RocketMQ 5 applications connect to: ``ProxyStartup -pc rmq-proxy.json -pm
    cluster`` with ``namesrvAddr`` and ``rocketMQClusterName`` pointed at the cluster (a real one or
    the twin: the proxy is a client of the brokers over remoting). ``start()`` returns once the gRPC
    port accepts connections and the proxy's log says it started; ``grpc_endpoint`` is what a gRPC
    client's ``ClientConfiguration.setEndpoints`` takes. 5.5.0 busy-loops nowhere known, but its JVM
    runs at nice ``nice`` (a third JVM beside broker and client on a small machine).
    """

    def __init__(
        self,
        namesrv_addr: str,
        *,
        version: str | RocketMQVersion = "5",
        cluster_name: str = str(DEFAULT_BROKER_CONF["brokerClusterName"]),
        work_dir: str | os.PathLike[str] | None = None,
        heap_mb: int = 384,
        start_timeout: float = 180.0,
        config_overrides: Mapping[str, object] | None = None,
        nice: int = 5,
    ) -> None:
        self.version = resolve_version(version)
        self.namesrv_addr = namesrv_addr
        self.cluster_name = cluster_name
        self._work_dir_given = Path(work_dir).resolve() if work_dir is not None else None
        self.heap_mb = heap_mb
        self.start_timeout = start_timeout
        self.config_overrides = dict(config_overrides or {})
        self.nice = nice
        self.work_dir: Path | None = None
        self.process: JavaProcess | None = None
        self.grpc_port = 0
        self.remoting_port = 0

    @property
    def grpc_endpoint(self) -> str:
        if self.process is None:
            raise RealRocketMQError("the proxy is not started")
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.alive()

    def config(self) -> dict[str, object]:
        """rmq-proxy.json: cluster mode against the name server, loopback ports."""
        return {
            "rocketMQClusterName": self.cluster_name,
            "namesrvAddr": self.namesrv_addr,
            "proxyMode": "cluster",
            "grpcServerPort": self.grpc_port,
            "remotingListenPort": self.remoting_port,
            **self.config_overrides,
        }

    def start(self) -> RealRocketMQProxy:
        if self.process is not None:
            return self
        lib = fetch_proxy(self.version)
        self.work_dir = self._work_dir_given or Path(tempfile.mkdtemp(prefix="rmqtwin-proxy-"))
        home = prepare_home(self.work_dir / "proxy")
        self.grpc_port = free_port()
        self.remoting_port = free_port()
        while self.remoting_port == self.grpc_port:
            self.remoting_port = free_port()
        conf = home / "conf" / "rmq-proxy.json"
        conf.write_text(json.dumps(self.config(), indent=2))
        _live.add(self)
        self.process = start_java(
            "proxy",
            home,
            classpath=f"{lib}/*",
            main_class="org.apache.rocketmq.proxy.ProxyStartup",
            args=["-pc", str(conf), "-pm", "cluster"],
            heap_mb=self.heap_mb,
        )
        with contextlib.suppress(OSError):
            os.setpriority(os.PRIO_PROCESS, self.process.process.pid, self.nice)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if not self.process.alive():
                raise RealRocketMQError(
                    f"rocketmq-proxy {self.version.server} exited with {self.process.process.returncode}\n"
                    f"{self.log_tail()}"
                )
            if self._grpc_listening():
                return self
            time.sleep(0.2)
        self.stop()
        raise RealRocketMQError(
            f"rocketmq-proxy {self.version.server}: gRPC port {self.grpc_port} not open after "
            f"{self.start_timeout:.0f}s\n{self.log_tail()}"
        )

    def _grpc_listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.grpc_port), timeout=1.0):
                return True
        except OSError:
            return False

    def log_tail(self, lines: int = 40) -> str:
        if self.process is None:
            return ""
        parts = [self.process.log_tail(lines)]
        proxy_log = self.process.home / "logs" / "rocketmqlogs" / "proxy.log"
        if proxy_log.exists():
            parts += [f"--- proxy {proxy_log}", _tail_file(proxy_log, lines)]
        return "\n".join(parts)

    def stop(self, timeout: float = 15.0) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait_or_kill(timeout)
        _live.discard(self)
        if self.work_dir is not None and self._work_dir_given is None:
            shutil.rmtree(self.work_dir, ignore_errors=True)


def main_fetch(versions: list[str]) -> int:
    """Fetch each version's jars (and 5.x's rocketmq-proxy) and SOURCE_JARS; print where they are."""
    for name in versions:
        lib = fetch(name, quiet=True)
        print(f"RocketMQ {resolve_version(name).server}: {lib}", file=sys.stderr)
        if not resolve_version(name).line.startswith("4"):
            proxy = fetch_proxy(name, quiet=True)
            print(f"rocketmq-proxy {resolve_version(name).server}: {proxy}", file=sys.stderr)
    for artifact, version in SOURCE_JARS:
        print(f"sources: {fetch_sources(artifact, version)}", file=sys.stderr)
    return 0
