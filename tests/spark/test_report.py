"""``rmqtwin spark report``: one self-contained page, opened in headless Chromium; every plot renders
and has data."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.chromium import dump_dom
from tests.spark.conftest import Ingested

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]


def test_report_renders_in_chromium_with_data_in_every_plot(
    spark: Any, ingested: Ingested, tmp_path: Path
) -> None:
    from rmqtwin.spark.report import write_report

    page = tmp_path / "report.html"
    data = write_report(spark, ingested.out, page, json_out=tmp_path / "report.json")
    text = page.read_text()
    assert not re.search(r'(src|href)="(?!data:)', text)  # nothing loaded from anywhere
    assert [(s["input"], s["reason"]) for s in data["skipped"]] == [("d.rmqcap", "truncated last record")]
    points = [int(p) for p in re.findall(r'<figure data-points="(\d+)"', text)]
    assert len(points) == 7 and all(points), points
    dom = dump_dom(page)
    assert 'data-plots-rendered="7/7"' in dom
    assert "truncated last record" in dom
    assert "TOPIC_NOT_EXIST" in dom
