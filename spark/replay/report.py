"""The replay's HTML report: one verdict line, the plots people would rather see than read, divergences.

Plots are matplotlib PNGs inlined as data URIs, so the report is one self-contained file. Read from the
Parquet rows the tasks wrote.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from rmqtwin.spark.replay.job import ReplaySummary

__all__ = ["Lateness", "lateness", "write_report"]

_LOST = ("failed", "no-answer", "not-replayed")
_NUMBER = r"\d+"
"""Divergences group by their detail with numbers masked: one row for "queueOffset '7' → '9'" whatever
the offsets, with an example."""


def _png(fig: object) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")  # type: ignore[attr-defined]
    import matplotlib.pyplot as plt

    plt.close(fig)  # type: ignore[arg-type]
    return '<img alt="plot" src="data:image/png;base64,' + base64.b64encode(buf.getvalue()).decode() + '">'


@dataclass(frozen=True)
class Lateness:
    """p50 and p99 (ms) of the scheduled requests' lateness, and of what it is made of."""

    total: tuple[float, float]
    """Issued (encoded into the connection's output) minus scheduled."""
    replayer: tuple[float, float]
    """The replayer's own lateness: ``total`` minus the time the target held the request back once due
    (its output full because the target did not read, or an answer the request waits for not come)."""
    target: tuple[float, float]
    """How long the target held requests back: before they were issued, and then in the output until
    their last byte went into the socket."""
    requests: int
    tail: tuple[float, float, float] | None = None
    """Of the replayer's own lateness of its latest 1% (the requests it made the latest), the mean ms
    the replay loop was busy (its CPU time), waited for a core (runnable, not running: the machine
    busy), and neither (asleep past the request's time); None for rows that do not tell."""


def lateness(rows: pd.DataFrame) -> Lateness | None:
    """The lateness of the scheduled requests, None when nothing had a schedule (``max``)."""
    timed = rows.dropna(subset=["scheduled_ms", "actual_ms"]).reset_index(drop=True)  # (parts concatenated)
    if timed.empty:
        return None
    held = timed["held_ms"].fillna(0.0)
    total = (timed["actual_ms"] - timed["scheduled_ms"]).clip(lower=0)
    own = (total - held).clip(lower=0)
    in_output = (timed["written_ms"] - timed["actual_ms"]).fillna(0.0).clip(lower=0)
    by_target = held + in_output

    def p(values: pd.Series) -> tuple[float, float]:
        return float(values.quantile(0.5)), float(values.quantile(0.99))

    tail = None
    if "cpu_ms" in timed and timed["cpu_ms"].notna().any():
        mine = own.nlargest(max(1, len(own) // 100))
        waited = timed["runq_ms"][mine.index].fillna(0.0).clip(lower=0).clip(upper=mine)
        busy = timed["cpu_ms"][mine.index].fillna(0.0).clip(lower=0).clip(upper=mine - waited)
        tail = (float(busy.mean()), float(waited.mean()), float((mine - waited - busy).mean()))
    return Lateness(p(total), p(own), p(by_target), len(timed), tail)


def _rate_plot(rows: pd.DataFrame) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    issued = rows["actual_ms"].dropna() / 1000
    fig, ax = plt.subplots(figsize=(8, 3))
    if issued.empty:
        ax.text(0.5, 0.5, "nothing was issued", ha="center")
        return _png(fig)
    end = max(float(issued.max()), float((rows["scheduled_ms"].dropna() / 1000).max() or 0)) + 1e-3
    width = max(end / 60, 0.01)
    bins = np.arange(0, end + width, width).tolist()
    ax.hist(issued, bins=bins, histtype="step", label="achieved", linewidth=1.5)
    scheduled = rows["scheduled_ms"].dropna() / 1000
    if not scheduled.empty:
        ax.hist(scheduled, bins=bins, histtype="step", label="requested", linestyle="--")
    ax.set_xlabel("seconds after the start")
    ax.set_ylabel(f"requests per {width:.2f} s")
    ax.set_title("Achieved vs requested rate")
    ax.legend()
    return _png(fig)


def _latency_plot(rows: pd.DataFrame) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    answered = rows.dropna(subset=["recorded_latency_ms", "replayed_latency_ms"])
    by_code = answered.groupby("code_name")[["recorded_latency_ms", "replayed_latency_ms"]].median()
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.35 * len(by_code) + 1)))
    if by_code.empty:
        ax.text(0.5, 0.5, "no request was answered in both", ha="center")
        return _png(fig)
    by_code = by_code.sort_index()
    ys = range(len(by_code))
    ax.barh([y - 0.2 for y in ys], by_code["recorded_latency_ms"], height=0.4, label="recorded")
    ax.barh([y + 0.2 for y in ys], by_code["replayed_latency_ms"], height=0.4, label="replayed")
    ax.set_yticks(list(ys), list(by_code.index))
    ax.set_xlabel("median latency, ms")
    ax.set_title("Latency recorded vs replayed per request code")
    ax.legend()
    return _png(fig)


def _lateness_facts(late: Lateness | None) -> list[list[object]]:
    if late is None:
        return [["lateness p50 / p99", "n/a (max speed)"]]

    def ms(pair: tuple[float, float]) -> str:
        return f"{pair[0]:.2f} ms / {pair[1]:.2f} ms"

    facts: list[list[object]] = [
        ["lateness p50 / p99 (issued - scheduled)", ms(late.total)],
        ["of which the replayer's own, p50 / p99", ms(late.replayer)],
        ["held back by the target, p50 / p99 (not reading, or an awaited answer)", ms(late.target)],
    ]
    if late.tail is not None:
        facts.append(
            [
                "the replayer's own lateness of its latest 1%, mean: busy / waiting for a core / asleep",
                " / ".join(f"{v:.2f} ms" for v in late.tail),
            ]
        )
    return facts


def _table(headers: list[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def write_report(summary: ReplaySummary, path: Path, *, speed: float | None) -> None:
    import pandas as pd

    parts = sorted(Path(summary.out, "requests").glob("part-*.parquet"))
    rows = pd.concat([pd.read_parquet(p) for p in parts]) if parts else pd.DataFrame()
    verdict = summary.verdict_line()
    sections = [f'<h1 id="verdict">{html.escape(verdict)}</h1>']
    late = lateness(rows) if not rows.empty else None
    facts: list[list[object]] = [
        ["requests", summary.requests],
        ["connections", summary.connections],
        ["speed", "max" if speed is None else f"{speed:g}x"],
        ["wall time", f"{summary.wall_s:.1f} s"],
        *_lateness_facts(late),
        ["RAW records skipped", summary.raw_skipped],
        ["undecodable records skipped", summary.undecoded_skipped],
    ]
    facts += [[f"verdict {name}", count] for name, count in sorted(summary.verdicts.items())]
    sections.append(_table(["", ""], facts))
    if not rows.empty:
        sections.append(_rate_plot(rows))
        sections.append(_latency_plot(rows))
        diverging = rows[rows["verdict"] == "differs"]
        groups = []
        shapes = diverging["detail"].fillna("").str.replace(_NUMBER, "N", regex=True)
        for (code, shape), group in diverging.groupby([diverging["code_name"], shapes]):
            first = group.iloc[0]
            example = f"connection {first['conn_id']} request {first['seq']}: {first['detail']}"
            groups.append([code, shape, len(group), example])
        groups.sort(key=lambda g: -int(str(g[2])))
        sections.append("<h2>Divergences by code and remark</h2>")
        sections.append(
            _table(["code", "what differs (numbers as N)", "count", "example"], groups)
            if groups
            else "<p>none</p>"
        )
        lost = rows[rows["verdict"].isin(_LOST)]
        sections.append("<h2>Not replayed or not answered</h2>")
        if lost.empty:
            sections.append("<p>none</p>")
        else:
            counted = lost.groupby(["verdict", "detail"]).size().reset_index(name="count")
            sections.append(_table(["verdict", "why", "count"], counted.values.tolist()))
    if summary.queues:
        sections.append("<h2>Pulled messages per queue</h2>")
        sections.append(
            _table(
                ["group", "topic", "queue", "recorded", "replayed", "same bodies in order"],
                [
                    [
                        q["group"],
                        q["topic"],
                        q["queue_id"],
                        q["recorded_messages"],
                        q["replayed_messages"],
                        q["same_bodies_in_order"],
                    ]
                    for q in summary.queues
                ],
            )
        )
    if summary.broker_requests:
        sections.append("<h2>Requests the target sent to replayed clients</h2>")
        sections.append(_table(["code", "count"], sorted(summary.broker_requests.items())))
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}"
    )
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>rmqtwin replay</title>"
        f"<style>{style}</style></head><body>{''.join(sections)}</body></html>"
    )
    path.write_text(page, encoding="utf-8")
