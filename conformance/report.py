"""The conformance report: ``report.json`` (everything), ``report.html`` (side by side) and ``junit.xml``.

The HTML shows one verdict line per candidate on top, then per scenario and step a table: each
observed path with both reference runs and every candidate side by side. A candidate cell that
differs is highlighted; a row the two reference runs disagree on is noise, shown struck through
and not compared.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

from rmqtwin.conformance import diffy
from rmqtwin.conformance.catalog import ScenarioRun
from rmqtwin.conformance.runner import CatalogRun, ScenarioResult

__all__ = ["report_data", "write_reports"]


def _step_seconds(result: ScenarioResult, label: str) -> dict[str, Any]:
    """How long a step took on each run (where a run's minutes go)."""

    def of(run: ScenarioRun) -> float | None:
        return next((round(s.seconds, 1) for s in run.steps if s.label == label), None)

    return {
        "reference": [of(r) for r in result.reference_runs],
        **{name: of(r) for name, r in result.candidate_runs.items()},
    }


def report_data(run: CatalogRun) -> dict[str, Any]:
    scenarios = []
    for result in run.results:
        steps = []
        for step in result.steps:
            any_cmp = next(iter(step.comparisons.values()), None)
            if any_cmp is None:
                continue
            first, second = any_cmp.reference
            rows = []
            paths = sorted(
                set(first) | set(second) | {p for c in step.comparisons.values() for p in c.candidate}
            )
            noise = set(any_cmp.noise)
            for path in paths:
                rows.append(
                    {
                        "path": path,
                        "reference": [first.get(path, diffy.ABSENT), second.get(path, diffy.ABSENT)],
                        "candidates": {
                            name: cmp.candidate.get(path, diffy.ABSENT)
                            for name, cmp in step.comparisons.items()
                        },
                        "noise": path in noise,
                        "differs": [name for name, cmp in step.comparisons.items() if path in cmp.differing],
                    }
                )
            steps.append({"label": step.label, "rows": rows, "seconds": _step_seconds(result, step.label)})
        scenarios.append(
            {
                "name": result.scenario.name,
                "description": result.scenario.description,
                "verdicts": {name: result.verdict(name) for name in run.candidates},
                "errors": {
                    **{
                        f"{run.reference} (run {i + 1})": r.error
                        for i, r in enumerate(result.reference_runs)
                        if r.error
                    },
                    **{name: r.error for name, r in result.candidate_runs.items() if r.error},
                },
                "seconds": {
                    "reference": [round(r.seconds, 1) for r in result.reference_runs],
                    **{name: round(r.seconds, 1) for name, r in result.candidate_runs.items()},
                },
                "steps": steps,
            }
        )
    return {
        "reference": run.reference,
        "client": run.client,
        "candidates": run.candidates,
        "verdicts": {name: run.verdict_line(name) for name in run.candidates},
        "ok": run.ok,
        "seconds": round(run.seconds, 1),
        "normalisers": {name: text for name, (text, _) in diffy.NORMALISERS.items()},
        "scenarios": scenarios,
        "skipped": dict(run.skipped),
    }


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em} h2{font-size:1.15em;margin-top:1.6em} h3{font-size:1em;margin:.8em 0 .3em}
.verdict{font-weight:600;padding:.3em .6em;margin:.2em 0;border-radius:4px}
.same{background:#e5f5e0} .differs{background:#fde0dd} .skipped{background:#eee}
table{border-collapse:collapse;font-size:.82em;margin-bottom:.6em}
td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top;max-width:28em;overflow-wrap:anywhere}
th{background:#f3f3f3} td.diff{background:#fcbba1;font-weight:600}
tr.noise td{color:#999;text-decoration:line-through}
.tag{font-size:.8em;padding:0 .4em;border-radius:3px;margin-left:.4em}
.error{color:#a50f15;white-space:pre-wrap;font-family:monospace;font-size:.85em}
"""


def render_html(data: dict[str, Any]) -> str:
    esc = html.escape
    names: list[str] = data["candidates"]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'><title>rmqtwin conformance report</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>Conformance: {esc(', '.join(names))} against {esc(data['reference'])} "
        f"(client {esc(data['client'])})</h1>",
    ]
    for name in names:
        line = data["verdicts"][name]
        css = "same" if " same as " in line else "differs"
        out.append(f"<div class='verdict {css}' data-target='{esc(name)}'>{esc(line)}</div>")
    out.append(
        "<p>The reference ran every scenario twice; values the two runs disagree on are noise "
        "(struck through, not compared). Normalisers: "
        + "; ".join(f"<b>{esc(k)}</b>: {esc(v)}" for k, v in data["normalisers"].items())
        + "</p>"
    )
    for name, reason in data["skipped"].items():
        out.append(f"<div class='verdict skipped'>{esc(name)}: skipped, {esc(reason)}</div>")
    for scenario in data["scenarios"]:
        tags = "".join(
            f"<span class='tag {esc(v)}'>{esc(n)}: {esc(v)}</span>" for n, v in scenario["verdicts"].items()
        )
        out.append(f"<h2 id='{esc(scenario['name'])}'>{esc(scenario['name'])}{tags}</h2>")
        out.append(f"<p>{esc(scenario['description'])}</p>")
        for who, error in scenario["errors"].items():
            out.append(f"<div class='error'>{esc(who)}: {esc(error)}</div>")
        for step in scenario["steps"]:
            noise = sum(row["noise"] for row in step["rows"])
            differing = sum(bool(row["differs"]) for row in step["rows"])
            out.append(
                f"<h3>{esc(step['label'])} <small>({len(step['rows'])} values, {differing} differing, "
                f"{noise} noise)</small></h3>"
            )
            out.append("<table><tr><th>path</th><th>reference 1</th><th>reference 2</th>")
            out.extend(f"<th>{esc(n)}</th>" for n in names)
            out.append("</tr>")
            for row in step["rows"]:
                css = " class='noise'" if row["noise"] else ""
                cells = [f"<td>{esc(row['path'])}</td>"]
                cells.extend(f"<td>{esc(v)}</td>" for v in row["reference"])
                for n in names:
                    diff = " class='diff'" if n in row["differs"] else ""
                    cells.append(f"<td{diff}>{esc(row['candidates'].get(n, diffy.ABSENT))}</td>")
                out.append(f"<tr{css}>{''.join(cells)}</tr>")
            out.append("</table>")
    out.append("</body></html>")
    return "\n".join(out)


def render_junit(data: dict[str, Any]) -> str:
    suites = ET.Element("testsuites", name="rmqtwin conformance")
    for name in data["candidates"]:
        cases = data["scenarios"]
        failures = sum(s["verdicts"][name] != "same" for s in cases)
        suite = ET.SubElement(
            suites,
            "testsuite",
            name=f"{name} vs {data['reference']}",
            tests=str(len(cases) + len(data["skipped"])),
            failures=str(failures),
            skipped=str(len(data["skipped"])),
        )
        for skipped, reason in data["skipped"].items():
            case = ET.SubElement(suite, "testcase", classname=name, name=skipped)
            ET.SubElement(case, "skipped", message=reason)
        for scenario in cases:
            case = ET.SubElement(suite, "testcase", classname=name, name=scenario["name"])
            if scenario["verdicts"][name] != "same":
                lines = [
                    f"{step['label']}: {row['path']}: reference {row['reference'][0]!r}, "
                    f"{name} {row['candidates'][name]!r}"
                    for step in scenario["steps"]
                    for row in step["rows"]
                    if name in row["differs"]
                ]
                failure = ET.SubElement(case, "failure", message=f"differs from {data['reference']}")
                failure.text = "\n".join(lines)
    return ET.tostring(suites, encoding="unicode")


def write_reports(run: CatalogRun, out: Path) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    data = report_data(run)
    (out / "report.json").write_text(json.dumps(data, indent=1, sort_keys=False), encoding="utf-8")
    (out / "report.html").write_text(render_html(data), encoding="utf-8")
    (out / "junit.xml").write_text(render_junit(data), encoding="utf-8")
    return data
