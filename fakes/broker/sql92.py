"""SQL92 message selectors as rocketmq-filter parses and evaluates them (``SelectorParser.jj``).

A consumer subscribing with ``MessageSelector.bySql("a > 5 AND b = 'x'")`` gets the messages whose
properties make the expression TRUE. This module mirrors the Java filter closely, quirks included,
because consumers see the quirks as behaviour:

* The lexer is JavaCC's: longest match, keywords before identifiers, tokens fetched only when the
  parser looks at them. ``JmsSelector`` does not require end of input, so ``a = 007`` is ``a = 0``
  followed by ignored tokens, and a lexical error is only fatal where the parser reads it.
* Values are typed as in Java: integer literals are ``Integer`` (``Long`` past 32 bits or with an
  ``L``), decimals ``Double``, property values always ``String``. Mixed comparisons convert the
  string side (``Integer.valueOf``, ``Double.valueOf``, ``Boolean.valueOf``); a conversion that
  fails makes the whole evaluation throw, and the broker then does not deliver the message.
* Three-valued logic: a missing property gives NULL, NULL is not TRUE.
* Parse-time checks: ``> < >= <=`` refuse string/boolean/NULL literals and boolean operands, ``=``
  refuses NULL, a float literal must be within ``[Double.MIN_VALUE, Double.MAX_VALUE]`` (so ``0.0``
  is refused), ``BETWEEN`` constants must be ordered, ``IN`` needs a property on its left.
* ``CONTAINS`` / ``STARTSWITH`` / ``ENDSWITH`` (and their ``NOT`` forms) exist from 5.x on; for a 4.9
  broker they are identifiers (``version=4``).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar, ParamSpec, TypeVar

from rmqtwin.codec.fastjson import java_double_str

__all__ = [
    "Expression",
    "SelectorEvalError",
    "SelectorParseError",
    "compile_selector",
    "evaluate",
    "matches",
]


class JavaInt(int):
    """A ``java.lang.Integer`` value (distinct from :class:`JavaLong` in comparisons)."""


class JavaLong(int):
    """A ``java.lang.Long`` value."""


Value = None | bool | JavaInt | JavaLong | float | str


class SelectorParseError(Exception):
    """The expression does not compile; ``str()`` is close to Java's ``MQFilterException.getMessage()``."""


class SelectorEvalError(Exception):
    """Evaluation threw in Java (a failed number conversion, a ClassCastException)."""


class _NumberFormatError(SelectorEvalError):
    """``NumberFormatException``."""


# -------------------------------------------------------------------------------------- Java numbers

_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_DOUBLE_MIN_VALUE = 5e-324
_DOUBLE_MAX_VALUE = 1.7976931348623157e308

_DEC_FLOAT = re.compile(
    r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fFdD]?)", re.ASCII
)
_HEX_FLOAT = re.compile(
    r"([+-]?)0[xX]((?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+)[fFdD]?", re.ASCII
)


def java_parse_long(text: str, low: int = _LONG_MIN, high: int = _LONG_MAX) -> int:
    """``Long.parseLong`` / ``Integer.parseInt`` (with the int range): sign, Unicode decimal digits."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if not digits or not all(c.isdecimal() for c in digits):
        raise _NumberFormatError(f'java.lang.NumberFormatException: For input string: "{text}"')
    value = int(digits)
    if text[:1] == "-":
        value = -value
    if not low <= value <= high:
        raise _NumberFormatError(f'java.lang.NumberFormatException: For input string: "{text}"')
    return value


def java_parse_double(text: str) -> float:
    """``Double.valueOf``: trimmed, optional sign, NaN/Infinity, decimal or hex, f/d suffix."""
    s = text.strip("".join(chr(c) for c in range(0x21)))
    if not s:
        raise _NumberFormatError("java.lang.NumberFormatException: empty String")
    if _DEC_FLOAT.fullmatch(s):
        body = s[:-1] if s[-1] in "fFdD" else s
        if body.lstrip("+-") == "NaN":
            return math.nan
        if body.lstrip("+-") == "Infinity":
            return -math.inf if body.startswith("-") else math.inf
        return float(body)
    hexed = _HEX_FLOAT.fullmatch(s)
    if hexed:
        return float.fromhex(hexed.group(1) + "0x" + hexed.group(2))
    raise _NumberFormatError(f'java.lang.NumberFormatException: For input string: "{text}"')


def _double_key(value: float) -> tuple[int, float]:
    """Order of ``Double.compare``: -0.0 < 0.0, NaN above everything and equal to itself."""
    if math.isnan(value):
        return (2, 0.0)
    if value == 0.0:
        return (1, -1.0 if math.copysign(1.0, value) < 0 else 0.0)
    return (1, value)


def _sign(a: object, b: object) -> int:
    return (a > b) - (a < b)  # type: ignore[operator]


def _compare_same(lv: Value, rv: Value) -> int:
    if isinstance(lv, float) and isinstance(rv, float):
        return _sign(_double_key(lv), _double_key(rv))
    if isinstance(lv, str) and isinstance(rv, str):
        if lv.isascii() and rv.isascii():
            return _sign(lv, rv)
        return _sign(lv.encode("utf-16-be", "surrogatepass"), rv.encode("utf-16-be", "surrogatepass"))
    return _sign(lv, rv)


def _java_class(value: Value) -> type:
    if isinstance(value, bool):
        return bool
    return type(value)


_BOOLEAN_TO_STRING = (  # Java 17's text, as the real brokers run
    "java.lang.ClassCastException: class java.lang.Boolean cannot be cast to class java.lang.String "
    "(java.lang.Boolean and java.lang.String are in module java.base of loader 'bootstrap')"
)


def java_compare(lv: Value, rv: Value) -> int:
    """``ComparisonExpression.__compare`` with string conversion on (the parser always turns it on).

    A failed number conversion is wrapped in a RuntimeException, as Java's catch does.
    """
    try:
        return _java_compare(lv, rv)
    except _NumberFormatError as exc:
        raise SelectorEvalError(f"java.lang.RuntimeException: {exc}") from None


def _java_compare(lv: Value, rv: Value) -> int:
    lc, rc = _java_class(lv), _java_class(rv)
    if lc is not rc:
        if lc is bool:
            if rc is str:  # Java casts the Boolean to String here
                raise SelectorEvalError(_BOOLEAN_TO_STRING)
            return -1
        if lc is JavaInt:
            if rc is JavaLong:
                lv = JavaLong(lv)  # type: ignore[arg-type]
            elif rc is float:
                lv = float(lv)  # type: ignore[arg-type]
            elif rc is str:
                rv = JavaInt(java_parse_long(rv, _INT_MIN, _INT_MAX))  # type: ignore[arg-type]
            else:
                return -1
        elif lc is JavaLong:
            if rc is JavaInt:
                rv = JavaLong(rv)  # type: ignore[arg-type]
            elif rc is float:
                lv = float(lv)  # type: ignore[arg-type]
            elif rc is str:
                rv = JavaLong(java_parse_long(rv))  # type: ignore[arg-type]
            else:
                return -1
        elif lc is float:
            if rc is JavaInt or rc is JavaLong:
                rv = float(rv)  # type: ignore[arg-type]
            elif rc is str:
                rv = java_parse_double(rv)  # type: ignore[arg-type]
            else:
                return -1
        elif lc is str:
            assert isinstance(lv, str)
            if rc is bool:
                lv = lv.lower() == "true"
            elif rc is JavaInt:
                lv = JavaInt(java_parse_long(lv, _INT_MIN, _INT_MAX))
            elif rc is JavaLong:
                lv = JavaLong(java_parse_long(lv))
            elif rc is float:
                lv = java_parse_double(lv)
            else:
                return -1
        else:
            return -1
    return _compare_same(lv, rv)


# -------------------------------------------------------------------------------------- expressions

Props = Mapping[str, str]


class Expression:
    """A compiled node; ``evaluate`` returns a Java value or None (NULL) or raises SelectorEvalError."""

    boolean = False

    def evaluate(self, props: Props) -> Value:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class Constant(Expression):
    value: Value
    boolean: bool = False  # BooleanConstantExpression (TRUE, FALSE, NULL)

    def evaluate(self, props: Props) -> Value:
        return self.value


@dataclass(frozen=True, slots=True)
class Property(Expression):
    name: str

    def evaluate(self, props: Props) -> Value:
        return props.get(self.name)


@dataclass(frozen=True, slots=True)
class Negate(Expression):
    right: Expression

    def evaluate(self, props: Props) -> Value:
        value = self.right.evaluate(props)
        if type(value) is JavaInt:
            return JavaInt(_wrap(-value, 32))
        if type(value) is JavaLong:
            return JavaLong(_wrap(-value, 64))
        if type(value) is float:
            return -value
        return None


def _wrap(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


class BooleanNode(Expression):
    boolean = True


@dataclass(frozen=True, slots=True)
class BooleanCast(BooleanNode):
    right: Expression

    def evaluate(self, props: Props) -> Value:
        value = self.right.evaluate(props)
        if value is None:
            return None
        return value if isinstance(value, bool) else False


@dataclass(frozen=True, slots=True)
class Not(BooleanNode):
    right: Expression

    def evaluate(self, props: Props) -> Value:
        value = self.right.evaluate(props)
        return None if value is None else not value


@dataclass(frozen=True, slots=True)
class BinaryNode(BooleanNode):
    """A boolean operator over two operands."""

    left: Expression
    right: Expression


def _left_spine(node: BinaryNode) -> list[Expression]:
    """The operands of a left-deep chain of nodes of ``node``'s class, in evaluation order (no recursion,
    so a selector of thousands of ANDs evaluates like Java's)."""
    cls = type(node)
    right_sides = []
    operand: Expression = node
    while type(operand) is cls:
        right_sides.append(operand.right)
        operand = operand.left
    return [operand, *reversed(right_sides)]


@dataclass(frozen=True, slots=True)
class LogicNode(BinaryNode):
    """``LogicExpression``: the first operand that is ``decisive`` decides; else NULL if one was NULL."""

    decisive: ClassVar[bool]

    def evaluate(self, props: Props) -> Value:
        decisive = self.decisive
        saw_null = False
        for operand in _left_spine(self):
            value = operand.evaluate(props)
            if value is decisive:
                return decisive
            saw_null = saw_null or value is None
        return None if saw_null else not decisive


@dataclass(frozen=True, slots=True)
class And(LogicNode):
    decisive = False


@dataclass(frozen=True, slots=True)
class Or(LogicNode):
    decisive = True


@dataclass(frozen=True, slots=True)
class Equal(BinaryNode):
    def evaluate(self, props: Props) -> Value:
        lv = self.left.evaluate(props)
        rv = self.right.evaluate(props)
        if (lv is None) != (rv is None):
            return None if lv is None else False
        if lv is None:
            return True
        return java_compare(lv, rv) == 0


_ORDERINGS: dict[str, Callable[[int], bool]] = {
    ">": lambda c: c > 0,
    ">=": lambda c: c >= 0,
    "<": lambda c: c < 0,
    "<=": lambda c: c <= 0,
}


@dataclass(frozen=True, slots=True)
class Ordering(BinaryNode):
    op: str

    def evaluate(self, props: Props) -> Value:
        lv = self.left.evaluate(props)
        if lv is None:
            return None
        rv = self.right.evaluate(props)
        if rv is None:
            return None
        if type(lv) is str and type(rv) is str:
            try:
                lv, rv = java_parse_double(lv), java_parse_double(rv)
            except SelectorEvalError:
                raise SelectorEvalError(
                    f"It's illegal to compare string by '>=', '>', '<', '<='. lv={lv}, rv={rv}"
                ) from None
        return _ORDERINGS[self.op](java_compare(lv, rv))


@dataclass(frozen=True, slots=True)
class In(BooleanNode):
    right: Property
    values: frozenset[str]
    negated: bool

    def evaluate(self, props: Props) -> Value:
        value = self.right.evaluate(props)
        if type(value) is not str:
            return None
        return (value in self.values) != self.negated


_STRING_TESTS: dict[str, Callable[[str, str], bool]] = {
    "CONTAINS": lambda v, s: s in v,
    "STARTSWITH": str.startswith,
    "ENDSWITH": str.endswith,
}


@dataclass(frozen=True, slots=True)
class StringTest(BooleanNode):
    """5.x CONTAINS / STARTSWITH / ENDSWITH: FALSE (never NULL) for a missing or non-string value."""

    op: str
    right: Expression
    search: str
    negated: bool

    def evaluate(self, props: Props) -> Value:
        if not self.search:
            return False
        value = self.right.evaluate(props)
        if type(value) is not str:
            return False
        return _STRING_TESTS[self.op](value, self.search) != self.negated


# -------------------------------------------------------------------------------------- lexer

_EOF = "<EOF>"
_KEYWORDS_4 = ("NOT", "AND", "OR", "BETWEEN", "IN", "TRUE", "FALSE", "NULL", "IS")
_KEYWORDS_5 = (*_KEYWORDS_4, "CONTAINS", "STARTSWITH", "ENDSWITH")
_OPERATORS = ("=", "<>", ">", ">=", "<", "<=", "(", ",", ")", "+", "-")

# (kind, pattern) in JavaCC declaration order: ties in length go to the earlier one.
_LEX_RULES: tuple[tuple[str | None, re.Pattern[str]], ...] = (
    (None, re.compile(r"[ \t\n\r\f]")),
    (None, re.compile(r"--[^\n\r]*(?:\r\n|\n|\r)")),
    (None, re.compile(r"/\*[^*]*\*(?:\*|[^*/][^*]*\*)*/")),
    ("KEYWORD", re.compile(r"[A-Za-z]+")),
    ("DECIMAL", re.compile(r"0|[1-9][0-9]*[lL]?")),
    (
        "FLOAT",
        re.compile(r"[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+"),
    ),
    ("STRING", re.compile(r"'(?:''|[^'])*'", re.DOTALL)),
    ("ID", re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")),
    ("OP", re.compile(r"<>|>=|<=|[=><(),+-]")),
)


@dataclass(frozen=True, slots=True)
class Token:
    kind: str  # a keyword ("AND"), an operator ("<="), DECIMAL, FLOAT, STRING, ID or <EOF>
    image: str
    pos: int  # index of its first char; for <EOF>, of the last char of the text (-1: empty text)


_TAB_SIZE = 8


def _line_column(text: str, index: int) -> tuple[int, int]:
    """Where JavaCC's ``SimpleCharStream`` puts ``text[index]``: lines after CR, LF or CRLF, tabs to
    the next multiple of 8; ``(0, 0)`` before the first char."""
    line, column = 1, 0
    prev_cr = prev_lf = False
    for c in text[: index + 1]:
        column += 1
        if prev_lf:
            prev_lf = False
            line, column = line + 1, 1
        elif prev_cr:
            prev_cr = False
            if c == "\n":
                prev_lf = True
            else:
                line, column = line + 1, 1
        if c == "\r":
            prev_cr = True
        elif c == "\n":
            prev_lf = True
        elif c == "\t":
            column -= 1
            column += _TAB_SIZE - (column % _TAB_SIZE)
    return (line, column) if index >= 0 else (0, 0)


def _java_escape(text: str) -> str:
    """JavaCC's ``addEscapes``."""
    out = []
    for c in text:
        if c in _ESCAPES:
            out.append(_ESCAPES[c])
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            out.extend(f"\\u{unit:04x}" for unit in _utf16_units(c))
        else:
            out.append(c)
    return "".join(out)


_ESCAPES = {
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "'": "\\'",
    "\\": "\\\\",
}


def _utf16_units(c: str) -> list[int]:
    raw = c.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(raw[i : i + 2], "big") for i in range(0, len(raw), 2)]


class _Lexer:
    def __init__(self, text: str, keywords: tuple[str, ...]) -> None:
        self.text = text
        self.pos = 0
        self.keywords = frozenset(keywords)

    def next(self) -> Token:
        text = self.text
        while True:
            if self.pos >= len(text):
                return Token(_EOF, "", len(text) - 1)
            best: tuple[int, str | None, str] | None = None
            for rule, pattern in _LEX_RULES:
                m = pattern.match(text, self.pos)
                if m is None or not m.group():
                    continue
                image = m.group()
                kind = rule
                if rule == "KEYWORD":
                    if image.upper() not in self.keywords:
                        continue
                    kind = image.upper()
                elif rule == "OP":
                    kind = image
                if best is None or len(image) > best[0]:
                    best = (len(image), kind, image)
            if best is None:
                raise self._lexical_error()
            start = self.pos
            self.pos += best[0]
            if best[1] is not None:
                return Token(best[1], best[2], start)

    def _lexical_error(self) -> SelectorParseError:
        """``TokenMgrError``: an unterminated string or comment runs to the end; else one bad char."""
        text, start = self.text, self.pos
        end = len(text) if text.startswith(("'", "/*"), start) else start + 1
        line, column = _line_column(text, end - 1)
        if end >= len(text):
            if text[end - 1] in "\r\n":
                line, column = line + 1, 0
            else:
                column += 1
            after = text[start:end] if end - start > 1 else ""
            encountered = f'<EOF> after : "{_java_escape(after)}"'
        else:
            bad = text[end - 1]
            encountered = f'"{_java_escape(bad)}" ({_utf16_units(bad)[0]}), after : ""'
        return SelectorParseError(
            "org.apache.rocketmq.filter.parser.TokenMgrError: Lexical error at line "
            f"{line}, column {column}.  Encountered: {encountered}"
        )


# -------------------------------------------------------------------------------------- parser


class _Parser:
    """Recursive descent over the JavaCC grammar, reading tokens no earlier than JavaCC does."""

    def __init__(self, text: str, version: int) -> None:
        self.version = version
        self.lexer = _Lexer(text, _KEYWORDS_5 if version >= 5 else _KEYWORDS_4)
        self.tokens: list[Token] = []

    def peek(self, k: int = 1) -> str:
        while len(self.tokens) < k:
            self.tokens.append(self.lexer.next())
        return self.tokens[k - 1].kind

    def take(self, kind: str) -> Token:
        if self.peek() != kind:
            raise self.fail(f"Was expecting:\n    {_token_image(kind)} ...")
        return self.tokens.pop(0)

    def fail(self, expecting: str) -> SelectorParseError:
        """JavaCC's ParseException text for the next token (its first line is exact)."""
        tok = self.tokens[0]
        line, column = _line_column(self.lexer.text, tok.pos)
        if tok.kind == _EOF:
            encountered = "<EOF>"
        else:
            encountered = f' {_token_image(tok.kind)} "{_java_escape(tok.image)} "'
        return SelectorParseError(
            f'org.apache.rocketmq.filter.parser.ParseException: Encountered "{encountered}" at line {line}, '
            f"column {column}.\n{expecting}"
        )

    # grammar -----------------------------------------------------------------------------------
    def selector(self) -> Expression:
        return self.as_boolean(self.or_expression())

    def as_boolean(self, value: Expression) -> Expression:
        if value.boolean:
            return value
        if isinstance(value, Property):
            return BooleanCast(value)
        raise SelectorParseError(
            "org.apache.rocketmq.filter.parser.ParseException: Expression will not result in a boolean "
            f"value: {_show(value)}"
        )

    def or_expression(self) -> Expression:
        left = self.and_expression()
        while self.peek() == "OR":
            self.take("OR")
            right = self.and_expression()
            left = Or(self.as_boolean(left), self.as_boolean(right))
        return left

    def and_expression(self) -> Expression:
        left = self.equality_expression()
        while self.peek() == "AND":
            self.take("AND")
            right = self.equality_expression()
            left = And(self.as_boolean(left), self.as_boolean(right))
        return left

    def equality_expression(self) -> Expression:
        left = self.comparison_expression()
        while self.peek() in ("=", "<>", "IS"):
            kind = self.peek()
            if kind == "IS" and self.peek(2) == "NULL":
                self.take("IS")
                self.take("NULL")
                left = Equal(left, _NULL)
            elif kind == "=":
                self.take("=")
                left = _create_equal(left, self.comparison_expression())
            elif kind == "<>":
                self.take("<>")
                left = Not(_create_equal(left, self.comparison_expression()))
            else:
                self.take("IS")
                self.take("NOT")
                self.take("NULL")
                left = Not(Equal(left, _NULL))
        return left

    def comparison_expression(self) -> Expression:
        left = self.unary_expression()
        entry = {"NOT", "BETWEEN", "IN", ">", ">=", "<", "<="}
        if self.version >= 5:
            entry |= set(_STRING_TESTS)
        while (kind := self.peek()) in entry:
            if kind in _ORDERINGS:
                self.take(kind)
                left = _create_ordering(kind, left, self.unary_expression())
                continue
            negated = False
            if kind == "NOT":
                second = self.peek(2)
                if second not in entry or second in _ORDERINGS or second == "NOT":
                    raise self.fail('Was expecting one of:\n    "BETWEEN" ...\n    "IN" ...')
                self.take("NOT")
                negated, kind = True, second
            self.take(kind)
            if kind in _STRING_TESTS:
                left = StringTest(kind, left, self.string_literal(), negated)
            elif kind == "BETWEEN":
                low = self.unary_expression()
                self.take("AND")
                high = self.unary_expression()
                left = _create_not_between(left, low, high) if negated else _create_between(left, low, high)
            else:  # IN
                self.take("(")
                values = [self.string_literal()]
                while self.peek() == ",":
                    self.take(",")
                    values.append(self.string_literal())
                self.take(")")
                if not isinstance(left, Property):
                    raise SelectorParseError(
                        "java.lang.RuntimeException: Expected a property for In expression, got: "
                        + _show(left)
                    )
                left = In(left, frozenset(values), negated)
        return left

    def unary_expression(self) -> Expression:
        kind = self.peek()
        if kind == "+":
            self.take("+")
            return self.unary_expression()
        if kind == "-":
            self.take("-")
            return Negate(self.unary_expression())
        if kind == "NOT":
            self.take("NOT")
            return Not(self.as_boolean(self.unary_expression()))
        return self.primary_expression()

    def primary_expression(self) -> Expression:
        kind = self.peek()
        if kind == "STRING":
            return Constant(self.string_literal())
        if kind == "DECIMAL":
            return _decimal(self.take("DECIMAL").image)
        if kind == "FLOAT":
            return _float(self.take("FLOAT").image)
        if kind in ("TRUE", "FALSE", "NULL"):
            self.take(kind)
            return {"TRUE": _TRUE, "FALSE": _FALSE, "NULL": _NULL}[kind]
        if kind == "ID":
            return Property(self.take("ID").image)
        if kind == "(":
            self.take("(")
            inner = self.or_expression()
            self.take(")")
            return inner
        raise self.fail('Was expecting one of:\n    <literal> ...\n    <ID> ...\n    "(" ...')

    def string_literal(self) -> str:
        image = self.take("STRING").image
        return image[1:-1].replace("''", "'")


_TRUE = Constant(True, boolean=True)
_FALSE = Constant(False, boolean=True)
_NULL = Constant(None, boolean=True)


_TOKEN_IMAGES = {
    "DECIMAL": "<DECIMAL_LITERAL>",
    "FLOAT": "<FLOATING_POINT_LITERAL>",
    "STRING": "<STRING_LITERAL>",
}


def _token_image(kind: str) -> str:
    """``tokenImage[kind]`` of the generated parser."""
    if kind in _TOKEN_IMAGES:
        return _TOKEN_IMAGES[kind]
    return "<ID>" if kind == "ID" else f'"{kind}"'


_SYMBOLS = {And: "&&", Or: "||", Equal: "=="}


def _show(expr: Expression) -> str:
    """``toString()`` of the Java expression, as error messages print it."""
    if isinstance(expr, Constant):
        if expr.value is None:
            return "NULL"
        if isinstance(expr.value, bool):
            return "TRUE" if expr.value else "FALSE"
        if isinstance(expr.value, str):
            return "'" + expr.value.replace("'", "''") + "'"
        return java_double_str(expr.value) if isinstance(expr.value, float) else str(int(expr.value))
    if isinstance(expr, Property):
        return expr.name
    if isinstance(expr, BooleanCast):
        return _show(expr.right)
    if isinstance(expr, Not):
        return f"(NOT {_show(expr.right)})"
    if isinstance(expr, Negate):
        return f"(- {_show(expr.right)})"
    if isinstance(expr, (And, Or, Equal)):
        return f"({_show(expr.left)} {_SYMBOLS[type(expr)]} {_show(expr.right)})"
    if isinstance(expr, Ordering):
        return f"({_show(expr.left)} {expr.op} {_show(expr.right)})"
    if isinstance(expr, StringTest):
        return f"({'NOT ' if expr.negated else ''}{expr.op} {_show(expr.right)})"
    if isinstance(expr, In):
        return (
            f"{_show(expr.right)} {'NOT IN' if expr.negated else 'IN'} ( {', '.join(sorted(expr.values))} )"
        )
    return type(expr).__name__


def _java_string(value: Value) -> str:
    """``String.valueOf`` of a constant's value."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return java_double_str(value)
    return str(value if not isinstance(value, int) else int(value))


def _decimal(image: str) -> Constant:
    text = image[:-1] if image[-1] in "lL" else image
    value = int(text)
    if value > _LONG_MAX:
        raise SelectorParseError(f'java.lang.NumberFormatException: For input string: "{text}"')
    return Constant(JavaInt(value) if value <= _INT_MAX else JavaLong(value))


def _float(image: str) -> Constant:
    value = float(image)
    if value > _DOUBLE_MAX_VALUE:
        raise SelectorParseError(
            f"java.lang.RuntimeException: {image} is greater than 1.7976931348623157E308"
        )
    if value < _DOUBLE_MIN_VALUE:
        raise SelectorParseError(f"java.lang.RuntimeException: {image} is less than 4.9E-324")
    return Constant(value)


def _check_less_than_operand(expr: Expression) -> None:
    if isinstance(expr, Constant):
        value = expr.value
        if isinstance(value, (JavaInt, JavaLong, float)) and not isinstance(value, bool):
            return
        raise SelectorParseError(f"java.lang.RuntimeException: Value '{_show(expr)}' cannot be compared.")
    if expr.boolean:
        raise SelectorParseError(f"java.lang.RuntimeException: Value '{_show(expr)}' cannot be compared.")


def _create_ordering(op: str, left: Expression, right: Expression) -> Expression:
    _check_less_than_operand(left)
    _check_less_than_operand(right)
    return Ordering(left, right, op)


def _create_equal(left: Expression, right: Expression) -> Expression:
    for operand in (left, right):
        if isinstance(operand, Constant) and operand.value is None:
            raise SelectorParseError(f"java.lang.RuntimeException: '{_show(operand)}' cannot be compared.")
    if isinstance(left, Constant) and isinstance(right, Constant) and left.boolean and not right.boolean:
        raise SelectorParseError(
            f"java.lang.RuntimeException: '{_show(left)}' cannot be compared with '{_show(right)}'"
        )
    return Equal(left, right)


def _create_between(value: Expression, low: Expression, high: Expression) -> Expression:
    if isinstance(low, Constant) and isinstance(high, Constant):
        if low.value is None or high.value is None:
            raise SelectorParseError(
                "java.lang.RuntimeException: Illegal values of between, values can not be null!"
            )
        try:
            ordered = java_compare(high.value, low.value) >= 0
        except SelectorEvalError as exc:
            raise SelectorParseError(str(exc)) from None
        if not ordered:
            raise SelectorParseError(
                "java.lang.RuntimeException: Illegal values of between, left value"
                f"({_java_string(low.value)}) must less than or equal to right value"
                f"({_java_string(high.value)})"
            )
    return And(_create_ordering(">=", value, low), _create_ordering("<=", value, high))


def _create_not_between(value: Expression, low: Expression, high: Expression) -> Expression:
    return Or(_create_ordering("<", value, low), _create_ordering(">", value, high))


# -------------------------------------------------------------------------------------- API


_PARSE_RECURSION_LIMIT = 12_000

_P = ParamSpec("_P")
_T = TypeVar("_T")


def _on_java_stack(run: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``run`` with the recursion limit raised to about the depth Java's default stack allows (a
    RecursionError then stands for Java's StackOverflowError); the limit is restored after."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _PARSE_RECURSION_LIMIT))
    try:
        return run(*args, **kwargs)
    finally:
        sys.setrecursionlimit(limit)


@lru_cache(maxsize=256)
def compile_selector(text: str, version: int = 5) -> Expression:
    """Parse ``text`` as the given broker line's filter does (``version`` 4 or 5); cached like Java's.

    Nesting is limited by the recursion limit, raised while parsing so that about as many levels of
    parentheses compile as on Java's default stack (300 do there and here; 3000 overflow both; in
    between Java's limit moves with its JIT).
    """
    try:
        return _on_java_stack(lambda: _Parser(text, version).selector())
    except RecursionError:
        raise SelectorParseError("java.lang.StackOverflowError") from None


def evaluate(expr: Expression, props: Props) -> Value:
    """The Java ``evaluate`` result; raises :class:`SelectorEvalError` where Java throws."""
    try:
        return _on_java_stack(expr.evaluate, props)
    except RecursionError:
        raise SelectorEvalError("java.lang.StackOverflowError") from None


def matches(expr: Expression, props: Props) -> bool:
    """What ``ExpressionMessageFilter.isMatchedByCommitLog`` decides: TRUE only, a throw is no match."""
    try:
        return _on_java_stack(expr.evaluate, props) is True
    except (SelectorEvalError, RecursionError):  # a throw, or a Java stack overflow
        return False
