"""The codec against the real Java implementation, byte for byte, in both directions.

For every vector the Java generator wrote from RocketMQ 4.9.8 and from 5.5.0 classes:

* ``test_python_decodes``: the Python codec decodes Java's bytes to the fields Java describes;
* ``test_python_reencodes``: re-encoding what Python decoded gives Java's bytes back exactly;
* ``test_java_decodes_python``: Python encodes the fields Java intended from scratch, and the Java
  classes (NettyDecoder + RemotingCommand.decode + decodeCommandCustomHeader, MessageDecoder,
  RemotingSerializable.decode) read back exactly those fields.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rmqtwin.codec import fastjson, headers
from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.frame import FrameDecoder
from rmqtwin.codec.message import decode_batch, decode_message_records
from tests.golden import vectors as gv
from tests.golden.conftest import LINES, GoldenLine

# The first test of a session may build the Maven project (minutes on a loaded machine).
pytestmark = [pytest.mark.java, pytest.mark.timeout(900)]

Golden = Callable[[str], GoldenLine]

# Known differences, one case each, with the exact difference: "line:vector" -> reason. Only cases whose
# owning module has not been fixed yet belong here; the xfail is strict, so a fix makes it fail loudly.
XFAIL_DECODE: dict[str, str] = {}
XFAIL_REENCODE: dict[str, str] = {}
XFAIL_JAVA_DECODES: dict[str, str] = {}


def _cases(xfails: dict[str, str]) -> list[Any]:
    cases = []
    for line in LINES:
        for name in gv.vector_names(line):
            key = f"{line}:{name}"
            marks = [pytest.mark.xfail(strict=True, reason=xfails[key])] if key in xfails else []
            cases.append(pytest.param(line, name, id=key, marks=marks))
    return cases


@pytest.mark.parametrize("line", list(LINES))
def test_generator_wrote_exactly_the_listed_vectors(golden: Golden, line: str) -> None:
    manifest = golden(line).manifest()
    assert manifest["rocketmqVersion"] == LINES[line]
    assert sorted(v["name"] for v in manifest["vectors"]) == sorted(gv.vector_names(line))


# ------------------------------------------------------------------------------------ Python decodes Java


@pytest.mark.parametrize(("line", "name"), _cases(XFAIL_DECODE))
def test_python_decodes(golden: Golden, line: str, name: str) -> None:
    vector = golden(line).vector(name)
    data = bytes.fromhex(vector["hex"])
    kind = vector["kind"]
    if kind == "command":
        cmd = gv.decode_frame(data)
        assert gv.describe_command(cmd) == gv.java_command(vector["command"])
        if vector["headerClass"] is not None:
            cls = gv.header_class(vector["headerClass"])
            java_fields = set(vector["headerFields"])
            unknown = set(vector["header"]) - gv.header_wire_names(cls)
            assert not unknown, f"{cls.__name__} lacks Java fields {sorted(unknown)}"
            typed = headers.from_ext_fields(cls, cmd.ext_fields, strict=False)
            # Fields the Python class models beyond Java's (e.g. 5.x fields on a 4.9 vector) are not compared.
            python_view = {k: v for k, v in gv.describe_header(typed).items() if k in java_fields}
            assert python_view == vector["header"]
    elif kind == "records":
        stored = decode_message_records(data, decompress=False)
        assert [gv.describe_message(m) for m in stored] == [gv.java_message(m) for m in vector["messages"]]
        consumed = decode_message_records(data, decompress=True)
        assert [m.body.hex() for m in consumed] == [m["bodyDecompressed"] or "" for m in vector["messages"]]
    elif kind == "batch":
        assert [gv.describe_batch_item(i) for i in decode_batch(data)] == [
            _java_batch_item(i) for i in vector["items"]
        ]
    elif kind == "body":
        if vector["form"] != "compressed":
            assert gv.canon(fastjson.loads(data)) == gv.canon(vector["content"])
        # The typed body keeps every property Java read (re-serialized, it has the same content).
        body = gv.decode_typed_body(gv.body_class(vector["bodyClass"]), data, vector["form"])
        form = "legacy" if vector["form"] == "compressed" else vector["form"]
        as_json = gv.encode_typed_body(body, form, line)
        assert gv.canon(fastjson.loads(as_json)) == gv.canon(vector["content"])
    else:
        pytest.fail(f"unknown vector kind {kind}")


def _java_batch_item(item: dict[str, Any]) -> dict[str, Any]:
    return {**item, "properties": dict(sorted((item["properties"] or {}).items()))}


# ------------------------------------------------------------------------------- Python re-encodes Java


@pytest.mark.parametrize(("line", "name"), _cases(XFAIL_REENCODE))
def test_python_reencodes(golden: Golden, line: str, name: str) -> None:
    vector = golden(line).vector(name)
    data = bytes.fromhex(vector["hex"])
    kind = vector["kind"]
    if kind == "command":
        cmd = gv.decode_frame(data)
        again = gv.reencode_command(cmd, line)
        if vector["roundTrip"]:
            assert again.hex() == data.hex()
        else:
            # ROCKETMQ decodes a zero-length value as null (Java cannot re-send it, and neither may we
            # send it as an empty string: the entry is dropped) and keeps the last of duplicate keys;
            # re-sent, the frame carries exactly the entries Java holds.
            nulls = {k for k, v in vector["command"]["extFields"].items() if v is None}
            expected = {k: v for k, v in vector["command"]["extFields"].items() if k not in nulls}
            assert gv.describe_command(gv.decode_frame(again))["extFields"] == expected
    elif kind == "records":
        stored = decode_message_records(data, decompress=False)
        assert gv.encode_records(stored, line).hex() == data.hex()
    elif kind == "batch":
        assert gv.encode_batch_items(decode_batch(data), line).hex() == data.hex()
    elif kind == "body":
        if vector["form"] != "compressed":
            assert gv.dump_body(fastjson.loads(data), vector["form"], line).decode() == vector["text"]
        typed = gv.decode_typed_body(gv.body_class(vector["bodyClass"]), data, vector["form"])
        assert gv.encode_typed_body(typed, vector["form"], line).hex() == vector["hex"]
    else:
        pytest.fail(f"unknown vector kind {kind}")


# ------------------------------------------------------------------------------- Java decodes Python


@pytest.mark.parametrize(("line", "name"), _cases(XFAIL_JAVA_DECODES))
def test_java_decodes_python(golden: Golden, line: str, name: str) -> None:
    golden_line = golden(line)
    vector = golden_line.vector(name)
    result = golden_line.verified()[name]
    assert result.error is None, f"Python could not encode the vector: {result.error}"
    assert result.java is not None, "the verifier wrote no result"
    assert result.java["ok"], f"Java rejected Python's bytes: {result.java['trace']}"
    kind = vector["kind"]
    if kind == "command":
        intended = dict(vector["command"])
        if intended["extFields"] is not None:
            intended["extFields"] = {k: v for k, v in intended["extFields"].items() if v is not None}
        assert result.java["command"] == intended
        if vector["headerClass"] is not None:
            assert result.java["header"] == vector["header"]
    elif kind == "records":
        assert result.java["messages"] == vector["messages"]
        # Properties laid out in Java's HashMap order: the bytes are Java's own, too.
        assert result.sent is not None
        assert result.sent["hex"] == vector["hex"]
    elif kind == "batch":
        assert result.java["items"] == vector["items"]
        assert result.sent is not None
        assert result.sent["hex"] == vector["hex"]
    elif kind == "body":
        assert gv.canon(result.java["content"]) == gv.canon(vector["content"])
    else:
        pytest.fail(f"unknown vector kind {kind}")


# ------------------------------------------------------------------------------- header registries


@pytest.mark.parametrize("line", list(LINES))
def test_header_registries_name_the_java_header_classes(golden: Golden, line: str) -> None:
    """REQUEST_HEADERS / RESPONSE_HEADERS pick, by request code, the class the Java code used."""
    seen: dict[str, tuple[str, str | None]] = {}
    for vector in golden(line).manifest()["vectors"]:
        direction, _, rest = vector["name"].partition(".")
        if vector["kind"] != "command" or vector["headerClass"] is None or rest.startswith("edge."):
            continue
        code = getattr(RequestCode, rest.split(".")[0])
        registry = headers.REQUEST_HEADERS if direction == "request" else headers.RESPONSE_HEADERS
        python_class = registry.get(code)
        seen[vector["name"]] = (
            vector["headerClass"],
            None if python_class is None else python_class.__name__,
        )
    assert len(seen) >= 40, "the manifest lost its typed-header vectors"
    assert {name: pair for name, pair in seen.items() if pair[0] != pair[1]} == {}


# ------------------------------------------------------------------------------- framing a Java stream


@pytest.mark.parametrize("line", list(LINES))
@pytest.mark.parametrize("chunk", [1, 7, 4096])
def test_frame_decoder_splits_a_stream_of_java_frames(golden: Golden, line: str, chunk: int) -> None:
    """Every Java frame back to back, fed in pieces: FrameDecoder yields exactly Java's frames."""
    frames = [bytes.fromhex(v["hex"]) for v in golden(line).manifest()["vectors"] if v["kind"] == "command"]
    stream = b"".join(frames)
    decoder = FrameDecoder()
    got: list[bytes] = []
    for start in range(0, len(stream), chunk):
        got.extend(bytes(f) for f in decoder.feed(stream[start : start + chunk]))
    assert decoder.buffered == 0
    assert got == [f[4:] for f in frames]
