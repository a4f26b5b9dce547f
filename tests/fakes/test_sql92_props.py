"""Properties of the SQL92 selector that hold for any input: it never fails other than as Java does."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtwin.fakes.broker.sql92 import (
    Expression,
    SelectorEvalError,
    SelectorParseError,
    compile_selector,
    evaluate,
    matches,
)

WORDS = ["a", "b", "AND", "OR", "NOT", "IN", "IS", "NULL", "TRUE", "FALSE", "BETWEEN", "CONTAINS"]
PIECES = st.one_of(
    st.sampled_from(WORDS),
    st.sampled_from(["=", "<>", ">", ">=", "<", "<=", "(", ")", ",", "+", "-", "--", "/*", "*/", "'", "''"]),
    st.from_regex(r"[0-9]{1,25}(\.[0-9]*)?([eE][+-]?[0-9]{1,4})?[lL]?", fullmatch=True),
    st.text(max_size=4),
)
SELECTORS = st.lists(PIECES, max_size=25).map(" ".join)
VALUES = st.one_of(
    st.sampled_from(["5", "-5", "5.5", "1e3", "NaN", "true", "", " 7", "x", "2147483648", "0x1p3"]),
    st.text(max_size=6),
)
PROPS = st.dictionaries(st.sampled_from(["a", "b", "c"]), VALUES, max_size=3)


def _compile(text: str, version: int) -> Expression | None:
    try:
        return compile_selector(text, version)
    except SelectorParseError:
        return None


@settings(max_examples=150, deadline=None)
@given(SELECTORS, st.sampled_from([4, 5]), PROPS)
def test_any_text_compiles_or_is_a_parse_error_and_evaluates_or_throws_as_java(
    text: str, version: int, props: dict[str, str]
) -> None:
    expression = _compile(text, version)
    if expression is None:
        return
    try:
        value = evaluate(expression, props)
    except SelectorEvalError:
        assert matches(expression, props) is False
        return
    assert value is None or isinstance(value, bool)
    assert matches(expression, props) is (value is True)


def test_long_chains_evaluate_without_recursion() -> None:
    chain = compile_selector(" AND ".join(["a = 1"] * 2000))
    assert (evaluate(chain, {"a": "1"}), evaluate(chain, {}), evaluate(chain, {"a": "2"})) == (
        True,
        None,
        False,
    )
    chain = compile_selector(" OR ".join(["a = 1"] * 2000))
    assert (evaluate(chain, {"a": "1"}), evaluate(chain, {}), evaluate(chain, {"a": "2"})) == (
        True,
        None,
        False,
    )


def test_deep_parentheses_are_a_parse_error_not_a_crash() -> None:
    """Java overflows its stack somewhere between 300 and 3000 levels, depending on its JIT."""
    assert _compile("(" * 5000 + "a = 1" + ")" * 5000, 5) is None
    nested = _compile("(a = 1 AND " * 1000 + "a = 1" + ")" * 1000, 5)
    assert nested is not None and matches(nested, {"a": "1"})
