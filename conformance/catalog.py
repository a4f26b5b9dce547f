"""The scenario catalog: one TOML file per scenario in ``conformance/catalog/``, run by the Java client.

A scenario names its variables (made unique per run: ``topic = "Modes"`` becomes ``Modes_3f9a_1``, so
runs never share a topic or group; ``[fixed]`` names stay as written, for a value the client hashes)
and lists steps. Each step is one action the real client (or, for
the careless-client requests, a raw remoting request) performs against a target, and what it saw is
the step's observation::

    description = "sync, async and oneway sends are stored and consumed"
    [vars]
    topic = "Modes"
    group = "ModesG"
    [[steps]]
    action = "create_topic"          # UPDATE_AND_CREATE_TOPIC on every broker, then wait for the route
    topic = "$topic"
    [[steps]]
    action = "producer"              # JavaClient drivers: producer, push_consumer, lite_pull,
                                     # pull_consumer, rebalance, request_reply
    spec = { topic = "$topic", mode = "sync", count = 3 }
    [[steps]]
    action = "mqadmin"
    args = ["topicStatus", "-t", "$topic"]
    keep = "header"                  # observe the table's header line(s), not every row

``$topic``-style words anywhere in a step are replaced by the run's values, ``$namesrv``, ``$broker``
(the first master, broker-a), ``$broker2`` (the last) and ``$cluster`` by the target's. ``observe`` (a
list of event kinds, default every kind a driver reports) and ``fields`` (keep only these event fields)
narrow an observation; ``dedupe = true`` observes a driver's events as a set (a second delivery of a
body is not compared). ``sequence = true`` also observes the bodies a consumer received in the order it
got them, per queue (what orderly consumption promises). ``capture = { uid = ["sent", "index=0",
"msgId"] }`` keeps a field of a driver's event (kind, key as events are keyed, field) as ``$uid`` for
the later steps (a message id to query by). ``background = "name"`` on a driver step leaves the driver
running (once it printed "started", or ``ready = { event = "received", count = 2 }``; ``capture`` reads
what it printed so far) for the steps that follow, until ``action = "stop"`` with ``of = "name"`` ends
it and observes what it printed (a run ends the ones left). A step with ``clients = ["4.9"]`` runs only
with that client line. A scenario with ``exclusive = true`` (one that changes what every run on the
broker sees, such as its config) runs on one target at a time; the runs of every other scenario go side
by side. A scenario with ``own_cluster = true`` (one that changes the name server's view of the broker,
such as ``wipeWritePerm``) runs each time on a cluster started for that run alone
(``Target.own_cluster``), with the scenario's ``[broker_conf]`` on top of the suite's
(``autoCreateTopicEnable = false``), and is skipped, with the reason, for a target that cannot start one
(``ns=HOST:PORT``). ``$workdir`` is a directory of the run's own; an ``mqadmin`` step's ``files = {
"name" = "text" }`` are written there first (a topic list for ``updateTopicList -f $workdir/name``)."""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import shutil
import tempfile
import time
import tomllib
import uuid
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rmqtwin.conformance.java_client import DriverProcess, DriverResult, JavaClient
from rmqtwin.conformance.launcher import query_cluster_info

__all__ = [
    "CATALOG_DIR",
    "Scenario",
    "ScenarioRun",
    "Step",
    "StepError",
    "StepRun",
    "Target",
    "broker_addrs_of",
    "load_catalog",
    "raw_request",
    "run_scenario",
]

CATALOG_DIR = Path(__file__).resolve().parent / "catalog"
ACTIONS = (
    "create_topic",
    "producer",
    "push_consumer",
    "lite_pull",
    "pull_consumer",
    "rebalance",
    "request_reply",
    "mqadmin",
    "request",
    "stop",
    "sleep",
)
DRIVER_ACTIONS = ("producer", "push_consumer", "lite_pull", "pull_consumer", "rebalance", "request_reply")
EVENT_KINDS = (
    "sent",
    "received",
    "error",
    "fatal",
    "check",
    "local_transaction",
    "replied",
    "reply",
    "pull",
    "allocation",
    "unsettled",
)
SUMMARY_FIELDS = (
    "sent",
    "errors",
    "consumed",
    "received",
    "timedOut",
    "checks",
    "reconsumeLater",
    "pulls",
    "settled",
    "attemptOutcomes",
)
# Event fields that say how the driver ran, not what the broker did.
DRIVER_FIELDS = frozenset({"event", "elapsedMs", "attempt", "thread", "t", "ts", "latencyMs"})
_VAR_RE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")

Observation = dict[str, Any]
RequestFn = Callable[
    [str, int, Mapping[str, str] | None, bytes | None], tuple[int, str | None, bytes, dict[str, str]]
]
"""One raw request: (address, code, ext fields, body) -> (code, remark, body, ext fields)."""


@dataclass(frozen=True)
class Target:
    """A RocketMQ the catalog runs against: its name server, its brokers, its cluster name.

    ``own_cluster(broker_conf, brokers)`` starts a cluster of the same kind with ``brokers`` masters
    (broker-a, broker-b, ...) and these broker.conf keys on top of the suite's, for one run of an
    ``own_cluster`` scenario, and stops it afterwards (None: this target cannot, the scenario is skipped
    for it)."""

    name: str
    namesrv_addr: str
    broker_addrs: tuple[str, ...]
    cluster: str = "rmqtwin"
    own_cluster: Callable[[Mapping[str, object], int], AbstractContextManager[Target]] | None = field(
        default=None, compare=False, repr=False
    )


@dataclass(frozen=True)
class Step:
    action: str
    args: Mapping[str, Any]
    label: str

    @property
    def clients(self) -> tuple[str, ...]:
        return tuple(self.args.get("clients", ("4.9", "5")))


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    variables: Mapping[str, str]
    steps: tuple[Step, ...]
    normalisers: tuple[str, ...] | None = None
    path: Path | None = None
    tags: tuple[str, ...] = ()
    exclusive: bool = False
    """Runs one at a time on a target (it changes what other runs there would see)."""
    fixed: Mapping[str, str] = field(default_factory=dict)
    """Names the same in every run (``[fixed]``): for what a client hashes, shared by concurrent runs."""
    own_cluster: bool = False
    """Each run on a cluster of its own (it changes what the name server tells every client)."""
    broker_conf: Mapping[str, object] = field(default_factory=dict)
    brokers: int = 1
    """Masters of the scenario's own cluster (``brokers = 2``: a producer retrying on another broker)."""
    """broker.conf keys of the scenario's own cluster, on top of the suite's."""


def load_scenario(path: Path) -> Scenario:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    steps = []
    for index, raw in enumerate(data.get("steps", [])):
        action = str(raw.get("action", ""))
        if action not in ACTIONS:
            raise ValueError(f"{path.name} step {index + 1}: unknown action {action!r} (known: {ACTIONS})")
        label = str(raw.get("name") or f"{index + 1}. {action}")
        steps.append(Step(action=action, args=dict(raw), label=label))
    normalisers = data.get("normalisers")
    return Scenario(
        name=path.stem,
        description=str(data.get("description", "")),
        variables={str(k): str(v) for k, v in data.get("vars", {}).items()},
        steps=tuple(steps),
        normalisers=tuple(normalisers) if normalisers is not None else None,
        path=path,
        tags=tuple(data.get("tags", ())),
        exclusive=bool(data.get("exclusive", False)),
        fixed={str(k): str(v) for k, v in data.get("fixed", {}).items()},
        own_cluster=bool(data.get("own_cluster", False)) or int(data.get("brokers", 1)) > 1,
        brokers=int(data.get("brokers", 1)),
        broker_conf=dict(data.get("broker_conf", {})),
    )


def load_catalog(directory: Path = CATALOG_DIR, only: str | None = None) -> list[Scenario]:
    """Every scenario, by file name; ``only`` keeps those whose name matches the regular expression."""
    scenarios = [load_scenario(p) for p in sorted(directory.glob("*.toml"))]
    if only:
        pattern = re.compile(only)
        scenarios = [s for s in scenarios if pattern.search(s.name)]
    return scenarios


_run_counter = itertools.count()


def unique_values(scenario: Scenario) -> dict[str, str]:
    """Fresh names for the scenario's variables: no two runs (or machines) share a topic or group."""
    stamp = f"{uuid.uuid4().hex[:6]}_{os.getpid()}_{next(_run_counter)}"
    return {var: f"{stem}_{stamp}" for var, stem in scenario.variables.items()} | dict(scenario.fixed)


def substitute(value: Any, names: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        return _VAR_RE.sub(lambda m: names.get(m.group(1), m.group(0)), value)
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    if isinstance(value, dict):
        return {k: substitute(v, names) for k, v in value.items()}
    return value


class StepError(RuntimeError):
    """A step could not be carried out (a driver that crashed, a route never published)."""


@dataclass
class StepRun:
    label: str
    action: str
    observation: Observation
    seconds: float


@dataclass
class ScenarioRun:
    scenario: str
    target: str
    names: dict[str, str]
    steps: list[StepRun] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0


def run_scenario(
    scenario: Scenario,
    target: Target,
    client: JavaClient,
    *,
    request: RequestFn | None = None,
) -> ScenarioRun:
    """Run every step against ``target`` (on a cluster of the run's own for an ``own_cluster``
    scenario); a step that fails ends the run with ``error`` set."""
    names = unique_values(scenario)
    run = ScenarioRun(scenario=scenario.name, target=target.name, names=names)
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        if scenario.own_cluster:
            if target.own_cluster is None:
                raise StepError(
                    f"{scenario.name} needs a cluster of its own, which {target.name} cannot start"
                )
            try:
                target = stack.enter_context(target.own_cluster(scenario.broker_conf, scenario.brokers))
            except (RuntimeError, OSError, AssertionError) as exc:  # the run's outcome, with log tails
                run.error = f"starting a cluster of its own: {exc}"
                run.seconds = time.monotonic() - started
                return run
        workdir = tempfile.mkdtemp(prefix=f"rmqtwin-{scenario.name}-")
        stack.callback(shutil.rmtree, workdir, ignore_errors=True)
        context = Context(
            {
                **names,
                "namesrv": target.namesrv_addr,
                "broker": target.broker_addrs[0],
                "broker2": target.broker_addrs[-1],
                "cluster": target.cluster,
                "workdir": workdir,
            }
        )
        stack.callback(context.stop_all)
        send = request or raw_request
        for step in scenario.steps:
            if client.version.line not in step.clients:
                continue
            args = substitute(dict(step.args), context)
            began = time.monotonic()
            try:
                observation = _ACTIONS[step.action](args, target, client, send, context)
            except (StepError, AssertionError, OSError) as exc:
                run.error = f"{step.label}: {exc}"
                break
            finally:
                run.seconds = time.monotonic() - started
            run.steps.append(StepRun(step.label, step.action, observation, time.monotonic() - began))
    return run


# ---------------------------------------------------------------------------------------------
# Actions


class Context(dict[str, str]):
    """The run's variables (a step's ``capture`` adds to them) and its drivers left running."""

    def __init__(self, values: Mapping[str, str]) -> None:
        super().__init__(values)
        self.background: dict[str, DriverProcess] = {}

    def stop_all(self) -> None:
        for process in self.background.values():
            process.kill()
            process.result(timeout=30)
        self.background.clear()


Action = Callable[[Mapping[str, Any], Target, JavaClient, RequestFn, Context], Observation]


def raw_request(
    addr: str, code: int, ext: Mapping[str, str] | None = None, body: bytes | None = None
) -> tuple[int, str | None, bytes, dict[str, str]]:
    """One request through rmqtwin's codec over a fresh connection: (code, remark, body, ext fields)."""
    from rmqtwin.codec.command import create_request
    from rmqtwin.probe import NoAnswerError, invoke_sync

    try:
        answer = invoke_sync(addr, create_request(code, dict(ext) if ext else None, body), timeout=15)
    except NoAnswerError as exc:
        raise StepError(str(exc)) from None
    fields = {str(k): str(v) for k, v in (answer.ext_fields or {}).items()}
    return int(answer.code), answer.remark, bytes(answer.body or b""), fields


def _create_topic(
    args: Mapping[str, Any], target: Target, client: JavaClient, send: RequestFn, context: Context
) -> Observation:
    """UPDATE_AND_CREATE_TOPIC on every broker (what mqadmin updateTopic -c does), then the route."""
    topic = str(args["topic"])
    queues = str(args.get("queues", 4))
    ext = {
        "topic": topic,
        "defaultTopic": "TBW102",
        "readQueueNums": str(args.get("readQueues", queues)),
        "writeQueueNums": str(args.get("writeQueues", queues)),
        "perm": str(args.get("perm", 6)),
        "topicFilterType": "SINGLE_TAG",
        "topicSysFlag": "0",
        "order": "false",
    }
    answers = [send(addr, 17, ext, None)[:2] for addr in target.broker_addrs]
    deadline = time.monotonic() + 30
    while send(target.namesrv_addr, 105, {"topic": topic}, None)[0] != 0:
        if time.monotonic() > deadline:
            raise StepError(f"the route of {topic} never reached the name server")
        time.sleep(0.1)
    return {"answers": [{"code": code, "remark": remark} for code, remark in answers]}


def _driver(action: str) -> Action:
    def run(
        args: Mapping[str, Any], target: Target, client: JavaClient, send: RequestFn, context: Context
    ) -> Observation:
        spec = {"namesrv": target.namesrv_addr, **dict(args.get("spec", {}))}
        name = args.get("background")
        if name:  # left running for the steps that follow, until a "stop" step
            process = client.start(action, spec)
            context.background[str(name)] = process
            ready = dict(args.get("ready", {}))
            process.wait_for_count(str(ready.get("event", "started")), int(ready.get("count", 1)), timeout=90)
            so_far = DriverResult(action, list(process.events), 0, "")
            context.update(captured(so_far, args.get("capture", {})))
            return {"started": True}
        result = client.run(action, spec)
        if result.returncode != 0 and not result.events:
            raise StepError(f"{action} driver exited {result.returncode}:\n{result.stderr[-2000:]}")
        context.update(captured(result, args.get("capture", {})))
        return driver_observation(result, args)

    return run


def _event_key(event: Mapping[str, Any], ordinal: int) -> str:
    for name in ("body", "keys", "index"):
        if event.get(name) is not None:
            return f"{name}={event[name]}"
    return f"#{ordinal}"


def captured(result: DriverResult, capture: Mapping[str, list[str]]) -> dict[str, str]:
    """``name = [kind, key, field]``: the field of the first event of that kind with that key."""
    values = {}
    for name, (kind, key, wanted) in capture.items():
        event = next((e for i, e in enumerate(result.of(kind)) if _event_key(e, i) == key), None)
        if event is None or event.get(wanted) is None:
            raise StepError(f"capture {name}: no {kind} event {key} with a {wanted}")
        values[name] = str(event[wanted])
    return values


def driver_observation(result: DriverResult, args: Mapping[str, Any]) -> Observation:
    """Events by kind, each list keyed by body (else keys, index) and sorted: the order in which
    queues interleave is not compared, the order within one key is."""
    kinds = tuple(args.get("observe", EVENT_KINDS))
    wanted = args.get("fields")
    observation: Observation = {}
    for kind in kinds:
        keyed: dict[str, Any] = {}
        for ordinal, event in enumerate(result.of(kind)):
            kept = {
                k: v for k, v in event.items() if k not in DRIVER_FIELDS and (wanted is None or k in wanted)
            }
            key = _event_key(event, ordinal)
            if args.get("dedupe") and f"{key}#0" in keyed:
                continue  # observed as a set: a redelivery of the same message is not compared
            n = 0
            while f"{key}#{n}" in keyed:
                n += 1
            keyed[f"{key}#{n}"] = kept
        if keyed:
            observation[kind] = dict(sorted(keyed.items()))
    if args.get("sequence"):
        sequence: dict[str, list[Any]] = {}
        for event in result.of("received"):
            sequence.setdefault(f"queue{event.get('queueId')}", []).append(event.get("body"))
        observation["sequence"] = dict(sorted(sequence.items()))
    summary = next((e for e in reversed(result.events) if e.get("event") == "summary"), None)
    if summary is not None:
        observation["summary"] = {k: summary[k] for k in SUMMARY_FIELDS if k in summary}
    observation["exit"] = result.returncode
    return observation


def _mqadmin(
    args: Mapping[str, Any], target: Target, client: JavaClient, send: RequestFn, context: Context
) -> Observation:
    argv = [str(a) for a in args.get("args", [])]
    for name, text in dict(args.get("files", {})).items():  # read by the command (-f $workdir/name)
        Path(context["workdir"], str(name)).write_text(str(text), encoding="utf-8")
    result = client.mqadmin(target.namesrv_addr, *argv)
    lines = [line.rstrip() for line in result.stdout.splitlines() if line.strip()]
    keep = str(args.get("keep", "all"))
    if keep == "header":
        lines = [line for line in lines if line.startswith("#")][:1]
    elif keep.startswith("match:"):
        pattern = re.compile(keep.removeprefix("match:"))
        lines = [line for line in lines if pattern.search(line)]
    elif keep == "keys":  # "key : value" and "key = value" listings: which keys are printed
        lines = sorted({re.split(r"\s*[:=]\s*", line, maxsplit=1)[0].strip() for line in lines})
    elif keep == "none":
        lines = []
    for pattern in args.get("mask", ()):  # a value that differs on every run, e.g. a time taken
        lines = [re.sub(str(pattern), "<masked>", line) for line in lines]
    if keep == "keys":  # a masked part of a key (a path, a level) leaves one key
        lines = sorted(set(lines))
    if args.get("sort"):  # printed in an order that means nothing (a java.util.Properties)
        lines = sorted(lines)
    printed = (result.stdout + "\n" + result.stderr).splitlines()
    failure = next((line.strip() for line in printed if "Exception" in line), None)
    # SubCommandException says only which command failed; the root cause says why.
    cause = next((line.strip() for line in reversed(printed) if line.startswith("Caused by:")), None)
    observation: Observation = {
        "ok": result.ok,
        "failure": failure,
        "lines": [" ".join(x.split()) for x in lines],
    }
    if cause is not None:
        observation["cause"] = cause
    return observation


def _request(
    args: Mapping[str, Any], target: Target, client: JavaClient, send: RequestFn, context: Context
) -> Observation:
    """A raw request (the careless client): ``to`` broker or namesrv, ``code``, ``ext``, ``body``;
    ``observeBody`` adds the answer's body, ``observeExt = ["offset"]`` those fields of its header."""
    addr = target.namesrv_addr if args.get("to") == "namesrv" else target.broker_addrs[0]
    body = args.get("body")
    raw = body.encode() if isinstance(body, str) else None
    code, remark, answer, fields = send(
        addr, int(args["code"]), {str(k): str(v) for k, v in args.get("ext", {}).items()}, raw
    )
    observation: Observation = {"code": code, "remark": remark}
    if args.get("observeBody"):
        observation["body"] = answer.decode("utf-8", "replace")
    for name in args.get("observeExt", ()):
        observation[f"ext.{name}"] = fields.get(str(name))
    return observation


def _stop(
    args: Mapping[str, Any], target: Target, client: JavaClient, send: RequestFn, context: Context
) -> Observation:
    """Ends a driver started with ``background = NAME`` (``of = NAME``) and observes what it printed."""
    process = context.background.pop(str(args["of"]), None)
    if process is None:
        raise StepError(f"no driver running as {args['of']!r}")
    process.kill()
    result = process.result(timeout=30)
    observation = driver_observation(result, args)
    del observation["exit"]  # killed: its exit status says nothing of the broker
    return observation


def _sleep(
    args: Mapping[str, Any], target: Target, client: JavaClient, send: RequestFn, context: Context
) -> Observation:
    time.sleep(float(args.get("seconds", 1)))
    return {}


_ACTIONS: dict[str, Action] = {
    "create_topic": _create_topic,
    "producer": _driver("producer"),
    "push_consumer": _driver("push_consumer"),
    "lite_pull": _driver("lite_pull"),
    "pull_consumer": _driver("pull_consumer"),
    "rebalance": _driver("rebalance"),
    "request_reply": _driver("request_reply"),
    "mqadmin": _mqadmin,
    "request": _request,
    "stop": _stop,
    "sleep": _sleep,
}


def broker_addrs_of(namesrv_addr: str) -> tuple[str, ...]:
    """The master brokers a name server lists (for an ``ns=HOST:PORT`` target), by broker name."""
    code, body = query_cluster_info(namesrv_addr)
    if code != 0:
        raise StepError(f"{namesrv_addr} answered GET_BROKER_CLUSTER_INFO with code {code}")
    # Each BrokerData: "brokerAddrs" maps brokerId to address with bare integer keys (fastjson), 0 the
    # master; "brokerName" follows (bean fields sorted).
    masters = {}
    for addrs, name in re.findall(rb'\{"brokerAddrs":\{([^}]*)\},"brokerName":"([^"]+)"', body):
        master = re.search(rb'(?:^|,)0:"([^"]+)"', addrs)
        if master is not None:
            masters[name.decode()] = master.group(1).decode()
    return tuple(addr for _, addr in sorted(masters.items()))
