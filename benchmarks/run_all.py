"""Every benchmark of issue 17 in one run, then its table: each figure, its reference from the same run,
the ratio, the target, met or MISSED.

    .venv/bin/python benchmarks/run_all.py [--quick] [--only codec,store,broker,proxy] [--profile DIR]
    make bench

Each benchmark runs in its own process (its full output is printed as it goes) and hands its figures
over as JSON. Real Apache RocketMQ and the Java clients are needed for ``broker`` and ``proxy``. The
machine's load is printed beside every benchmark's figures: compare rows of one run, not across runs.
``--quick`` is a smoke run (short loads, small counts): its figures are not the ones to report.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from common import Figures, load_note

HERE = Path(__file__).resolve().parent

BENCHES: dict[str, tuple[list[str], list[str]]] = {
    # name: (full arguments, --quick arguments)
    "codec": ([], ["--quick"]),
    "store": ([], ["--messages", "20000", "--sync-messages", "5000"]),
    "broker": ([], ["--seconds", "8", "--drain", "5000"]),
    "proxy": ([], ["--seconds", "8", "--rounds", "1"]),
}


@dataclass(frozen=True)
class Row:
    """One line of the table: ``value`` against ``reference`` (both from the same run)."""

    figure: str
    value: Callable[[dict[str, Figures]], float]
    reference: Callable[[dict[str, Figures]], float] | None
    reference_name: str
    target: str
    met: Callable[[float, float | None], bool]
    unit: str
    needs: str


def _f(bench: str, key: str) -> Callable[[dict[str, Figures]], float]:
    return lambda figures: float(figures[bench][key] or 0.0)


def _records_per_s(figures: dict[str, Figures], raw_key: str) -> float:
    """The disk's raw rate in stored records of the benchmark's size."""
    store = figures["store"]
    return float(store[raw_key] or 0.0) * 1e6 / float(store["record bytes"] or 1)


def _ratio(value: float, reference: float | None) -> float:
    return value / reference if reference else float("inf")


ROWS = [
    Row(
        "send TPS, Java producer, 1 KiB, sync, 16 thr",
        _f("broker", "twin send tps"),
        _f("broker", "real send tps"),
        "real 5.5.0",
        ">= 1.5x",
        lambda v, r: _ratio(v, r) >= 1.5,
        "msg/s",
        "broker",
    ),
    Row(
        "p99 send latency",
        _f("broker", "twin p99 ms"),
        _f("broker", "real p99 ms"),
        "real 5.5.0",
        "<= 0.5x",
        lambda v, r: _ratio(v, r) <= 0.5,
        "ms",
        "broker",
    ),
    *(
        Row(
            f"server CPU-s per 1k messages {what}",
            _f("broker", f"twin cpu s/1k {what}"),
            _f("broker", f"real cpu s/1k {what}"),
            "real 5.5.0",
            "<= 0.5x",
            lambda v, r: _ratio(v, r) <= 0.5,
            "s",
            "broker",
        )
        for what in ("sent", "consumed")
    ),
    Row(
        "proxy + capture TPS (paired median ratio)",
        _f("proxy", "proxy tps"),
        _f("proxy", "direct tps"),
        "direct",
        ">= 0.95x",
        lambda v, r: True,  # judged on the paired ratio below, not the ratio of medians
        "msg/s",
        "proxy",
    ),
    Row(
        "proxy + capture p50 added",
        _f("proxy", "p50 added ms"),
        _f("proxy", "direct p50 ms"),
        "direct p50",
        "<= +0.1 ms",
        lambda v, r: v <= 0.1,
        "ms",
        "proxy",
    ),
    Row(
        "proxy CPU per message (with capture)",
        _f("proxy", "cpu us"),
        _f("proxy", "forward-only cpu us"),
        "forward-only",
        "<= 15 us",
        lambda v, r: v <= 15,
        "us",
        "proxy",
    ),
    Row(
        "proxy metrics TPS (paired, forward-only ref)",
        _f("proxy", "metrics tps ratio"),
        None,
        "forward-only proxy, same round",
        ">= 0.97x",
        lambda v, r: v >= 0.97,
        "x",
        "proxy",
    ),
    Row(
        "proxy fault rules, 10 idle: added per frame",
        lambda figures: float(figures["proxy"]["rule matching ns per frame"] or 0.0) / 1000,
        None,
        "no rules, in process",
        "<= 2 us",
        lambda v, r: v <= 2,
        "us",
        "proxy",
    ),
    Row(
        "twin metrics: CPU-s per 1k sent",
        _f("broker", "twin metrics cpu s/1k sent"),
        _f("broker", "twin cpu s/1k sent"),
        "twin without metrics",
        "<= 1.03x",
        lambda v, r: _ratio(v, r) <= 1.03,
        "s",
        "broker",
    ),
    Row(
        "store ASYNC_FLUSH append, 1 KiB, one thread",
        _f("store", "async msgs/s"),
        lambda figures: _records_per_s(figures, "raw MB/s"),
        "raw write+fsync, in records",
        ">= 200k msg/s",
        lambda v, r: v >= 200_000,
        "msg/s",
        "store",
    ),
    Row(
        "store SYNC_FLUSH group commit, 1 KiB",
        _f("store", "sync msgs/s"),
        lambda figures: _records_per_s(figures, "raw sync MB/s"),
        "raw write+fsync, in records",
        ">= 100k msg/s",
        lambda v, r: v >= 100_000,
        "msg/s",
        "store",
    ),
    Row(
        "binary (ROCKETMQ) header decode, SEND_V2 req",
        _f("codec", "decode SEND_MESSAGE_V2 request (binary) us"),
        _f("codec", "decode SEND_MESSAGE_V2 request (JSON) us"),
        "JSON header",
        "<= 2 us",
        lambda v, r: v <= 2,
        "us",
        "codec",
    ),
    Row(
        "JSON header decode, SEND_V2 req",
        _f("codec", "decode SEND_MESSAGE_V2 request (JSON) us"),
        None,
        "",
        "<= 2 us",
        lambda v, r: v <= 2,
        "us",
        "codec",
    ),
    Row(
        "pull body decode (32 x 1 KiB)",
        _f("codec", "pull body MB/s"),
        None,
        "",
        ">= 300 MB/s",
        lambda v, r: v >= 300,
        "MB/s",
        "codec",
    ),
]


def run(name: str, extra: list[str], out: Path) -> Figures | None:
    """One benchmark in its own interpreter; its figures, or None (with the reason printed)."""
    command = [sys.executable, str(HERE / f"bench_{name}.py"), *extra, "--json", str(out)]
    print(f"\n===== bench_{name}: {' '.join(command[1:])}  ({load_note()})", flush=True)
    started = time.monotonic()
    code = subprocess.call(command)
    print(f"===== bench_{name}: exit {code} after {time.monotonic() - started:.0f} s", flush=True)
    if code != 0 or not out.exists():
        return None
    figures: Figures = json.loads(out.read_text())
    return figures


def _num(value: float, unit: str) -> str:
    if unit in ("msg/s", "MB/s") and value >= 100:
        return f"{value:,.0f} {unit}"
    return f"{value:.3g} {unit}"


def table(figures: dict[str, Figures]) -> list[str]:
    lines = [
        f"{'figure':46} {'rmqtwin':>16} {'reference, same run':>34} {'ratio':>8}  {'target':14} result",
    ]
    for row in ROWS:
        if row.needs not in figures:
            lines.append(f"{row.figure:46} {'not run':>16}")
            continue
        try:
            value = row.value(figures)
            reference = row.reference(figures) if row.reference else None
        except KeyError as missing:  # a benchmark run without the part that gives this figure
            lines.append(f"{row.figure:46} {'not run':>16}  ({missing} missing)")
            continue
        ref_text = f"{row.reference_name}: {_num(reference, row.unit)}" if reference is not None else ""
        ratio = f"{_ratio(value, reference):.2f}x" if reference else ""
        met = row.met(value, reference)
        if row.needs == "proxy" and row.figure.startswith("proxy + capture TPS"):
            paired = float(figures["proxy"]["tps ratio"] or 0.0)
            ratio, met = f"{paired:.2f}x", paired >= 0.95
        lines.append(
            f"{row.figure:46} {_num(value, row.unit):>16} {ref_text:>34} {ratio:>8}  {row.target:14} "
            f"{'met' if met else 'MISSED'}"
        )
    lines.append("load while each ran: " + "; ".join(f"{k}: {v.get('load')}" for k, v in figures.items()))
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a smoke run: short loads, small counts")
    parser.add_argument(
        "--only", default=",".join(BENCHES), help="comma-separated subset of " + ",".join(BENCHES)
    )
    parser.add_argument("--profile", help="py-spy the twin and the proxy under load; raw profiles go here")
    args = parser.parse_args(argv)
    figures: dict[str, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="bench-all-") as tmp:
        for name in args.only.split(","):
            full, quick = BENCHES[name]
            extra = list(quick if args.quick else full)
            if args.profile and name in ("broker", "proxy"):
                extra += ["--profile", args.profile]
            result = run(name, extra, Path(tmp) / f"{name}.json")
            if result is not None:
                figures[name] = result
    print("\n" + "\n".join(table(figures)))
    return 0 if len(figures) == len(args.only.split(",")) else 1


if __name__ == "__main__":
    sys.exit(main())
