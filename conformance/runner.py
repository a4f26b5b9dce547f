"""``rmqtwin conformance run``: the catalog against a set of targets, compared with the Diffy method.

Targets: ``twin`` (rmqtwin, started here with the shared broker.conf), ``real-5`` / ``real-4.9``
(Apache RocketMQ 5.5.0 / 4.9.7 from the launcher, same broker.conf), ``ns=HOST:PORT`` (anything
already running: a staging cluster, the recording proxy in front of one). The reference runs every
scenario twice, every other target once, all with one client line (``--client``; default the
reference's line). Writes ``report.html``, ``report.json`` and ``junit.xml`` to ``--out``; exits 1
when a candidate differs from the reference.
"""

from __future__ import annotations

import contextlib
import functools
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from rmqtwin.conformance import diffy
from rmqtwin.conformance.catalog import (
    Scenario,
    ScenarioRun,
    Target,
    broker_addrs_of,
    load_catalog,
    run_scenario,
)
from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.conformance.launcher import DEFAULT_BROKER_CONF, RealRocketMQ, RealRocketMQError, resolve_version

__all__ = [
    "SHARED_BROKER_CONF",
    "TWIN_BROKER_CONF",
    "CatalogRun",
    "ScenarioResult",
    "own_real",
    "own_twin",
    "run_catalog",
    "started_targets",
]

SHARED_BROKER_CONF: dict[str, object] = {
    # Level n waits n seconds (the default is 1s 5s 10s 30s 1m ...): a consumer's first retry
    # (level 3) comes back after 3 s, not 10 s.
    "messageDelayLevel": " ".join(f"{n}s" for n in range(1, 19)),
    # Half messages without an end are checked back after 2 s, every second (default 6 s / 60 s).
    "transactionTimeOut": 2000,
    "transactionCheckInterval": 1000,
}
"""broker.conf every real target of the suite runs with, on top of the launcher's defaults."""

TWIN_BROKER_CONF: dict[str, object] = {
    key: DEFAULT_BROKER_CONF[key]
    for key in (
        "brokerClusterName",
        "mappedFileSizeCommitLog",
        "mappedFileSizeConsumeQueue",
        "autoCreateTopicEnable",
        "autoCreateSubscriptionGroup",
        "enablePropertyFilter",
    )
} | SHARED_BROKER_CONF
"""The same settings for the twin, where it models them."""


@dataclass
class StepResult:
    label: str
    comparisons: dict[str, diffy.Comparison]


@dataclass
class ScenarioResult:
    scenario: Scenario
    reference_runs: tuple[ScenarioRun, ScenarioRun]
    candidate_runs: dict[str, ScenarioRun]
    steps: list[StepResult] = field(default_factory=list)

    def verdict(self, target: str) -> str:
        return "differs" if any(not s.comparisons[target].same for s in self.steps) else "same"


@dataclass
class CatalogRun:
    reference: str
    client: str
    candidates: list[str]
    results: list[ScenarioResult]
    seconds: float
    skipped: dict[str, str] = field(default_factory=dict)
    """Scenarios not run, with the reason (one needing a cluster of its own on an ``ns=`` target)."""

    def differing(self, target: str) -> list[str]:
        return [r.scenario.name for r in self.results if r.verdict(target) == "differs"]

    def verdict_line(self, target: str) -> str:
        bad = self.differing(target)
        total = len(self.results)
        if not bad:
            return f"{target}: same as {self.reference} in all {total} scenarios"
        return (
            f"{target}: differs from {self.reference} in {len(bad)} of {total} scenarios ({', '.join(bad)})"
        )

    @property
    def ok(self) -> bool:
        return all(not self.differing(t) for t in self.candidates)


def _observations(run: ScenarioRun, scenario: Scenario) -> dict[str, dict[str, str]]:
    """Each step's normalised, flattened observation, and the run's outcome (error or none)."""
    names = scenario.normalisers or diffy.DEFAULT_NORMALISERS
    out = {
        step.label: diffy.flatten(diffy.normalise(step.observation, run.names, tuple(names)))
        for step in run.steps
    }
    out["outcome"] = diffy.flatten(diffy.normalise({"error": run.error}, run.names, tuple(names)))
    return out


def compare_runs(
    scenario: Scenario, first: ScenarioRun, second: ScenarioRun, candidates: dict[str, ScenarioRun]
) -> ScenarioResult:
    ref1, ref2 = _observations(first, scenario), _observations(second, scenario)
    cands = {name: _observations(run, scenario) for name, run in candidates.items()}
    labels = [s.label for s in scenario.steps] + ["outcome"]
    steps = []
    for label in labels:
        if label not in ref1 and label not in ref2 and all(label not in c for c in cands.values()):
            continue  # a step of another client line
        steps.append(
            StepResult(
                label,
                {
                    name: diffy.compare(ref1.get(label, {}), ref2.get(label, {}), obs.get(label, {}))
                    for name, obs in cands.items()
                },
            )
        )
    return ScenarioResult(scenario, (first, second), candidates, steps)


def run_catalog(
    scenarios: Sequence[Scenario],
    reference: Target,
    candidates: Sequence[Target],
    client: JavaClient,
    progress: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
) -> CatalogRun:
    """Every scenario on the reference twice and on each candidate; compared step by step.

    A scenario's runs go side by side (each run has its own topics and groups; most of a run is
    waiting for JVMs to start and for brokers to deliver), one after the other for a scenario marked
    ``exclusive`` (it changes what every run on the broker sees, such as its config)."""
    started = time.monotonic()
    results = []
    skipped: dict[str, str] = {}
    for number, scenario in enumerate(scenarios, 1):
        head = f"[{number}/{len(scenarios)}] {scenario.name}"
        unable = [t.name for t in (reference, *candidates) if t.own_cluster is None]
        if scenario.own_cluster and unable:
            skipped[scenario.name] = (
                f"needs a cluster of its own for each run, which {', '.join(unable)} cannot start"
            )
            progress(f"{head}: skipped: {skipped[scenario.name]}")
            continue
        labelled = [("ref 1", reference), ("ref 2", reference), *[(t.name, t) for t in candidates]]

        def run_one(label: str, target: Target, head: str = head, one: Scenario = scenario) -> ScenarioRun:
            run = run_scenario(one, target, client)
            state = "error: " + run.error.splitlines()[0] if run.error else "done"
            progress(f"{head}: {label} ({target.name}) {state} in {run.seconds:.1f}s")
            return run

        if scenario.exclusive:
            runs = [run_one(label, target) for label, target in labelled]
        else:
            with ThreadPoolExecutor(max_workers=len(labelled), thread_name_prefix="catalog") as pool:
                runs = list(pool.map(lambda lt: run_one(*lt), labelled))
        result = compare_runs(
            scenario, runs[0], runs[1], {t.name: r for t, r in zip(candidates, runs[2:], strict=True)}
        )
        verdicts = ", ".join(f"{t.name} {result.verdict(t.name)}" for t in candidates)
        progress(f"{head}: {verdicts}")
        results.append(result)
    return CatalogRun(
        reference=reference.name,
        client=client.version.line,
        candidates=[t.name for t in candidates],
        results=results,
        seconds=time.monotonic() - started,
        skipped=skipped,
    )


@contextlib.contextmanager
def own_twin(
    line: str, broker_conf: Mapping[str, object] | None = None, brokers: int = 1, name: str = "twin"
) -> Iterator[Target]:
    """A twin of its own (``TWIN_BROKER_CONF`` and ``broker_conf``, answering as ``line``) for one run;
    two masters (``brokers=2``) are ``serve --cluster 2m-noslave``."""
    from rmqtwin.fakes.pytest_plugin import start_subprocess

    if brokers not in (1, 2):
        raise ValueError(f"the twin starts one or two masters, not {brokers}")
    work = tempfile.mkdtemp(prefix="rmqtwin-conformance-")
    try:
        twin = start_subprocess(
            work,
            broker_conf={**TWIN_BROKER_CONF, **(broker_conf or {})},
            broker_name="broker-a",
            serve_args=("--rocketmq-version", line, *(("--cluster", "2m-noslave") if brokers == 2 else ())),
        )
        try:
            yield Target(
                name,
                twin.namesrv_addr,
                tuple(twin.brokers.values()) if brokers == 2 else (twin.broker_addr,),
                own_cluster=functools.partial(own_twin, line, name=name),
            )
        finally:
            twin.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def own_real(
    version: str, broker_conf: Mapping[str, object] | None = None, brokers: int = 1, *, name: str
) -> Iterator[Target]:
    """Real RocketMQ of its own (``brokers`` masters, ``SHARED_BROKER_CONF`` and ``broker_conf``),
    killed afterwards."""
    rmq = RealRocketMQ(
        resolve_version(version),
        broker_conf_overrides={**SHARED_BROKER_CONF, **(broker_conf or {})},
        brokers=brokers,
    )
    try:
        rmq.start()
        yield Target(
            name,
            rmq.namesrv_addr,
            tuple(rmq.broker_addrs),
            own_cluster=functools.partial(own_real, version, name=name),
        )
    finally:
        with contextlib.suppress(RealRocketMQError):  # killing what is left; its logs are no result
            rmq.stop(graceful=False)


@contextlib.contextmanager
def started_targets(names: Sequence[str]) -> Iterator[list[Target]]:
    """Start what each target name needs (the twin, real brokers), stop it all afterwards."""
    targets: list[Target] = []
    # The twin answers as the line of the first real target (the reference), else as the newest.
    reals = [resolve_version(n.removeprefix("real-")).line for n in names if n.startswith("real-")]
    twin_line = "4.9" if reals and reals[0] == "4.9" else "5.5"
    with contextlib.ExitStack() as stack:
        for name in names:
            if name == "twin":
                targets.append(stack.enter_context(own_twin(twin_line)))
            elif name.startswith("real-"):
                targets.append(stack.enter_context(own_real(name.removeprefix("real-"), name=name)))
            elif name.startswith("ns="):
                addr = name.removeprefix("ns=")
                targets.append(Target(name, addr, broker_addrs_of(addr)))
            else:
                raise ValueError(f"unknown target {name!r}: twin, real-5, real-4.9 or ns=HOST:PORT")
        yield targets


def main_run(
    target_names: Sequence[str], reference: str, only: str | None, client_line: str | None, out: Path
) -> int:
    from rmqtwin.conformance.java_client import build_drivers
    from rmqtwin.conformance.report import write_reports

    if reference not in target_names:
        target_names = [reference, *target_names]
    scenarios = load_catalog(only=only)
    if not scenarios:
        print(f"no scenario matches {only!r}", file=sys.stderr)
        return 2
    line = client_line or (reference.removeprefix("real-") if reference.startswith("real-") else "5")
    build_drivers()
    client = JavaClient(resolve_version(line).line)
    with started_targets(target_names) as targets:
        by_name = {t.name: t for t in targets}
        candidates = [t for t in targets if t.name != reference]
        result = run_catalog(scenarios, by_name[reference], candidates, client)
    write_reports(result, out)
    for name in result.candidates:
        print(result.verdict_line(name))
    print(f"report: {out / 'report.html'}")
    return 0 if result.ok else 1
