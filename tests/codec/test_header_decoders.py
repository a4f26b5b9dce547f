"""The generated per-class header decoders decode exactly as the field table says, strict and lenient."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtwin.codec import headers as h

ALL_CLASSES = sorted({*h.REQUEST_HEADERS.values(), *h.RESPONSE_HEADERS.values()}, key=lambda c: c.__name__)

_TEXT = st.one_of(
    st.from_regex(r"[+-]?[0-9]{1,25}", fullmatch=True),
    st.sampled_from(["", " 1", "1 ", "1_0", "0x10", "٣", "²", "true", "TRUE", "false", "1.5", "-0", "1e3"]),
    st.integers(min_value=-(2**64), max_value=2**64).map(str),
    st.text(max_size=8),
)


def reference_decode(cls: type[h.CommandCustomHeader], ext: dict[str, str], strict: bool) -> Any:
    """The plain reading of the field table: one field at a time, through the codec's value parser."""
    values: dict[str, Any] = {}
    for spec in h.header_fields(cls):
        text = ext.get(spec.wire)
        if text is None:
            if spec.required:
                if strict:
                    raise h.HeaderFieldError.missing(spec.wire)
                values[spec.attr] = None
            else:
                values[spec.attr] = spec.default
            continue
        try:
            values[spec.attr] = h._parse(spec.kind, text)
        except h._BadValueError:
            if strict:
                raise h.HeaderFieldError.unparsable(spec.wire, text) from None
            values[spec.attr] = spec.default
    return cls(**values)


@st.composite
def _cases(draw: st.DrawFn) -> tuple[type[h.CommandCustomHeader], dict[str, str]]:
    cls = draw(st.sampled_from(ALL_CLASSES))
    wires = [spec.wire for spec in h.header_fields(cls)]
    present = draw(st.lists(st.sampled_from(wires), unique=True)) if wires else []
    return cls, {wire: draw(_TEXT) for wire in present}


def _outcome(fn: Any) -> Any:
    try:
        return ("ok", fn())
    except h.HeaderFieldError as exc:
        return ("error", exc.field, exc.remark)


@settings(max_examples=200, deadline=None)
@given(_cases(), st.booleans())
def test_generated_decoder_matches_the_field_table(case: Any, strict: bool) -> None:
    cls, ext = case
    assert _outcome(lambda: h.from_ext_fields(cls, ext, strict=strict)) == _outcome(
        lambda: reference_decode(cls, ext, strict)
    )


def test_huge_numbers_are_unparsable_not_a_crash() -> None:
    ext = {"topic": "T", "queueId": "9" * 5000}
    assert _outcome(lambda: h.from_ext_fields(h.GetMaxOffsetRequestHeader, ext))[0] == "error"
    assert h.from_ext_fields(h.GetMaxOffsetRequestHeader, ext, strict=False).queue_id is None
    padded = {"topic": "T", "queueId": "0" * 30 + "7"}  # Integer.parseInt accepts leading zeros
    assert h.from_ext_fields(h.GetMaxOffsetRequestHeader, padded).queue_id == 7
