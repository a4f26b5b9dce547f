"""The SQL92 selector against the real rocketmq-filter jars (4.9.7 and 5.5.0, the real brokers' own).

Hand-written and seeded random expressions times property sets go through
``tests/fakes/java/SqlVectors.java`` (run from source with the real broker's lib directory on the
class path) and through ``rmqtwin.fakes.broker.sql92``; compile success and every evaluation result
(TRUE, FALSE, NULL, or a throw) must agree.
"""

from __future__ import annotations

import random
import subprocess
from pathlib import Path

import pytest

from rmqtwin.fakes.broker.sql92 import SelectorEvalError, SelectorParseError, compile_selector, evaluate

pytestmark = pytest.mark.java

JAVA_SOURCE = Path(__file__).parent / "java" / "SqlVectors.java"

HAND_WRITTEN = [
    "a > 5",
    "a > 5 AND b = 'x'",
    "a >= 5.5",
    "a < 5L",
    "a <= 2147483648",
    "a = 5",
    "a = 5.0",
    "a = 'x'",
    "a <> 'x'",
    "a = TRUE",
    "TRUE = a",
    "a = FALSE",
    "a IS NULL",
    "a IS NOT NULL",
    "a is not null and b is null",
    "a BETWEEN 1 AND 10",
    "a NOT BETWEEN 1 AND 10",
    "a BETWEEN 10 AND 1",
    "a BETWEEN -10 AND 1",
    "a BETWEEN 1.5 AND 2",
    "a IN ('x', 'y')",
    "a NOT IN ('x', 'y', 'z', 'w', 'v', 'u')",
    "a IN ('it''s')",
    "5 IN ('x')",
    "a CONTAINS 'x'",
    "a NOT CONTAINS 'x'",
    "a STARTSWITH 'ab'",
    "a NOT STARTSWITH 'ab'",
    "a ENDSWITH 'z'",
    "a NOT ENDSWITH 'z'",
    "a CONTAINS ''",
    "contains = 'x'",
    "NOT a > 5",
    "NOT (a > 5)",
    "NOT a",
    "a",
    "a AND b",
    "a OR b",
    "TRUE",
    "FALSE",
    "NULL",
    "5",
    "'x'",
    "a = NULL",
    "NULL = a",
    "TRUE = 5",
    "5 = TRUE",
    "a > 'x'",
    "a > TRUE",
    "a > b",
    "a = b",
    "a > 0.0",
    "a > 0.5",
    "a > 1e400",
    "a > 1e-400",
    "a > .5",
    "a > 5.",
    "a > 5e2",
    "a = 007",
    "a = 0L",
    "a = 9223372036854775807",
    "a = 9223372036854775808",
    "a = -2147483648",
    "a > -a",
    "a > - 'x'",
    "+a > 5",
    "a = +5",
    "a > 5 garbage",
    "a > 5 #",
    "a > 5 b #",
    "a IS #",
    "a > 5 -- comment",
    "a > /* c */ 5",
    "a > 5 /* open",
    "",
    "   ",
    "(a > 5",
    "a > 5)",
    "((a = 'x') OR (b = 'y')) AND NOT c IS NULL",
    "a NOT 5",
    "a NOT",
    "a = 1 OR a = 'x'",
    "a = 'x' OR a = 1",
    "a > 1 AND a < 10",
    "TAGS = 'TagA'",
    "$x = 'y' AND _u > 1",
    "and = 1",
    "a = 'x''y'",
    "a BETWEEN 'a' AND 'b'",
    "(a > 5) = TRUE",
    "(a > 5) = 5",
    "5 = (a > 5)",
    "a IS NULL = TRUE",
    "a = 5 = TRUE",
    "-5 < a",
    "5 < a",
    "5.0 < a",
    "5L < a",
    "a + 5",
    "a > 5 AND",
    "a >= 5 OR b <= 3 AND c <> 'q'",
    " AND ".join(["a > 0.5"] * 2000),
    " OR ".join(["a = 5"] * 2000) + " OR b = 'x'",
    "(" * 300 + "a > 5" + ")" * 300,
    "a >\t",
    "a\t>\t",
    "a >\n",
    "a\n>",
    "a\r\n> 5 #",
    "\ta NOT 5",
    "a = \u00e9 b",
    "a = \u00e9",
    "a = 'open",
    "a = 1 /* x",
    "a > 5 # b",
    "a = 1 -- note\n AND b = 'x'",
    "a = 'x\ny' OR a = 'x\\y'",
    "(a > 0.5 AND " * 500 + "b = 'x'" + ")" * 500,
]

VALUES = [
    "5",
    "05",
    "+5",
    "-5",
    "5.0",
    "5.5",
    "-0",
    "0",
    "0.0",
    "1e3",
    " 7 ",
    "7d",
    "7f",
    "NaN",
    "Infinity",
    "-Infinity",
    "0x1p3",
    "2147483647",
    "2147483648",
    "-2147483649",
    "9223372036854775808",
    "abc",
    "x",
    "y",
    "it's",
    "",
    "true",
    "TRUE",
    "false",
    "tRuE",
    "\u0663",
    "ab",
    "abz",
    "xyz",
    "\uffff",
    "\U0001f600",
]

NAMES = ["a", "b", "c"]


def _literal(rng: random.Random) -> str:
    return rng.choice(
        [
            str(rng.randint(-3, 12)),
            str(rng.randint(0, 12)) + "L",
            f"{rng.uniform(0.1, 12):.2f}",
            "'" + rng.choice(["x", "y", "5", "abc", "it''s", ""]) + "'",
            "TRUE",
            "FALSE",
            "NULL",
            "2147483648",
            "0",
        ]
    )


def _operand(rng: random.Random) -> str:
    return rng.choice(NAMES) if rng.random() < 0.6 else _literal(rng)


def _predicate(rng: random.Random, depth: int) -> str:
    if depth > 0 and rng.random() < 0.35:
        op = rng.choice(["AND", "OR"])
        return f"{_predicate(rng, depth - 1)} {op} {_predicate(rng, depth - 1)}"
    if depth > 0 and rng.random() < 0.15:
        return f"NOT ({_predicate(rng, depth - 1)})"
    if depth > 0 and rng.random() < 0.1:
        return f"({_predicate(rng, depth - 1)})"
    name = rng.choice(NAMES)
    form = rng.randrange(9)
    if form == 0:
        return f"{_operand(rng)} {rng.choice(['=', '<>', '>', '>=', '<', '<='])} {_operand(rng)}"
    if form == 1:
        return f"{name} IS {rng.choice(['', 'NOT '])}NULL"
    if form == 2:
        return f"{name} {rng.choice(['', 'NOT '])}BETWEEN {_literal(rng)} AND {_literal(rng)}"
    if form == 3:
        items = ", ".join(
            "'" + rng.choice(VALUES[:30]).replace("'", "''") + "'" for _ in range(rng.randint(1, 6))
        )
        return f"{name} {rng.choice(['', 'NOT '])}IN ({items})"
    if form == 4:
        op = rng.choice(["CONTAINS", "STARTSWITH", "ENDSWITH"])
        return f"{name} {rng.choice(['', 'NOT '])}{op} '{rng.choice(['a', 'x', 'ab', 'z', ''])}'"
    if form == 5:
        return f"{rng.choice(['-', '+', ''])}{_operand(rng)} {rng.choice(['=', '>', '<='])} {_operand(rng)}"
    if form == 6:
        return name
    if form == 7:
        return rng.choice(["TRUE", "FALSE", "NULL"])
    return f"{name} = {_literal(rng)}"


def _random_expressions(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [_predicate(rng, 3) for _ in range(count)]


def _property_sets(seed: int) -> list[dict[str, str]]:
    rng = random.Random(seed)
    sets: list[dict[str, str]] = [{}]
    sets += [{"a": v} for v in VALUES]
    sets += [{"a": v, "b": "x", "c": "5"} for v in VALUES[:12]]
    for _ in range(40):
        sets.append({n: rng.choice(VALUES) for n in NAMES if rng.random() < 0.8})
    sets.append({"TAGS": "TagA", "$x": "y", "_u": "2", "contains": "x", "and": "1"})
    return sets


def _hex(text: str) -> str:
    return text.encode("utf-8", "surrogatepass").hex()


def _python_results(expression: str, version: int, prop_sets: list[dict[str, str]]) -> str:
    try:
        compiled = compile_selector(expression, version)
    except SelectorParseError as exc:
        return _compile_error(str(exc))
    out = []
    for props in prop_sets:
        try:
            value = evaluate(compiled, props)
        except SelectorEvalError:
            out.append("E")
            continue
        out.append("N" if value is None else "T" if value is True else "F" if value is False else "X")
    return "".join(out)


def _java_results(version: str, expressions: list[str], prop_sets: list[dict[str, str]]) -> list[str]:
    from rmqtwin.conformance.launcher import fetch, java_executable

    lib = fetch(version)
    encoded = "\t".join(
        ",".join(f"{_hex(k)}:{_hex(v)}" for k, v in props.items()) if props else "-" for props in prop_sets
    )
    stdin = "".join(f"{_hex(e)}\t{encoded}\n" for e in expressions)
    java = java_executable()
    assert java is not None
    proc = subprocess.run(
        [java, "-Xmx128m", "-XX:TieredStopAtLevel=1", "-cp", f"{lib}/*", str(JAVA_SOURCE)],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == len(expressions), proc.stderr[-3000:]
    return [
        _compile_error(bytes.fromhex(line[2:]).decode()) if line.startswith("P ") else line for line in lines
    ]


def _compile_error(message: str) -> str:
    """A compile error is compared by the first line of its message (JavaCC's position, token, the
    check's text), which CHECK_CLIENT_CONFIG returns as its remark."""
    return "P " + message.split("\n", maxsplit=1)[0].strip()


@pytest.fixture(scope="module", autouse=True)
def _java_ready() -> None:
    from rmqtwin.conformance.launcher import java_available

    reason = java_available()
    if reason is not None:
        pytest.skip(f"needs Java 17 and Maven: {reason}")


@pytest.mark.parametrize(("line", "version"), [("4.9", 4), ("5", 5)], ids=["filter-4.9.7", "filter-5.5.0"])
def test_selector_agrees_with_rocketmq_filter(line: str, version: int) -> None:
    expressions = HAND_WRITTEN + _random_expressions(400, seed=20261122 + version)
    prop_sets = _property_sets(seed=7)
    java = _java_results(line, expressions, prop_sets)
    python = [_python_results(e, version, prop_sets) for e in expressions]
    mismatches = [(e, j, p) for e, j, p in zip(expressions, java, python, strict=True) if j != p]
    compiled = sum(1 for j in java if not j.startswith("P"))
    assert compiled > len(expressions) // 3, "too few expressions compile to test evaluation"
    assert not mismatches, "\n".join(
        f"{e!r}: java={j} python={p}" + _first_difference(j, p, prop_sets) for e, j, p in mismatches[:15]
    )


def _first_difference(java: str, python: str, prop_sets: list[dict[str, str]]) -> str:
    if java.startswith("P") or python.startswith("P"):
        return ""
    for i, (j, p) in enumerate(zip(java, python, strict=True)):
        if j != p:
            return f" first at {prop_sets[i]!r}: java={j} python={p}"
    return ""
