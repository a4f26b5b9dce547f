"""Every typed body of ``rmqtwin.codec.bodies`` against the Java bean of the same name.

The verifier lists the properties each line's JSON library writes for the class (fastjson's
JavaBeanSerializer in 4.9.8, fastjson2's ObjectWriter in 5.5.0); the Python class must have every
one of them (under the same property name) and no property that neither line writes.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rmqtwin.codec import bodies, fastjson
from tests.golden import vectors as gv
from tests.golden.conftest import LINES, GoldenLine

pytestmark = [pytest.mark.java, pytest.mark.timeout(900)]

Golden = Callable[[str], GoldenLine]


def _java_properties(golden: Golden, line: str, name: str) -> set[str] | None:
    result = golden(line).java_result(f"bodyclass.{name}")
    if not result["ok"]:
        assert "ClassNotFoundException" in result["error"], result["trace"]
        return None
    return set(result["properties"])


@pytest.mark.parametrize("name", gv.python_body_classes())
def test_body_class_matches_java(golden: Golden, name: str) -> None:
    python = {wire for _, wire in fastjson.bean_fields(getattr(bodies, name))}
    problems = []
    union: set[str] = set()
    found = False
    for java_name in (name, *gv.BODY_ALSO_JAVA.get(name, ())):
        for line in LINES:
            java = _java_properties(golden, line, java_name)
            if java is None:
                continue
            found = True
            union |= java
            if java - python:
                problems.append(f"{LINES[line]} {java_name} writes {sorted(java - python)}, missing here")
    assert found, f"no Java class {name} in 4.9.8 or 5.5.0"
    if python - union:
        problems.append(f"properties no Java line writes: {sorted(python - union)}")
    assert problems == []
