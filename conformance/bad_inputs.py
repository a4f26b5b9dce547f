"""Bad and careless client input, sent the same way to rmqtwin and to real Apache RocketMQ.

Each :class:`Case` is raw bytes on one fresh connection (hand-made frames, HAProxy preambles,
malformed bodies and headers) and :func:`run_case` reports what came back: the answer's code and
remark (or none), and the connection's fate afterwards (``open``, ``fin``: closed gracefully,
``rst``: reset). :func:`run_suite` sends every case to one broker and checks after each that the
broker still answers on a new connection and that every message it acknowledged so far can still be
read back (the ledger). ``python -m rmqtwin.conformance.bad_inputs HOST:PORT`` prints the outcomes as
JSON lines, so the same list can be run against any broker by hand.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rmqtwin.codec.codes import CURRENT_VERSION_4, CURRENT_VERSION_5, RequestCode
from rmqtwin.codec.command import RemotingCommand, create_request, decode_command, encode_command
from rmqtwin.codec.frame import encode_frame

__all__ = [
    "DIFFERENCES",
    "NOT_SENT",
    "Case",
    "Outcome",
    "bad_inputs_markdown",
    "cases",
    "comparable",
    "run_suite",
]

CLIENT_VERSIONS = {"4": CURRENT_VERSION_4, "5": CURRENT_VERSION_5}
ANSWER_TIMEOUT = 5.0
QUICK_ANSWER = 0.3
"""How long a case waits for its answer before the next case goes; a slower answer is still awaited at the
end of the suite, up to ``ANSWER_TIMEOUT`` after the case was sent."""
FATE_WAIT = 0.5
SETTLE = 5.0
ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "conformance" / "bad_inputs.json"
DOCS_BAD_INPUTS = ROOT / "docs" / "bad-inputs.md"


@dataclass(frozen=True, slots=True)
class Case:
    """One input: the bytes a client sends on a fresh connection, and what it is about."""

    name: str
    about: str
    data: bytes
    expect_answer: bool = True


@dataclass(slots=True)
class Outcome:
    case: str
    code: int | None
    remark: str | None
    fate: str  # open | fin | rst
    extra: dict[str, str] = field(default_factory=dict)


DIFFERENCES: dict[tuple[str, str], str] = {
    # (line, case) -> why the twin deliberately answers otherwise; line "4.9", "5" or "*" (both).
    ("5", "header-invalid-utf8"): "5.5.0 (fastjson2) closes on invalid UTF-8 in a JSON header; the twin "
    "decodes it with U+FFFD and answers, as 4.9.7 (fastjson) does",
}
"""Where the twin's answer deliberately differs from the real broker's, with the reason."""

NOT_SENT: dict[tuple[str, str], str] = {
    ("4.9", "send-back-group-traversal-c4"): "real 4.9.7 auto-creates the group, answers 0, writes its DLQ "
    "queue outside its store and wedges its dispatcher (every later message unreadable): never sent to the "
    "shared cluster; the twin refuses (26) as 5.5.0 does",
    ("4.9", "send-back-group-traversal-c5"): "as send-back-group-traversal-c4",
}
"""Cases the side-by-side test does not send to a real line's shared cluster, with the reason."""

_JAVA_EXCEPTION = re.compile(r"^(?:[a-z][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error)\b.*", re.S)
_ADDRESS = re.compile(r"(\d+\.\d+\.\d+\.\d+):\d+")
_FAQ = re.compile(r"\s*\nSee \S+ for further details\.")


def comparable(outcome: Outcome, tag: str) -> tuple[int | None, str | None, str]:
    """What must agree between the twin and a real broker: code, remark without ports, the suite's
    topic name and FAQ link (a Java exception's text, which names JDK stack frames, compares as
    ``<java exception>``), and the connection's fate."""
    remark = outcome.remark
    if remark is not None:
        remark = _FAQ.sub("", _ADDRESS.sub(r"\1:PORT", remark.replace(f"BadInputs{tag}", "BadInputs")))
        remark = _JAVA_EXCEPTION.sub("<java exception>", remark)
    return outcome.code, remark, outcome.fate


# -- building requests -------------------------------------------------------------------------


def _request(
    code: int, ext: dict[str, str], body: bytes | None = None, *, client: str, opaque: int = 1
) -> bytes:
    cmd = create_request(code, ext, body, version=CLIENT_VERSIONS[client], opaque=opaque)
    return encode_command(cmd)


def send_ext(
    topic: str, *, queue_id: int = 0, group: str | None = "PG_bad_inputs", batch: bool = False
) -> dict[str, str]:
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "defaultTopicQueueNums": "4",
        "queueId": str(queue_id),
        "sysFlag": "0",
        "bornTimestamp": str(int(time.time() * 1000)),
        "flag": "0",
        "properties": "UNIQ_KEY\x01BADINPUT\x02WAIT\x01true\x02",
        "reconsumeTimes": "0",
        "unitMode": "false",
        "batch": "true" if batch else "false",
    }
    if group is not None:
        ext["producerGroup"] = group
    return ext


_V2_LETTERS = {
    "producerGroup": "a",
    "topic": "b",
    "defaultTopic": "c",
    "defaultTopicQueueNums": "d",
    "queueId": "e",
    "sysFlag": "f",
    "bornTimestamp": "g",
    "flag": "h",
    "properties": "i",
    "reconsumeTimes": "j",
    "unitMode": "k",
    "batch": "m",
}


def v2(ext: dict[str, str]) -> dict[str, str]:
    """A SEND_MESSAGE header in SEND_MESSAGE_V2 / SEND_BATCH_MESSAGE's one-letter names."""
    return {_V2_LETTERS[k]: v for k, v in ext.items()}


def pull_ext(
    topic: str, group: str, *, queue_id: int = 0, sql: str | None = None, tag: str | None = None
) -> dict[str, str]:
    ext = {
        "consumerGroup": group,
        "topic": topic,
        "queueId": str(queue_id),
        "queueOffset": "0",
        "maxMsgNums": "32",
        "sysFlag": "0" if sql is None and tag is None else "4",  # FLAG_SUBSCRIPTION
        "commitOffset": "0",
        "suspendTimeoutMillis": "0",
        "subVersion": str(int(time.time() * 1000)),
    }
    if sql is not None:
        ext["subscription"] = sql
        ext["expressionType"] = "SQL92"
    elif tag is not None:
        ext["subscription"] = tag
        ext["expressionType"] = "TAG"
    return ext


def batch_item(body: bytes, properties: str = "", *, properties_length: int | None = None) -> bytes:
    """One message of a batch body, as ``MessageDecoder.encodeMessage`` writes it."""
    props = properties.encode()
    plen = len(props) if properties_length is None else properties_length
    total = 4 + 4 + 4 + 4 + 4 + len(body) + 2 + len(props)
    return struct.pack(">iiiii", total, 0, 0, 0, len(body)) + body + struct.pack(">h", plen) + props


def _raw_json_frame(header: bytes, body: bytes | None = None) -> bytes:
    return encode_frame(header, body)


def _json_header(**fields: object) -> bytes:
    base: dict[str, object] = {
        "code": 10,
        "language": "JAVA",
        "version": CURRENT_VERSION_5,
        "opaque": 7,
        "flag": 0,
    }
    base.update(fields)
    return json.dumps(base).encode()


def _more_request_cases(topic: str, group: str, client: str) -> Iterator[Case]:
    """Careless requests: missing or unparsable fields, forbidden and unknown names, oversized bodies."""
    sm = RequestCode.SEND_MESSAGE
    no_topic = send_ext(topic)
    del no_topic["topic"]
    yield Case(
        f"send-missing-topic-c{client}",
        "SEND_MESSAGE without topic",
        _request(sm, no_topic, b"x", client=client),
    )
    yield Case(
        f"send-queue-not-number-c{client}",
        "SEND_MESSAGE with queueId 'abc'",
        _request(sm, send_ext(topic) | {"queueId": "abc"}, b"x", client=client),
    )
    yield Case(
        f"send-no-body-c{client}",
        "SEND_MESSAGE without a body",
        _request(sm, send_ext(topic), None, client=client),
    )
    yield Case(
        f"send-forbidden-topic-c{client}",
        "SEND_MESSAGE to SCHEDULE_TOPIC_XXXX",
        _request(sm, send_ext("SCHEDULE_TOPIC_XXXX"), b"x", client=client),
    )
    yield Case(
        f"send-retry-topic-unknown-group-c{client}",
        "SEND_MESSAGE to %RETRY% of a group that does not exist",
        _request(sm, send_ext("%RETRY%CG_never_created_bad_inputs"), b"x", client=client),
    )
    yield Case(
        f"send-body-over-max-c{client}",
        "SEND_MESSAGE with a body of 4 MiB + 1",
        _request(sm, send_ext(topic), bytes(4 * 1024 * 1024 + 1), client=client),
    )
    yield Case(f"unknown-code-c{client}", "request code 9999", _request(9999, {}, client=client))
    no_group = pull_ext(topic, group)
    del no_group["consumerGroup"]
    yield Case(
        f"pull-missing-group-c{client}",
        "PULL_MESSAGE without consumerGroup",
        _request(RequestCode.PULL_MESSAGE, no_group, client=client),
    )
    yield Case(
        f"pull-unknown-topic-c{client}",
        "PULL_MESSAGE from a topic that does not exist",
        _request(RequestCode.PULL_MESSAGE, pull_ext("NoSuchTopic_bad_inputs", group), client=client),
    )
    yield Case(
        f"query-offset-unknown-c{client}",
        "QUERY_CONSUMER_OFFSET of a group that never committed",
        _request(
            RequestCode.QUERY_CONSUMER_OFFSET,
            {"consumerGroup": "CG_never_committed_bad_inputs", "topic": topic, "queueId": "0"},
            client=client,
        ),
    )
    for name, what, offset_group, offset_topic in (
        ("group", "a group the broker does not have", "CG_no_offsets_bad_inputs", topic),
        ("topic", "a topic the broker does not have", group, "NoSuchTopic_bad_inputs"),
    ):
        yield Case(
            f"update-offset-unknown-{name}-c{client}",
            f"UPDATE_CONSUMER_OFFSET for {what} (5.5.0 refuses, 4.9.7 stores it)",
            _request(
                RequestCode.UPDATE_CONSUMER_OFFSET,
                {"consumerGroup": offset_group, "topic": offset_topic, "queueId": "0", "commitOffset": "1"},
                client=client,
            ),
        )
    yield Case(
        f"heartbeat-garbage-c{client}",
        "HEART_BEAT with a body that is not JSON",
        _request(RequestCode.HEART_BEAT, {}, b"\x00\x01garbage{", client=client),
    )
    yield Case(
        f"heartbeat-no-body-c{client}",
        "HEART_BEAT without a body",
        _request(RequestCode.HEART_BEAT, {}, client=client),
    )
    for name, what, body in (
        ("string", "a JSON string for a body", b'"heartbeat"'),
        ("array", "a JSON array for a body", b"[1,2]"),
        ("null-consumer", "a null consumer", b'{"clientID":"c","consumerDataSet":[null]}'),
        ("consumer-string", "a consumer that is a string", b'{"clientID":"c","consumerDataSet":["x"]}'),
        ("no-group", "a consumer without a group name", b'{"clientID":"c","consumerDataSet":[{}]}'),
        (
            "no-topic",
            "a subscription without a topic",
            b'{"clientID":"c","consumerDataSet":[{"groupName":"CG_bad_inputs_hb","subscriptionDataSet":[{}]}]}',
        ),
        ("producer-no-group", "a producer without a group name", b'{"clientID":"c","producerDataSet":[{}]}'),
    ):
        yield Case(
            f"heartbeat-{name}-c{client}",
            f"HEART_BEAT with {what} (fuzz finding)",
            _request(RequestCode.HEART_BEAT, {}, body, client=client),
        )
    yield Case(
        f"consumer-list-unknown-group-c{client}",
        "GET_CONSUMER_LIST_BY_GROUP of a group nobody joined",
        _request(
            RequestCode.GET_CONSUMER_LIST_BY_GROUP, {"consumerGroup": "CG_nobody_bad_inputs"}, client=client
        ),
    )
    yield Case(
        f"view-message-bad-offset-c{client}",
        "VIEW_MESSAGE_BY_ID at commit-log offset 2^40",
        _request(RequestCode.VIEW_MESSAGE_BY_ID, {"offset": str(1 << 40)}, client=client),
    )
    yield from _fuzz_found_cases(group, client)


def _fuzz_found_cases(group: str, client: str) -> Iterator[Case]:
    """What the broker fuzz run once found the twin mishandling (tests/fuzz_corpus/found), side by side."""
    for label, bad in [("nul", "a\x00b"), ("dot-dot", ".."), ("dot", ".")]:
        yield Case(
            f"earliest-time-topic-{label}-c{client}",
            f"GET_EARLIEST_MSG_STORETIME of topic {bad!r}",
            _request(RequestCode.GET_EARLIEST_MSG_STORETIME, {"topic": bad, "queueId": "0"}, client=client),
        )
        yield Case(
            f"query-offset-topic-{label}-c{client}",
            f"QUERY_CONSUMER_OFFSET of topic {bad!r}",
            _request(
                RequestCode.QUERY_CONSUMER_OFFSET,
                {"consumerGroup": group, "topic": bad, "queueId": "0"},
                client=client,
            ),
        )
    yield Case(
        f"update-broker-config-not-utf8-c{client}",
        "UPDATE_BROKER_CONFIG with a body that is not UTF-8 (an unknown key)",
        _request(RequestCode.UPDATE_BROKER_CONFIG, {}, b"rmqtwinBadInput=\xbb\xbb\xff", client=client),
    )


def _binary_header(
    code: int, *, remark_len: int = 0, remark: bytes = b"", ext: bytes = b"", ext_len: int | None = None
) -> bytes:
    """A ROCKETMQ (binary) header, lengths as given (a lying length makes it malformed)."""
    return (
        struct.pack(">hbhii", code, 0, CURRENT_VERSION_5, 7, 0)
        + struct.pack(">i", remark_len)
        + remark
        + struct.pack(">i", len(ext) if ext_len is None else ext_len)
        + ext
    )


def _frame(header: bytes, serialize_type: int = 0, *, header_length: int | None = None) -> bytes:
    """A frame whose header-length word may lie about the header."""
    hl = len(header) if header_length is None else header_length
    return struct.pack(">ii", 4 + len(header), (serialize_type << 24) | hl) + header


def _header_and_frame_cases() -> Iterator[Case]:
    """Hand-made JSON and binary headers and frames a client library would never send."""
    cfg = RequestCode.GET_BROKER_CONFIG
    json_cases: list[tuple[str, str, bytes]] = [
        ("header-opaque-string", 'JSON header with opaque "7"', _json_header(code=cfg, opaque="7")),
        ("header-code-string", 'JSON header with code "26"', _json_header(code=str(int(cfg)))),
        ("header-code-negative", "JSON header with code -5", _json_header(code=-5)),
        (
            "header-language-unknown",
            "JSON header with language COBOL",
            _json_header(code=cfg, language="COBOL"),
        ),
        (
            "header-no-version",
            "JSON header without version",
            json.dumps({"code": int(cfg), "opaque": 7}).encode(),
        ),
        ("header-extfields-array", "JSON header with extFields []", _json_header(code=cfg, extFields=[])),
        (
            "header-extfields-number",
            "JSON header with an extFields number value",
            _json_header(
                code=RequestCode.QUERY_CONSUMER_OFFSET,
                extFields={"consumerGroup": "g", "topic": "t", "queueId": 0},
            ),
        ),
        ("header-flag-response", "JSON header with the response flag", _json_header(code=cfg, flag=1)),
        ("header-flag-oneway", "JSON header with the oneway flag", _json_header(code=cfg, flag=2)),
        ("header-json-array", "JSON header []", b"[]"),
        ("header-json-null", "JSON header null", b"null"),
        ("header-trailing-garbage", "JSON header followed by garbage", _json_header(code=cfg) + b"xyz"),
        (
            "header-deep-nesting",
            "JSON header nested 5,000 deep",
            _json_header(code=cfg).replace(b'"flag"', b'"x": ' + b"[" * 5000 + b"]" * 5000 + b', "flag"'),
        ),
    ]
    for name, about, header in json_cases:
        yield Case(name, about, _raw_json_frame(header))
    good_ext = b""
    yield Case(
        "binary-control",
        "ROCKETMQ (binary) header, GET_BROKER_CONFIG",
        _frame(_binary_header(cfg, ext=good_ext), 1),
    )
    yield Case("binary-truncated", "ROCKETMQ header of 10 bytes", _frame(_binary_header(cfg)[:10], 1))
    yield Case(
        "binary-remark-overrun",
        "ROCKETMQ header, remark length past the header",
        _frame(_binary_header(cfg, remark_len=1000), 1),
    )
    yield Case(
        "binary-ext-overrun",
        "ROCKETMQ header, extFields length past the header",
        _frame(_binary_header(cfg, ext_len=1000), 1),
    )
    yield Case("serialize-type-unknown", "serialize type 2", _frame(_json_header(code=cfg), 2))
    yield Case(
        "header-length-over-frame",
        "header length past the frame",
        _frame(_json_header(code=cfg), header_length=5000),
    )
    yield Case("frame-length-zero", "frame length 0", struct.pack(">i", 0))
    yield Case("frame-length-over-max", "frame length 2^31-1 announced", struct.pack(">ii", 0x7FFFFFFF, 26))
    yield Case("half-frame", "10 bytes of a 100-byte frame, then silence", struct.pack(">i", 100) + bytes(10))
    yield Case(
        "proxy-v1-unknown",
        "PROXY UNKNOWN preamble, then GET_BROKER_CONFIG",
        b"PROXY UNKNOWN\r\n" + _request(cfg, {}, client="5", opaque=9),
    )


def cases(topic: str, group: str) -> Iterator[Case]:
    """Every bad input, for a broker where ``topic`` exists (created by the suite's first send)."""
    for client in ("4", "5"):
        sm = RequestCode.SEND_MESSAGE
        yield Case(
            f"send-no-producer-group-c{client}",
            "SEND_MESSAGE without producerGroup",
            _request(sm, send_ext(topic, group=None), b"x", client=client),
        )
        for label, bad in [
            ("newline", topic + "\n"),
            ("illegal-chars", "bad topic!"),
            ("len-128", "T" * 128),
            ("len-300", "T" * 300),
            ("empty", ""),
            ("traversal", "../../x"),
        ]:
            yield Case(
                f"send-topic-{label}-c{client}",
                f"SEND_MESSAGE to topic {bad!r}",
                _request(sm, send_ext(bad), b"x", client=client),
            )
        for qid in (999, -1):
            yield Case(
                f"send-queue-{qid}-c{client}",
                f"SEND_MESSAGE to queueId {qid}",
                _request(sm, send_ext(topic, queue_id=qid), b"x", client=client),
            )
            yield Case(
                f"pull-queue-{qid}-c{client}",
                f"PULL_MESSAGE from queueId {qid}",
                _request(RequestCode.PULL_MESSAGE, pull_ext(topic, group, queue_id=qid), client=client),
            )
        yield Case(
            f"create-topic-traversal-c{client}",
            "UPDATE_AND_CREATE_TOPIC ../evil",
            _request(
                RequestCode.UPDATE_AND_CREATE_TOPIC,
                {
                    "topic": "../evil",
                    "defaultTopic": "TBW102",
                    "readQueueNums": "1",
                    "writeQueueNums": "1",
                    "perm": "6",
                    "topicFilterType": "SINGLE_TAG",
                    "topicSysFlag": "0",
                    "order": "false",
                },
                client=client,
            ),
        )
        yield Case(
            f"send-back-group-traversal-c{client}",
            "CONSUMER_SEND_MSG_BACK, group /../../../../tmp/x",
            _request(
                RequestCode.CONSUMER_SEND_MSG_BACK,
                {
                    "offset": "0",
                    "group": "/../../../../tmp/rmqtwin-bad-input/x",
                    "delayLevel": "-1",
                    "originMsgId": "0A",
                    "originTopic": topic,
                    "unitMode": "false",
                    "maxReconsumeTimes": "16",
                },
                client=client,
            ),
        )
        yield Case(
            f"pull-sql92-unparsable-c{client}",
            "PULL_MESSAGE with SQL92 'a >'",
            _request(RequestCode.PULL_MESSAGE, pull_ext(topic, group, sql="a >"), client=client),
        )
        yield from _more_request_cases(topic, group, client)
        bodies = {
            "random": os.urandom(0) + bytes(range(7, 71)),
            "truncated": batch_item(b"hello")[:-3],
            "huge-item": struct.pack(">i", 0x7FFFFFF0) + bytes(40),
            "negative-props": batch_item(b"hello", "a\x01b\x02", properties_length=-1),
            "empty": b"",
        }
        for label, body in bodies.items():
            yield Case(
                f"batch-{label}-c{client}",
                f"SEND_BATCH_MESSAGE, body {label}",
                _request(
                    RequestCode.SEND_BATCH_MESSAGE, v2(send_ext(topic, batch=True)), body, client=client
                ),
            )
    ok = _request(RequestCode.GET_BROKER_CONFIG, {}, client="5", opaque=9)
    yield Case(
        "header-opaque-float",
        "JSON header with opaque 1.5",
        _raw_json_frame(_json_header(code=26, opaque=1.5)),
    )
    yield Case("header-code-true", "JSON header with code true", _raw_json_frame(_json_header(code=True)))
    yield Case("header-empty", "empty JSON header", _raw_json_frame(b""))
    yield Case("header-empty-object", "JSON header {}", _raw_json_frame(b"{}"))
    yield Case(
        "header-invalid-utf8",
        "JSON header with invalid UTF-8 in remark",
        _raw_json_frame(_json_header(code=26).replace(b'"flag"', b'"remark": "\xff\xfe", "flag"')),
    )
    yield from _header_and_frame_cases()
    yield Case(
        "frame-negative-length", "frame length -1", struct.pack(">i", -1) + bytes(8), expect_answer=False
    )
    yield Case(
        "proxy-v1",
        "HAProxy PROXY v1 preamble, then GET_BROKER_CONFIG",
        b"PROXY TCP4 10.1.2.3 10.1.2.4 5555 10911\r\n" + ok,
    )
    preamble = b"\r\n\r\n\x00\r\nQUIT\n" + bytes([0x21, 0x11]) + struct.pack(">H", 12)
    preamble += socket.inet_aton("10.1.2.3") + socket.inet_aton("10.1.2.4") + struct.pack(">HH", 5555, 10911)
    yield Case("proxy-v2", "HAProxy PROXY v2 preamble, then GET_BROKER_CONFIG", preamble + ok)


# -- sending -------------------------------------------------------------------------------------


def _connect(addr: str) -> socket.socket:
    host, port = addr.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=ANSWER_TIMEOUT)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


class _Reader:
    """Frames from one socket, read with deadlines; bytes read before a timeout are kept."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = bytearray()
        self.eof: str | None = None  # "fin" or "rst" once the peer closed

    def frame(self, deadline: float) -> bytes | None:
        """The next frame, or ``None`` at the deadline or when the peer closed first."""
        while True:
            if len(self.buf) >= 4:
                (length,) = struct.unpack_from(">i", self.buf)
                if 0 <= length <= len(self.buf) - 4:
                    frame = bytes(self.buf[4 : 4 + length])
                    del self.buf[: 4 + length]
                    return frame
            if self.eof is not None or not self._fill(deadline - time.monotonic()):
                return None

    def _fill(self, wait: float) -> bool:
        if wait <= 0:
            return False
        self.sock.settimeout(wait)
        try:
            chunk = self.sock.recv(1 << 16)
        except TimeoutError:
            return False
        except OSError:
            self.eof = "rst"
            return False
        if not chunk:
            self.eof = "fin"
            return False
        self.buf += chunk
        return True

    def fate(self) -> str:
        """``open``, ``fin`` or ``rst``, without waiting (call after the suite's one fate wait)."""
        while self.eof is None and self._fill(0.001):
            pass
        return self.eof or "open"


class Channel:
    """One well-behaved client connection: requests answered in turn, matched by opaque."""

    def __init__(self, addr: str) -> None:
        self.addr = addr
        self.reader = _Reader(_connect(addr))
        self._opaque = itertools.count(100)

    def call(self, code: int, ext: dict[str, str], body: bytes | None = None) -> RemotingCommand:
        opaque = next(self._opaque)
        self.reader.sock.sendall(_request(code, ext, body, client="5", opaque=opaque))
        deadline = time.monotonic() + ANSWER_TIMEOUT
        while True:
            frame = self.reader.frame(deadline)
            if frame is None:
                raise ConnectionError(
                    f"{self.addr} did not answer code {code} ({self.reader.eof or 'timeout'})"
                )
            answer = decode_command(frame)
            if answer.opaque == opaque:
                return answer

    def close(self) -> None:
        self.reader.sock.close()


class Ledger:
    """Messages a broker acknowledged on one topic's queue 0, checked by pulling them back; the
    ledger's own connection is reopened if it ever drops (the broker survived if that works)."""

    def __init__(self, addr: str, topic: str, group: str) -> None:
        self.addr, self.topic, self.group = addr, topic, group
        self.acked: list[int] = []
        self.channel = Channel(addr)

    def _call(self, code: int, ext: dict[str, str], body: bytes | None = None) -> RemotingCommand:
        try:
            return self.channel.call(code, ext, body)
        except OSError:
            self.channel.close()
            self.channel = Channel(self.addr)
            return self.channel.call(code, ext, body)

    def send(self) -> None:
        answer = self._call(RequestCode.SEND_MESSAGE, send_ext(self.topic), b"ledger")
        if answer.code != 0:
            raise AssertionError(f"ledger send answered {answer.code} {answer.remark!r}")
        self.acked.append(int(answer.ext("queueOffset") or "-1"))

    def check(self) -> list[int]:
        """Offsets acknowledged but not readable within ``SETTLE`` (a real broker makes a message
        pullable after its dispatch thread caught up, milliseconds to a second on a loaded machine)."""
        deadline = time.monotonic() + SETTLE
        while True:
            lost = self._unreadable()
            if not lost or time.monotonic() >= deadline:
                return lost
            time.sleep(0.05)

    def _unreadable(self) -> list[int]:
        """Pulls from 0 until the queue gives nothing more (a broker hands at most 32 messages a pull)."""
        offset = 0
        while True:
            ext = pull_ext(self.topic, self.group, tag="*")
            ext["queueOffset"] = str(offset)
            answer = self._call(RequestCode.PULL_MESSAGE, ext)
            if answer.code != 0:  # FOUND
                break
            offset = int(answer.ext("nextBeginOffset") or "0")
        return [o for o in self.acked if o >= offset]

    def close(self) -> None:
        self.channel.close()


def proxied_client_addrs(addr: str, group: str) -> list[str]:
    """The producer addresses a broker lists after a heartbeat sent behind an HAProxy PROXY v1 preamble
    naming 10.1.2.3:5555 (5.x takes the client's address from it, 4.9.x closes the connection)."""
    heartbeat = json.dumps(
        {"clientID": f"proxied@{group}", "producerDataSet": [{"groupName": group}], "consumerDataSet": []}
    ).encode()
    proxied = _Reader(_connect(addr))
    try:
        preamble = b"PROXY TCP4 10.1.2.3 10.1.2.4 5555 10911\r\n"
        proxied.sock.sendall(preamble + _request(RequestCode.HEART_BEAT, {}, heartbeat, client="5", opaque=5))
        if proxied.frame(time.monotonic() + ANSWER_TIMEOUT) is None:
            return []
        listing = Channel(addr)
        try:
            answer = listing.call(RequestCode.GET_PRODUCER_CONNECTION_LIST, {"producerGroup": group})
        finally:
            listing.close()
        if answer.code != 0 or not answer.body:
            return []
        connections = json.loads(answer.body).get("connectionSet") or []
        return sorted(str(c.get("clientAddr")) for c in connections)
    finally:
        proxied.sock.close()


def run_suite(
    addr: str,
    *,
    tag: str,
    skip: Mapping[str, str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[Outcome]:
    """Every case against the broker at ``addr``, each on a connection of its own; after each case a
    send on the ledger's connection is acknowledged (the broker survived) and nothing acknowledged so
    far is lost. An answer slower than ``QUICK_ANSWER`` is awaited at the end, and the connections'
    fates are read after one shared wait (``FATE_WAIT``), so the suite costs seconds, not a wait per
    case. ``skip`` maps case names not to send to the reason (recorded as the outcome)."""
    skip = skip or {}
    topic, group = f"BadInputs{tag}", f"CG_BadInputs{tag}"
    ledger = Ledger(addr, topic, group)
    ledger.send()  # creates the topic (auto-create)
    outcomes: list[Outcome] = []
    readers: list[_Reader | None] = []
    deadlines: list[float] = []
    try:
        for case in cases(topic, group):
            if case.name in skip:
                outcomes.append(Outcome(case.name, None, f"not sent: {skip[case.name]}", "not sent"))
                readers.append(None)
                deadlines.append(0.0)
                continue
            reader = _Reader(_connect(addr))
            try:
                reader.sock.sendall(case.data)
            except OSError:
                reader.eof = "rst"
            frame = reader.frame(time.monotonic() + QUICK_ANSWER)
            outcome = Outcome(case.name, None, None, "")
            if frame is not None:
                answer = decode_command(frame)
                outcome.code, outcome.remark = answer.code, answer.remark
            try:
                ledger.send()
                survived = "yes"
            except (OSError, AssertionError) as exc:
                survived = f"no: {exc}"
            lost = ledger.check()
            outcome.extra = {"survived": survived, "lost": ",".join(map(str, lost))}
            outcomes.append(outcome)
            readers.append(reader)
            deadlines.append(time.monotonic() + ANSWER_TIMEOUT - QUICK_ANSWER if frame is None else 0.0)
            if progress is not None:
                progress(f"{case.name}: {outcome.code} survived={survived} lost={lost}")
        for outcome, late, deadline in zip(outcomes, readers, deadlines, strict=True):
            if late is not None and outcome.code is None and late.eof is None:
                # An answer that came while later cases ran is already there: read it even past the deadline.
                frame = late.frame(max(deadline, time.monotonic() + 0.05))
                if frame is not None:
                    answer = decode_command(frame)
                    outcome.code, outcome.remark = answer.code, answer.remark
        time.sleep(FATE_WAIT)
        for outcome, sent in zip(outcomes, readers, strict=True):
            if sent is not None:
                outcome.fate = sent.fate()
        lost = ledger.check()
        if lost:
            outcomes[-1].extra["lost"] = ",".join(map(str, lost))
    finally:
        ledger.close()
        for opened in readers:
            if opened is not None:
                opened.sock.close()
    return outcomes


# -- the record and its table --------------------------------------------------------------------

LINES = {"4.9": ("4.9", "4.9.7"), "5": ("5.5", "5.5.0")}
"""Real line -> (the twin's ``--rocketmq-version``, the real release)."""


def record_entry(outcome: Outcome, tag: str) -> dict[str, object]:
    """An outcome as the record keeps it: comparable across runs (no ports, no run tag)."""
    code, remark, fate = comparable(outcome, tag)
    return {
        "code": code,
        "remark": remark,
        "fate": fate,
        "survived": outcome.extra.get("survived", "yes"),
        "lost": outcome.extra.get("lost", ""),
    }


def load_record() -> dict[str, dict[str, dict[str, dict[str, object]]]]:
    """``RECORD``: line -> ``twin``/``real`` -> case -> entry."""
    if not RECORD.exists():
        return {}
    data: dict[str, dict[str, dict[str, dict[str, object]]]] = json.loads(RECORD.read_text(encoding="utf-8"))
    return data


def save_record(line: str, twin: dict[str, dict[str, object]], real: dict[str, dict[str, object]]) -> None:
    record = load_record()
    record[line] = {"twin": twin, "real": real}
    RECORD.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    DOCS_BAD_INPUTS.write_text(bad_inputs_markdown(), encoding="utf-8")


def differs(line: str, case: str) -> str | None:
    """Why the twin deliberately answers ``case`` otherwise than real ``line`` does, if it does."""
    return DIFFERENCES.get((line, case)) or DIFFERENCES.get(("*", case)) or NOT_SENT.get((line, case))


def _cell(entry: dict[str, object] | None) -> str:
    if entry is None:
        return "(not recorded)"
    if entry["fate"] == "not sent":
        return "not sent"
    remark = str(entry["remark"] or "").replace("\n", " ").replace("|", "\\|")
    remark = remark if len(remark) <= 60 else remark[:57] + "..."
    cell = f"{entry['code'] if entry['code'] is not None else '-'} {entry['fate']}"
    cell += f" `{remark}`" if remark else ""
    if entry.get("survived", "yes") != "yes":
        cell += " **died**"
    return cell + (f" **lost {entry['lost']}**" if entry.get("lost") else "")


def bad_inputs_markdown() -> str:
    """docs/bad-inputs.md from ``RECORD`` (written by the real side-by-side test) and ``DIFFERENCES``."""
    record = load_record()
    names = [c for c in cases("BadInputs", "CG_BadInputs")]
    columns = [(line, side) for line in LINES for side in ("twin", "real")]
    heads = [
        f"twin {LINES[line][0]}" if side == "twin" else f"real {LINES[line][1]}" for line, side in columns
    ]
    out = [
        "# Bad input: rmqtwin beside real Apache RocketMQ 4.9.7 and 5.5.0",
        "",
        "Generated by `python -m rmqtwin.conformance.bad_inputs docs` from `conformance/bad_inputs.json`,",
        "which `tests/conformance/test_bad_inputs.py` (part of `make test`) checks against a live run: each",
        "case of `conformance/bad_inputs.py` is sent on a connection of its own to",
        "`rmqtwin serve --rocketmq-version 4.9` / `5.5` and to the shared real 4.9.7 / 5.5.0 cluster of the",
        "launcher (`RMQTWIN_BAD_INPUTS_RECORD=1` rewrites the record and this page from that run). A cell",
        "is the answer's code (`-`: none), the connection's fate afterwards (`open`, `fin`: closed",
        "gracefully, `rst`: reset) and the remark (ports, the run's topic suffix and FAQ links removed,",
        "Java exception texts shown as `<java exception>`, cut at 60 characters). After every case one",
        "more send is acknowledged on a separate connection (**died** if not) and every message",
        "acknowledged so far is pulled back (**lost** lists the queue offsets no longer served).",
        "Suffix `-c4` / `-c5` is the client version in the request header (409 / 513): both real lines",
        "answer alike whatever it is, and so does the twin.",
        "",
        "| case | input | " + " | ".join(heads) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for case in names:
        cells = [_cell(record.get(line, {}).get(side, {}).get(case.name)) for line, side in columns]
        mark = "" if not any(differs(line, case.name) for line in LINES) else " (†)"
        about = case.about if len(case.about) <= 60 else case.about[:57] + "..."
        out.append(f"| {case.name}{mark} | {about.replace('|', '/')} | " + " | ".join(cells) + " |")
    out += ["", "## Where the twin deliberately differs (†)", ""]
    for (line, name), why in sorted({**DIFFERENCES, **NOT_SENT}.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        which = "both lines" if line == "*" else f"real {LINES[line][1]}"
        out.append(f"- `{name}` ({which}): {why}")
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    """``docs`` rewrites docs/bad-inputs.md from the record; ``HOST:PORT [TAG]`` runs the suite against a
    running broker; ``real-4.9`` / ``real-5`` starts a real broker of that line from the launcher first."""
    if argv and argv[0] == "docs":
        DOCS_BAD_INPUTS.write_text(bad_inputs_markdown(), encoding="utf-8")
        return 0
    target = argv[0]
    tag = argv[1] if len(argv) > 1 else str(int(time.time()))

    def report(addr: str, skip: Mapping[str, str] | None = None) -> None:
        progress = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
        for outcome in run_suite(addr, tag=tag, skip=skip, progress=progress):
            print(json.dumps(asdict(outcome)), flush=True)

    if target.startswith("real-"):
        from rmqtwin.conformance.launcher import RealRocketMQ

        line = target.removeprefix("real-")
        with RealRocketMQ(line) as rmq:
            report(rmq.broker_addr, {c: why for (ln, c), why in NOT_SENT.items() if ln == line})
    else:
        report(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
