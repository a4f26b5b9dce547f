"""What the benchmarks share: process CPU and memory from /proc, the machine's load, figures handed to
``run_all.py`` as JSON, and py-spy profiles of a running server summarised to their top entries."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TypeVar

Figures = dict[str, float | int | str | None]


def cpu_seconds(pids: Iterable[int], *, children: bool = False) -> float:
    """User + system CPU time of the processes so far (all their threads), summed; with ``children``
    also that of their children that exited and were reaped (a JVM stops idle Python workers after a
    minute, and their CPU must not drop out of a later difference)."""
    ticks = os.sysconf("SC_CLK_TCK")
    last = 15 if children else 13
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:last]) / ticks
    return total


def machine_cpu_seconds() -> tuple[float, float]:
    """(busy, idle) CPU seconds of the whole machine so far, all CPUs summed (/proc/stat): what every
    process took, whoever it was, against what was left. Steal counts as busy: the CPU was not ours."""
    ticks = os.sysconf("SC_CLK_TCK")
    fields = [int(f) for f in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / ticks, (idle + iowait) / ticks


def rss_kib(pids: Iterable[int], field: str = "VmRSS") -> int:
    """Resident set size of the processes, summed (``VmRSS`` from /proc; ``RssAnon`` leaves out pages
    of mapped files, such as a commitlog, and counts only the process's own memory)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith(f"{field}:"):
                        total += int(line.split()[1])
        except OSError:
            continue
    return total


def process_tree(root: int | None = None) -> list[int]:
    """``root`` (default: this process) and all its descendants, from /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            ppid = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo += children.get(pid, [])
    return out


class PeakRss:
    """Samples RSS every 200 ms in a thread while the load runs."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, rss_kib(self.pids()))
            self._stop.wait(0.2)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def fmt(value: object) -> str:
    """A figure for a table: floats with thousands separators and two decimals."""
    if isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


def print_table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """A header and rows, each column right-aligned to its widest cell (figures through ``fmt``)."""
    texts = [list(columns), *([fmt(cell) for cell in row] for row in rows)]
    widths = [max(len(line[i]) for line in texts) for i in range(len(columns))]
    for line in texts:
        print("  ".join(cell.rjust(width) for cell, width in zip(line, widths, strict=True)))


Row = Mapping[str, float | int | str]
"""One measured run's figures by column."""


def per_round(base: Sequence[Row], other: Sequence[Row], key: str, *, added: bool = False) -> list[float]:
    """Each round's figure against the same round's baseline, as a ratio (or, ``added``, a difference).
    Load that changes between rounds moves both runs of a round, so these are steadier than a ratio
    of medians on a shared machine."""
    pairs = [(float(b[key]), float(o[key])) for b, o in zip(base, other, strict=True)]
    return [o - b if added else o / max(b, 1e-9) for b, o in pairs]


T = TypeVar("T")


def alternated(measure: Callable[[bool], T], rounds: int) -> list[tuple[T, T]]:
    """``rounds`` pairs (without, with) of ``measure(False)`` and ``measure(True)``, the order alternating
    from round to round: a neighbour's burst hurts both of a pair alike, and neither side always meets
    the machine as the other left it."""
    pairs = []
    for i in range(rounds):
        first = bool(i % 2)
        one, other = measure(first), measure(not first)
        pairs.append((other, one) if first else (one, other))
    return pairs


def by_round(values: Sequence[float], spec: str, *, unit: str = "", note: str = "") -> str:
    """Paired rounds as the benchmarks print them, each round then the median: ``1.076x, 0.860x
    (median 0.968x)``; ``note`` closes the parenthesis (a target's verdict)."""
    each = ", ".join(f"{v:{spec}}{unit}" for v in values)
    return f"{each} (median {statistics.median(values):{spec}}{unit}{note})"


def load_note() -> str:
    """The load averages, printed beside figures measured on a shared machine."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def write_figures(path: str | None, figures: Figures) -> None:
    """Hand a benchmark's figures to ``run_all.py`` (``--json PATH``); nothing without a path."""
    if path:
        Path(path).write_text(json.dumps({**figures, "load": load_note()}, indent=1))


class Profile:
    """``py-spy record --gil`` attached to a running process for the life of the ``with`` block: only
    the thread holding the GIL is sampled, so waits (epoll, the flush thread idling) stay out.

    Raw (collapsed-stack) output goes to ``path``; :func:`profile_top` reads it. Without py-spy on the
    PATH or in this interpreter's bin directory the block runs unprofiled and ``skipped`` says why.
    """

    def __init__(self, pid: int, path: Path, rate: int = 200) -> None:
        self.pid, self.path, self.rate = pid, path, rate
        self.skipped: str | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Profile:
        exe = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(exe).exists():
            self.skipped = "py-spy is not installed (pip install -e '.[dev]')"
            return self
        self.path.parent.mkdir(parents=True, exist_ok=True)
        command = [exe, "record", "--gil", "--pid", str(self.pid), "-r", str(self.rate)]
        self._proc = subprocess.Popen(
            [*command, "-f", "raw", "-o", str(self.path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is None:
            return
        self._proc.send_signal(2)  # py-spy writes its output on SIGINT
        try:
            _, err = self._proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            _, err = self._proc.communicate()
        if not self.path.exists():
            self.skipped = f"py-spy wrote nothing: {err.decode(errors='replace').strip()[-300:]}"


def profile_top(path: Path, count: int = 12) -> list[str]:
    """The top ``count`` functions of a py-spy raw profile by own samples, then by inclusive samples."""
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        samples = int(n)
        total += samples
        frames = [_function(f) for f in stack.split(";")]
        own[frames[-1]] += samples
        for frame in set(frames):
            inclusive[frame] += samples
    if not total:
        return [f"{path.name}: no samples"]
    lines = [f"{path.name}: {total} samples; own time:"]
    lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in own.most_common(count)]
    lines.append("inclusive (callers included):")
    lines += [f"  {100 * n / total:5.1f}%  {f}" for f, n in inclusive.most_common(count)]
    return lines


def _function(frame: str) -> str:
    """``name (file:line)`` without the line, so one function's lines add up."""
    head, sep, _ = frame.rpartition(":")
    return f"{head})" if sep and head.count("(") == 1 else frame
