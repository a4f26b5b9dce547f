"""Every typed header of ``rmqtwin.codec.headers`` against the Java class of the same name.

The verifier reports each Java class's fields (name, Java type, ``@CFNotNull``) in 4.9.8 and in 5.5.0;
the Python class must carry every one of them under the same wire name with a matching type, must
require the boxed ``@CFNotNull`` ones, and must not invent fields neither line has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from rmqtwin.codec import headers
from tests.golden import vectors as gv
from tests.golden.conftest import LINES, GoldenLine

pytestmark = [pytest.mark.java, pytest.mark.timeout(900)]

Golden = Callable[[str], GoldenLine]

PYTHON_ONLY = {
    "EmptyHeader": "stands for Java's header-less commands that still carry extFields {}",
    "HeartbeatResponseHeader": "types the ext fields the 5.x broker adds with addExtField (no Java class)",
}

# Ext fields the Java code adds beside the header (``addExtField``), which the Python class types too.
EXT_EXTRAS = {
    "QueryMessageRequestHeader": {"_UNIQUE_KEY_QUERY"},  # MQClientAPIImpl.queryMessage
    "RecallMessageResponseHeader": {"MSG_REGION"},  # RecallMessageProcessor adds it to every answer
    "RegisterBrokerRequestHeader": {"__ZONE_NAME"},  # 5.x BrokerOuterAPI.registerBrokerAll
    "SendMessageResponseHeader": {"MSG_REGION", "TRACE_ON"},  # SendMessageProcessor / client reads them
}

# @CFNotNull fields Python deliberately keeps optional: Java only logs a missing @CFNotNull field, and
# senders up to 5.3 send these codes without any header (5.5 added the paging fields).
NOT_NULL_BUT_OPTIONAL = {
    ("GetAllTopicConfigRequestHeader", "topicSeq"),
    ("GetAllSubscriptionGroupRequestHeader", "groupSeq"),
    ("GetAllSubscriptionGroupResponseHeader", "totalGroupNum"),
    ("RecallMessageResponseHeader", "msgId"),  # a refused recall's answer has none
}

_BOXED = {"String", "BoundaryType", "Integer", "Long", "Boolean", "Double"}


def _python_kind(spec: Any) -> str:
    value = getattr(spec, "kind")  # noqa: B009 - _FieldSpec is the header module's own table
    names = {
        headers._KIND_STR: "str",
        headers._KIND_INT: "int",
        headers._KIND_LONG: "long",
        headers._KIND_BOOL: "bool",
        headers._KIND_DOUBLE: "double",
    }
    return names[value]


def _java_fields(golden: Golden, line: str, name: str) -> list[dict[str, Any]] | None:
    result = golden(line).java_result(f"headerclass.{name}")
    if not result["ok"]:
        assert "ClassNotFoundException" in result["error"], result["trace"]
        return None
    fields: list[dict[str, Any]] = result["fields"]
    return fields


@pytest.mark.parametrize("name", gv.python_header_classes())
def test_header_class_matches_java(golden: Golden, name: str) -> None:
    per_line = {line: _java_fields(golden, line, name) for line in LINES}
    if name in PYTHON_ONLY:
        assert per_line == dict.fromkeys(LINES), f"{name} exists in Java after all: {per_line}"
        return
    assert any(fields is not None for fields in per_line.values()), f"no Java class {name} in 4.9.8 or 5.5.0"
    specs = {spec.wire: spec for spec in headers.header_fields(gv.header_class(name))}
    problems = []
    java_names: set[str] = set()
    for line, fields in per_line.items():
        for field in fields or []:
            java_names.add(field["name"])
            spec = specs.get(field["name"])
            where = f"{LINES[line]} {field['declaredIn']}.{field['name']} ({field['type']})"
            if spec is None:
                problems.append(f"missing {where}")
                continue
            if gv.JAVA_HEADER_KINDS.get(field["type"]) != _python_kind(spec):
                problems.append(f"{where} is {_python_kind(spec)} here")
            lenient = (name, field["name"]) in NOT_NULL_BUT_OPTIONAL
            if field["type"] in _BOXED and field["notNull"] and not spec.required and not lenient:
                problems.append(f"{where} is @CFNotNull but optional here")
    invented = sorted(set(specs) - java_names - EXT_EXTRAS.get(name, set()))
    if invented:
        problems.append(f"fields no Java line has: {invented}")
    assert problems == []
