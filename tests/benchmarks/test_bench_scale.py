"""bench_scale's verdicts and plots, on figures given here (the curves themselves are measured by the
benchmark, never by tests), and the curves' plots committed under docs/ open in headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

from tests.chromium import dump_dom

ROOT = Path(__file__).resolve().parents[2]
PLOTS = sorted((ROOT / "docs" / "performance").glob("*.png"))


@pytest.fixture(scope="module")
def bench_scale() -> Iterator[ModuleType]:
    import importlib

    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(ROOT / "benchmarks"))  # the scripts import their common module
        yield importlib.import_module("bench_scale")


def curve(twin: tuple[float, float], real: tuple[float, float]) -> dict[str, dict[int, dict[str, float]]]:
    return {
        "twin": {100: {"RSS MiB": twin[0]}, 5000: {"RSS MiB": twin[1]}},
        "real": {100: {"RSS MiB": real[0]}, 5000: {"RSS MiB": real[1]}},
    }


def test_growth_verdicts(bench_scale: ModuleType) -> None:
    def verdict(name: str, twin: tuple[float, float], real: tuple[float, float]) -> str:
        [line] = bench_scale.growth_verdicts(name, curve(twin, real))
        return str(line)

    assert "flat for the twin" in verdict("connections", (60, 70), (600, 900))
    assert "flat for the twin" in verdict("connections", (60, 30), (600, 900))  # shrinking is noise
    assert "grows no faster than real" in verdict("connections", (60, 180), (600, 1500))
    faster = verdict("connections", (60, 600), (600, 700))
    assert "grows faster than real: a Twisted transport" in faster
    assert "above real's (+540 against +100)" in faster
    assert "below real's (+60 against +100)" in verdict("connections", (30, 90), (600, 700))
    assert "not explained yet" in verdict("unknown", (60, 600), (600, 700))
    [single] = bench_scale.growth_verdicts("x", {"twin": {1: {"a": 1.0}}, "real": {1: {"a": 1.0}}})
    assert "fewer than two points" in single


def test_from_json_draws_tables_and_plots_again(
    bench_scale: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import matplotlib.image

    parked = {"twin": {0: {"RSS MiB": 80.0}, 10_000: {"RSS MiB": 120.0}}, "real": {0: {"RSS MiB": 700.0}}}
    bench_scale.save("connections", curve((60, 80), (600, 700)), tmp_path)
    bench_scale.save("parked", parked, tmp_path)
    assert bench_scale.load("parked", tmp_path) == parked
    assert bench_scale.main(["--from-json", "--only", "connections", "--out", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert "RSS MiB: twin x1.33 (60 -> 80), real x1.17 (600 -> 700)" in printed
    assert "measured in" not in printed
    for name in ("connections", "parked"):  # parked's x starts at 0: a linear axis
        height, width, _ = matplotlib.image.imread(tmp_path / f"{name}.png").shape
        assert height > 100 and width > 100


@pytest.mark.skipif(not PLOTS, reason="no plots committed under docs/performance/")
def test_committed_plots_render_in_chromium(tmp_path: Path) -> None:
    for png in PLOTS:
        assert png.stat().st_size < 150_000, f"{png.name}: keep committed plots small"
    images = "".join(f'<img src="{png.as_uri()}">' for png in PLOTS)
    page = tmp_path / "plots.html"
    page.write_text(
        f"<html><body>{images}<script>window.onload = () => document.body.dataset.rendered = "
        "[...document.images].filter(i => i.complete && i.naturalWidth > 0).length + '/' + "
        "document.images.length;</script></body></html>"
    )
    dom = dump_dom(page)
    assert f'data-rendered="{len(PLOTS)}/{len(PLOTS)}"' in dom, dom[-500:]
