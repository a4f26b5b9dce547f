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

import json
import os
import re
import socket
import struct
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from rmqtwin.codec.codes import CURRENT_VERSION_4, CURRENT_VERSION_5, RequestCode
from rmqtwin.codec.command import create_request, decode_command, encode_command
from rmqtwin.codec.frame import encode_frame

__all__ = ["DIFFERENCES", "Case", "Outcome", "cases", "comparable", "run_case", "run_suite", "table"]

CLIENT_VERSIONS = {"4": CURRENT_VERSION_4, "5": CURRENT_VERSION_5}
ANSWER_TIMEOUT = 5.0
FATE_WAIT = 0.5


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
    ("4.9", "send-back-group-traversal-c4"): "4.9.7 auto-creates group /../../x, answers 0, "
    "writes its DLQ queue outside the store and wedges its dispatcher (later messages unreadable); "
    "the twin refuses (26) as 5.5.0",
    ("4.9", "send-back-group-traversal-c5"): "as send-back-group-traversal-c4",
    (
        "*",
        "header-opaque-float",
    ): "fastjson truncates opaque 1.5 to 1 and answers; the twin's codec refuses a "
    "non-integer opaque and closes the connection (FIN)",
    ("*", "header-code-true"): "fastjson reads code true as 1 (REQUEST_CODE_NOT_SUPPORTED); the twin's codec "
    "refuses a non-integer code and closes (FIN)",
    (
        "5",
        "header-empty",
    ): "5.5.0 (fastjson2) leaves an empty JSON header unanswered on an open connection; the "
    "twin closes it, as 4.9.7 does",
    (
        "5",
        "header-empty-object",
    ): "5.5.0 leaves a {} header unanswered; the twin answers code 0 unsupported, as 4.9.7",
    (
        "5",
        "header-invalid-utf8",
    ): "5.5.0 (fastjson2) closes on invalid UTF-8 in a JSON header; the twin decodes "
    "it with U+FFFD and answers, as 4.9.7 (fastjson) does",
    (
        "5",
        "proxy-v1",
    ): "5.x accepts an HAProxy PROXY preamble; the twin does not model it yet and closes (FIN), "
    "as 4.9.7 does",
    ("5", "proxy-v2"): "as proxy-v1",
}
"""Where the twin's answer deliberately differs from the real broker's, with the reason."""

_JAVA_EXCEPTION = re.compile(r"^java\.[\w.$]+(Exception|Error)\b.*", re.S)
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


def _read_frame(sock: socket.socket) -> bytes | None:
    def exact(n: int) -> bytes | None:
        out = b""
        while len(out) < n:
            chunk = sock.recv(n - len(out))
            if not chunk:
                return None
            out += chunk
        return out

    prefix = exact(4)
    if prefix is None:
        return None
    (length,) = struct.unpack(">i", prefix)
    return exact(length)


def _fate(sock: socket.socket, wait: float) -> str:
    sock.settimeout(wait)
    try:
        data = sock.recv(1)
    except TimeoutError:
        return "open"
    except ConnectionResetError:
        return "rst"
    except OSError:
        return "rst"
    return "fin" if not data else "open"


def run_case(addr: str, case: Case) -> Outcome:
    """Send one case on a fresh connection: its answer (if any) and the connection's fate."""
    sock = _connect(addr)
    try:
        sock.sendall(case.data)
        code: int | None = None
        remark: str | None = None
        try:
            frame = _read_frame(sock) if case.expect_answer else None
        except (TimeoutError, ConnectionResetError):
            frame = None
        if frame is not None:
            answer = decode_command(frame)
            code, remark = answer.code, answer.remark
        return Outcome(case.name, code, remark, _fate(sock, FATE_WAIT if frame is not None else 0.1))
    finally:
        sock.close()


def request(
    addr: str, code: int, ext: dict[str, str], body: bytes | None = None
) -> tuple[int, str | None, dict[str, str]]:
    """One well-formed request on a fresh connection: (code, remark, ext fields) of the answer."""
    sock = _connect(addr)
    try:
        sock.sendall(_request(code, ext, body, client="5", opaque=3))
        frame = _read_frame(sock)
        if frame is None:
            raise ConnectionError(f"{addr} closed without answering code {code}")
        answer = decode_command(frame)
        return answer.code, answer.remark, dict(answer.ext_fields or {})
    finally:
        sock.close()


class Ledger:
    """Messages a broker acknowledged on one topic's queue 0, checked by pulling them back."""

    def __init__(self, addr: str, topic: str, group: str) -> None:
        self.addr, self.topic, self.group = addr, topic, group
        self.acked: list[int] = []

    def send(self) -> None:
        code, remark, ext = request(self.addr, RequestCode.SEND_MESSAGE, send_ext(self.topic), b"ledger")
        if code != 0:
            raise AssertionError(f"ledger send answered {code} {remark!r}")
        self.acked.append(int(ext["queueOffset"]))

    def check(self) -> list[int]:
        """Offsets acknowledged but no longer readable (empty when nothing was lost): pulls from 0 until
        the queue gives nothing more (a broker hands at most 32 messages per pull)."""
        offset = 0
        while True:
            ext = pull_ext(self.topic, self.group, tag="*")
            ext["queueOffset"] = str(offset)
            code, _remark, resp = request(self.addr, RequestCode.PULL_MESSAGE, ext)
            if code != 0:  # FOUND
                break
            offset = int(resp["nextBeginOffset"])
        return [o for o in self.acked if o >= offset]


def run_suite(addr: str, *, tag: str, progress: Callable[[str], None] | None = None) -> list[Outcome]:
    """Every case against the broker at ``addr``; after each: a fresh send is acknowledged (the broker
    survived) and nothing acknowledged so far is lost."""
    topic, group = f"BadInputs{tag}", f"CG_BadInputs{tag}"
    ledger = Ledger(addr, topic, group)
    ledger.send()  # creates the topic (auto-create)
    outcomes = []
    for case in cases(topic, group):
        outcome = run_case(addr, case)
        try:
            ledger.send()
            survived = "yes"
        except (OSError, AssertionError) as exc:
            survived = f"no: {exc}"
        lost = ledger.check()
        outcome.extra = {"survived": survived, "lost": ",".join(map(str, lost))}
        outcomes.append(outcome)
        if progress is not None:
            progress(f"{case.name}: {outcome.code} {outcome.fate}")
    return outcomes


def table(results: dict[str, list[dict[str, object]]]) -> str:
    """A markdown table of outcomes: ``results`` maps a column name (``twin 5.5``, ``real 5.5.0``...)
    to the outcomes of one run (``asdict(Outcome)``), all runs over the same cases."""
    columns = list(results)
    names = [str(o["case"]) for o in results[columns[0]]]
    about = {c.name: c.about for c in cases("T", "G")}
    lines = ["| case | input | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for i, name in enumerate(names):
        cells = []
        for column in columns:
            o = results[column][i]
            remark = str(o["remark"] or "").replace("\n", " ").replace("|", "\\|")
            remark = remark if len(remark) <= 60 else remark[:57] + "..."
            extra = o.get("extra")
            lost = extra.get("lost") if isinstance(extra, dict) else ""
            cell = f"{o['code'] if o['code'] is not None else '-'} {o['fate']}" + (
                f" `{remark}`" if remark else ""
            )
            cells.append(cell + (f" **lost {lost}**" if lost else ""))
        label = about.get(name, "")[:60]
        lines.append(f"| {name} | {label.replace('|', '/')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    """``HOST:PORT [TAG]`` runs the suite against a running broker; ``real-4.9`` / ``real-5`` starts a
    real broker of that line from the launcher first."""
    target = argv[0]
    tag = argv[1] if len(argv) > 1 else str(int(time.time()))

    def report(addr: str) -> None:
        for outcome in run_suite(addr, tag=tag, progress=lambda s: print(s, file=sys.stderr, flush=True)):
            print(json.dumps(asdict(outcome)), flush=True)

    if target.startswith("real-"):
        from rmqtwin.conformance.launcher import RealRocketMQ

        with RealRocketMQ(target.removeprefix("real-")) as rmq:
            report(rmq.broker_addr)
    else:
        report(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
