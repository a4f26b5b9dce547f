"""Coverage-guided fuzzing of the codec and the broker's request handling (atheris / libFuzzer).

Each input is one client connection's bytes to an in-process broker (``BrokerController`` on a
store in a temporary directory, a Twisted ``Clock``, an in-memory transport). Its first byte picks how
the rest is read:

- even: the raw byte stream, cut into frames by the codec (frame lengths, header marks, JSON and
  ROCKETMQ headers, bodies);
- odd: one well-framed request built from the bytes: a request code the broker serves, its header
  class's fields (by their Java names) with values drawn from the input (numbers at and past Java's
  limits, path-like names, empty, very long), the JSON or ROCKETMQ serialization, and a body.

A *finding* is an exception that escapes the protocol (Twisted would drop the connection without an
answer), or a handler failure other than a :class:`~rmqtwin.codec.errors.CodecError` (those stand for
the decoding exceptions Java throws at the same point, answered SYSTEM_ERROR as NettyRemotingAbstract
answers them; anything else is a twin bug whose answer no real broker gives), or a failed Deferred
answer. The fuzzer stops at the first one and writes the input as ``crash-*``.

The engine is in :mod:`rmqtwin.conformance.fuzz` (``python -m rmqtwin.conformance.fuzz``);
``replay(paths)`` feeds saved inputs through the same harness without it: the corpus in
``tests/fuzz_corpus`` is replayed by the test suite.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import tempfile
from collections.abc import Iterable
from typing import cast

from twisted.internet import defer
from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.logger import ILogObserver, LogEvent, globalLogPublisher

from rmqtwin.codec.codes import SerializeType
from rmqtwin.codec.command import create_request, decode_command, decode_command_steps, encode_command
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.frame import FrameDecoder
from rmqtwin.codec.headers import REQUEST_HEADERS, from_ext_fields, header_fields
from rmqtwin.fakes.broker.controller import BrokerController
from rmqtwin.fakes.config import BrokerConfig
from rmqtwin.fakes.server import RemotingProtocol
from rmqtwin.store_mirror.flush import TwistedFlushDriver
from rmqtwin.store_mirror.message_store import DefaultMessageStore, MessageStoreConfig

VALUES = (
    "",
    "0",
    "1",
    "-1",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775807",
    "9223372036854775808",
    "1.5",
    "true",
    "false",
    "null",
    "TBW102",
    "FuzzTopic",
    "%RETRY%FuzzGroup",
    "%DLQ%FuzzGroup",
    "FuzzGroup",
    "../../x",
    "/../../../tmp/x",
    "Topic\n",
    "a" * 300,
    "SCHEDULE_TOPIC_XXXX",
    "RMQ_SYS_TRANS_HALF_TOPIC",
    "127.0.0.1:10911",
    "a > 1",
    "*",
    "TAG",
    "SQL92",
    "\x01\x02",
    "\udcff",
    "UNIQ_KEY\x01k\x02WAIT\x01true\x02",
)


MAX_QUEUES = 1024
"""Topics with more queues are forgotten after each input (see ``Harness._forget_huge_topics``)."""
MAX_TABLE = 200
"""Topics or groups past which the harness starts a fresh broker (see ``Harness._renew_when_grown``)."""


class Finding(Exception):  # noqa: N818
    """What the harness reports: the input made the twin fail in a way no real broker does."""


class _Bytes:
    """Reads the input front to back; past its end, zeros."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def byte(self) -> int:
        value = self.data[self.pos] if self.pos < len(self.data) else 0
        self.pos += 1
        return value

    def text(self) -> str:
        choice = self.byte()
        if choice < 200:
            return VALUES[choice % len(VALUES)]
        size = self.byte() % 64
        raw = self.data[self.pos : self.pos + size]
        self.pos += size
        return raw.decode("utf-8", "replace")

    def rest(self) -> bytes:
        return self.data[self.pos :]


class Harness:
    """One broker for every input; a fresh connection per input."""

    def __init__(self, directory: str | None = None) -> None:
        # The broker persists its tables (fsync'd JSON) after many requests: on tmpfs that costs nothing.
        scratch = "/dev/shm" if os.path.isdir("/dev/shm") else None
        self.dir = directory or tempfile.mkdtemp(prefix="rmqtwin-fuzz-", dir=scratch)
        self._own_dir = directory is None
        self.clock = Clock()
        self.generation = 0
        """Brokers started so far after the first (:meth:`_renew_when_grown`)."""
        self.broker = _broker(self._store_dir(), self.clock)
        self.codes = sorted(self.broker.dispatcher.table)
        self.errors: list[str] = []
        self.inputs = 0
        self.observer = cast(ILogObserver, self._observe)
        globalLogPublisher.addObserver(self.observer)

    def close(self) -> None:
        globalLogPublisher.removeObserver(self.observer)
        self.broker.shutdown()
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _store_dir(self) -> str:
        return os.path.join(self.dir, str(self.generation))

    def _observe(self, event: LogEvent) -> None:
        failure = event.get("log_failure")
        if failure is not None and not isinstance(failure.value, CodecError):
            self.errors.append(f"{event.get('log_format')}\n{failure.getTraceback()}")

    def one_input(self, data: bytes) -> None:
        self.inputs += 1
        stream = data[1:] if data and not data[0] & 1 else self._request(data)
        transport = StringTransport(
            hostAddress=IPv4Address("TCP", "127.0.0.1", 10911),
            peerAddress=IPv4Address("TCP", "127.0.0.1", 40000 + self.inputs % 20000),
        )
        proto = RemotingProtocol(self.broker.dispatcher, self.clock)
        proto.makeConnection(transport)
        self.errors.clear()
        try:
            for start in range(0, len(stream), 4096):
                proto.dataReceived(stream[start : start + 4096])
            self.clock.advance(0)  # slices of large headers, answers that wait a turn
            if self.inputs % 512 == 0:
                self.clock.advance(1)  # the broker's timers: parked pulls, flushes, cleanups
        except Exception as exc:
            raise Finding(f"exception escaped the protocol: {exc!r}") from exc
        finally:
            proto.connectionLost(None)
            self._forget_huge_topics()
        if self.errors:
            raise Finding("handler failure:\n" + self.errors[0])
        self._renew_when_grown()

    def _renew_when_grown(self) -> None:
        """A fresh broker once the topic or group table passed :data:`MAX_TABLE` entries. Every group
        change persists the whole table and the admin answers list it (as ConfigManager and
        AdminBrokerProcessor do on a real broker), and the fuzzer's names are long and full of
        characters to escape: past a few hundred groups each later input was several times slower.
        AFL's persistent mode restarts its target every N inputs for the same reason. Inputs still see
        all the state earlier ones left, up to that point."""
        broker = self.broker
        if len(broker.topics.table) <= MAX_TABLE and len(broker.groups.table) <= MAX_TABLE:
            return
        broker.shutdown()
        shutil.rmtree(self._store_dir(), ignore_errors=True)
        self.generation += 1
        self.broker = _broker(self._store_dir(), self.clock)

    def _forget_huge_topics(self) -> None:
        """A topic made with 2^31 queues would turn every later request that walks a topic's queues
        (consume stats, topic stats, resets by time) into hours of work, on a real broker as on the twin
        (AdminBrokerProcessor loops over each queue id): the harness forgets such a topic after the input
        that made it, so the run goes on finding other things."""
        topics = self.broker.topics
        for name, config in list(topics.table.items()):
            if max(config.read_queue_nums, config.write_queue_nums) > MAX_QUEUES:
                topics.delete(name)

    def _request(self, data: bytes) -> bytes:
        reader = _Bytes(data[1:])
        wanted = reader.byte() << 8 | reader.byte()  # a served code as itself, anything else by index
        code = wanted if wanted in self.broker.dispatcher.table else self.codes[wanted % len(self.codes)]
        ext: dict[str, str] = {}
        header = REQUEST_HEADERS.get(code)
        names = [spec.wire for spec in header_fields(header)] if header is not None else []
        for name in names:
            if reader.byte() % 8:  # most fields present
                ext[name] = reader.text()
        for _ in range(reader.byte() % 3):
            ext[reader.text()] = reader.text()
        binary = reader.byte() & 1
        version = (409, 453)[reader.byte() & 1]
        command = create_request(code, ext, reader.rest() or None, opaque=1, version=version)
        if binary:
            command.serialize_type = SerializeType.ROCKETMQ
        return encode_command(command)


def codec_input(data: bytes) -> None:
    """The codec alone (thousands of inputs a second): the bytes as a stream cut into frames, each frame
    decoded at once and in slices (the two must agree), and its header fields read into the request
    header class of its code, leniently and strictly. Only :class:`CodecError` may come out."""
    decoder = FrameDecoder(1 << 20)
    try:
        frames = decoder.feed(data)
    except CodecError:
        return
    for frame in frames:
        try:
            command = decode_command(frame)
        except CodecError:
            continue
        steps = decode_command_steps(frame, 64)
        try:
            while True:
                next(steps)
        except StopIteration as done:
            stepped = done.value
        if (stepped.code, stepped.ext_fields, stepped.body) != (
            command.code,
            command.ext_fields,
            command.body,
        ):
            raise Finding(f"stepped decoding differs for code {command.code}")
        header = REQUEST_HEADERS.get(command.code)
        if header is not None:
            from_ext_fields(header, command.ext_fields, strict=False)
            with contextlib.suppress(CodecError):
                from_ext_fields(header, command.ext_fields)
        encode_command(command)


def _broker(directory: str, clock: Clock) -> BrokerController:
    config = BrokerConfig.from_properties(
        {"brokerName": "broker-fuzz", "brokerIP1": "127.0.0.1", "autoCreateTopicEnable": "true"}
    )
    store_dir = os.path.join(directory, "store")
    store = DefaultMessageStore(
        store_dir,
        MessageStoreConfig(
            mapped_file_size_commit_log=4 * 1024 * 1024,
            mapped_file_size_consume_queue=6000 * 20,
            message_delay_level=config.message_delay_level,
            max_message_size=config.max_message_size,
        ),
        flush=TwistedFlushDriver(clock, defer.maybeDeferred),
        now_ms=lambda: int(clock.seconds() * 1000),
    )
    broker = BrokerController(config, store_dir, clock, store=store)
    if not broker.load():
        raise RuntimeError("fuzz broker did not load")
    broker.start()
    return broker


def replay(paths: Iterable[str], directory: str | None = None) -> int:
    """Feed saved broker inputs through the harness; raises :class:`Finding` on the first failing one."""
    harness = Harness(directory)
    count = 0
    try:
        for path in paths:
            with open(path, "rb") as fh:
                data = fh.read()
            try:
                harness.one_input(data)
            except Finding as exc:
                raise Finding(f"{path}: {exc}") from exc
            count += 1
    finally:
        harness.close()
    return count


def seeds(directory: str) -> int:
    """Write one seed per served request code (well-formed, both serializations) into ``directory``."""
    harness = Harness()
    os.makedirs(directory, exist_ok=True)
    for index, code in enumerate(harness.codes):
        wanted = code
        while wanted > 0xFFFF or (wanted != code and wanted in harness.broker.dispatcher.table):
            wanted = index if wanted > 0xFFFF else wanted + len(harness.codes)  # reached by index
        for binary in (0, 1):
            seed = bytes([1]) + struct.pack(">H", wanted) + bytes([1] * 40) + bytes([0, binary, 1])
            with open(os.path.join(directory, f"seed-{code}-{binary}"), "wb") as fh:
                fh.write(seed)
    harness.close()
    return len(harness.codes) * 2
