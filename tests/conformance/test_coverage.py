"""docs/coverage.md is the generated coverage matrix of this checkout."""

from __future__ import annotations

from rmqtwin.conformance.coverage import DOCS_COVERAGE, coverage_markdown


def test_published_coverage_matrix_is_current() -> None:
    assert DOCS_COVERAGE.read_text(encoding="utf-8") == coverage_markdown(), (
        "docs/coverage.md is stale: run `rmqtwin conformance coverage`"
    )


def test_matrix_lists_codes_the_twin_does_not_handle() -> None:
    text = coverage_markdown()
    assert "| 28 | GET_BROKER_RUNTIME_INFO | handled | not supported |" in text
    assert "| 13 | QUERY_BROKER_OFFSET | not supported | not supported |" in text
    assert "| messageDelayLevel | honoured |" in text
