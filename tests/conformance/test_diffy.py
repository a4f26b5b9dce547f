"""The Diffy comparison and the report, on hand-made runs (no JVM): noise, differences, normalisers."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from rmqtwin.conformance import diffy
from rmqtwin.conformance.catalog import (
    CATALOG_DIR,
    Scenario,
    ScenarioRun,
    Step,
    StepError,
    StepRun,
    captured,
    driver_observation,
    load_catalog,
    substitute,
)
from rmqtwin.conformance.java_client import DriverResult
from rmqtwin.conformance.report import render_html, write_reports
from rmqtwin.conformance.runner import CatalogRun, compare_runs
from tests.chromium import dump_dom

SCENARIO = Scenario(
    name="demo",
    description="one send, one consume",
    variables={"topic": "Demo"},
    steps=(Step("producer", {}, "send"), Step("push_consumer", {}, "consume")),
)


def _run(target: str, topic: str, sent: dict[str, object], received: dict[str, object]) -> ScenarioRun:
    run = ScenarioRun(scenario="demo", target=target, names={"topic": topic})
    run.steps = [StepRun("send", "producer", sent, 1.0), StepRun("consume", "push_consumer", received, 1.0)]
    return run


def _sent(msg_id: str, queue: int, host: str) -> dict[str, object]:
    return {"sent": {"body=a#0": {"status": "SEND_OK", "msgId": msg_id, "queueId": queue, "storeHost": host}}}


def test_noise_is_discounted_and_a_stable_field_that_differs_is_a_difference() -> None:
    # queueId differs between the two reference runs: noise. status agrees on both and the candidate
    # has another: a difference. msgIds, hosts and the run's topic name are normalised away.
    ref1 = _run(
        "real-5", "Demo_1", _sent("7F0000010001AA", 1, "127.0.0.1:10911"), {"received": {"x": "Demo_1"}}
    )
    ref2 = _run(
        "real-5", "Demo_2", _sent("7F0000010001BB", 3, "127.0.0.1:10911"), {"received": {"x": "Demo_2"}}
    )
    twin = _run(
        "twin", "Demo_3", _sent("7F0000010001CC", 0, "127.0.0.1:30111"), {"received": {"x": "Demo_3"}}
    )
    twin.steps[0].observation["sent"]["body=a#0"]["status"] = "FLUSH_DISK_TIMEOUT"  # type: ignore[index]
    result = compare_runs(SCENARIO, ref1, ref2, {"twin": twin})
    send = result.steps[0].comparisons["twin"]
    assert send.noise == ["sent.body=a#0.queueId"]
    assert send.differing == ["sent.body=a#0.status"]
    assert result.steps[1].comparisons["twin"].same  # "$topic" on every side
    assert result.verdict("twin") == "differs"
    catalog = CatalogRun("real-5", "5", ["twin"], [result], 3.0)
    assert catalog.verdict_line("twin") == "twin: differs from real-5 in 1 of 1 scenarios (demo)"
    assert not catalog.ok


def test_normalisers_take_out_ids_hosts_timestamps_and_names() -> None:
    value = {
        "msgId": "7F00000100002A9F0000000000000000",
        "line": "broker-a 127.0.0.1:10911 stored 1764086400123 at 2026-11-25 17:00:00 by 127.0.0.1@4242#1",
        "topic": "Modes_ab12_7",
    }
    got = diffy.normalise(value, {"topic": "Modes_ab12_7"})
    assert got == {
        "msgId": "<msgId>",
        "line": "broker-a <host> stored <ts> at <date> by <clientId>",
        "topic": "$topic",
    }
    assert diffy.flatten({"a": [{"b": 1}, []], "c": None}) == {"a[0].b": "1", "a[1]": "[]", "c": "null"}


def test_driver_events_are_keyed_by_body_so_queue_interleaving_is_not_compared() -> None:
    lines = [
        {"event": "received", "body": "b", "queueId": 1, "elapsedMs": 5},
        {"event": "received", "body": "a", "queueId": 0, "elapsedMs": 9},
        {"event": "received", "body": "a", "queueId": 0, "elapsedMs": 12},
        {"event": "summary", "consumed": 2, "elapsedMs": 30},
    ]
    result = DriverResult("push_consumer", lines, 0, "")
    observation = driver_observation(result, {"fields": ["body", "queueId"]})
    assert list(observation["received"]) == ["body=a#0", "body=a#1", "body=b#0"]
    assert observation["summary"] == {"consumed": 2}


def test_sequence_keeps_each_queues_arrival_order() -> None:
    lines = [
        {"event": "received", "body": "s-2", "queueId": 0},
        {"event": "received", "body": "x", "queueId": 3},
        {"event": "received", "body": "s-1", "queueId": 0},
        {"event": "received", "body": "s-2", "queueId": 0},
    ]
    observation = driver_observation(DriverResult("push_consumer", lines, 0, ""), {"sequence": True})
    assert observation["sequence"] == {"queue0": ["s-2", "s-1", "s-2"], "queue3": ["x"]}


def test_capture_takes_a_field_of_the_keyed_event_and_fails_loudly_without_it() -> None:
    lines = [
        {"event": "sent", "index": 0, "msgId": "A0"},
        {"event": "sent", "index": 1, "msgId": "A1", "offsetMsgId": None},
    ]
    result = DriverResult("producer", lines, 0, "")
    assert captured(result, {"uid": ["sent", "index=1", "msgId"]}) == {"uid": "A1"}
    with pytest.raises(StepError, match="offsetMsgId"):
        captured(result, {"off": ["sent", "index=1", "offsetMsgId"]})


def test_substitute_fills_variables_inside_nested_specs() -> None:
    spec = {
        "spec": {"topic": "$topic", "messages": [{"body": "x", "keys": "$topic-k"}]},
        "args": ["-t", "%RETRY%$g"],
    }
    got = substitute(spec, {"topic": "T_1", "g": "G_2"})
    assert got == {
        "spec": {"topic": "T_1", "messages": [{"body": "x", "keys": "T_1-k"}]},
        "args": ["-t", "%RETRY%G_2"],
    }


def test_every_catalog_file_loads() -> None:
    scenarios = load_catalog()
    assert len(scenarios) == len(list(CATALOG_DIR.glob("*.toml"))) > 0
    for scenario in scenarios:
        assert scenario.description and scenario.steps, scenario.name


def _catalog_run() -> CatalogRun:
    ref1 = _run("real-5", "Demo_1", _sent("A", 1, "h"), {"received": {"x": 1}})
    ref2 = _run("real-5", "Demo_2", _sent("B", 2, "h"), {"received": {"x": 1}})
    twin = _run("twin", "Demo_3", _sent("C", 0, "h"), {"received": {"x": 2}})
    same = _run("ns=10.0.0.1:9876", "Demo_4", _sent("D", 3, "h"), {"received": {"x": 1}})
    result = compare_runs(SCENARIO, ref1, ref2, {"twin": twin, "ns=10.0.0.1:9876": same})
    return CatalogRun("real-5", "5", ["twin", "ns=10.0.0.1:9876"], [result], 3.0)


def test_reports_json_and_junit(tmp_path: Path) -> None:
    data = write_reports(_catalog_run(), tmp_path)
    assert json.loads((tmp_path / "report.json").read_text()) == data
    assert data["verdicts"]["ns=10.0.0.1:9876"] == "ns=10.0.0.1:9876: same as real-5 in all 1 scenarios"
    [consume] = [s for s in data["scenarios"][0]["steps"] if s["label"] == "consume"]
    assert consume["rows"] == [
        {
            "path": "received.x",
            "reference": ["1", "1"],
            "candidates": {"twin": "2", "ns=10.0.0.1:9876": "1"},
            "noise": False,
            "differs": ["twin"],
        }
    ]
    suites = ET.fromstring((tmp_path / "junit.xml").read_text())
    failures = {s.get("name"): s.get("failures") for s in suites}
    assert failures == {"twin vs real-5": "1", "ns=10.0.0.1:9876 vs real-5": "0"}


def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    write_reports(_catalog_run(), tmp_path)
    dom = dump_dom(tmp_path / "report.html")
    assert "twin: differs from real-5 in 1 of 1 scenarios (demo)" in dom
    assert 'class="verdict same"' in dom and 'class="diff"' in dom
    assert 'class="noise"' in dom  # queueId disagreed between the two reference runs
    assert (
        render_html(json.loads((tmp_path / "report.json").read_text())).count("<table>") == 3
    )  # send, consume, outcome


def test_a_scenarios_runs_go_side_by_side_unless_it_is_exclusive(monkeypatch: pytest.MonkeyPatch) -> None:
    # Three runs (the reference twice, the twin) that each wait for the other two: only runs made at
    # the same time get through the barrier. An exclusive scenario's runs never overlap.
    import threading

    from rmqtwin.conformance import runner
    from rmqtwin.conformance.catalog import Target
    from rmqtwin.conformance.java_client import JavaClient

    barrier = threading.Barrier(3, timeout=30)
    active = [0, 0]  # now, most at once
    lock = threading.Lock()

    def fake_run(scenario: Scenario, target: Target, client: JavaClient) -> ScenarioRun:
        with lock:
            active[0] += 1
            active[1] = max(active)
        if not scenario.exclusive:
            barrier.wait()
        with lock:
            active[0] -= 1
        return ScenarioRun(scenario=scenario.name, target=target.name, names={})

    monkeypatch.setattr(runner, "run_scenario", fake_run)
    side_by_side = Scenario("shared", "d", {}, (Step("sleep", {}, "s"),))
    alone = Scenario("config", "d", {}, (Step("sleep", {}, "s"),), exclusive=True)
    ref, twin = Target("real-5", "n:1", ("b:1",)), Target("twin", "n:2", ("b:2",))
    run = runner.run_catalog([side_by_side], ref, [twin], JavaClient("5"), progress=lambda line: None)
    assert run.ok and active[1] == 3
    active[1] = 0
    run = runner.run_catalog([alone], ref, [twin], JavaClient("5"), progress=lambda line: None)
    assert run.ok and active[1] == 1


class _FakeProcess:
    """A driver left running: what it printed so far, then killed."""

    def __init__(self, events: list[dict[str, object]]) -> None:
        self.events = events
        self.killed = False

    def wait_for_count(self, kind: str, count: int, timeout: float = 60.0) -> None:
        assert sum(1 for e in self.events if e["event"] == kind) >= count

    def kill(self) -> None:
        self.killed = True

    def result(self, timeout: float = 120.0) -> DriverResult:
        return DriverResult("push_consumer", self.events, -9, "")


def test_a_background_driver_runs_until_its_stop_step_and_masked_values_are_not_compared() -> None:
    from rmqtwin.conformance.catalog import Target, run_scenario
    from rmqtwin.conformance.java_client import MQAdminResult

    process = _FakeProcess(
        [{"event": "started", "clientId": "10.0.0.1@c0"}, {"event": "received", "body": "m", "queueId": 0}]
    )
    calls: list[tuple[str, ...]] = []

    class Client:
        version = type("V", (), {"line": "5"})()

        def start(self, driver: str, spec: dict[str, object]) -> _FakeProcess:
            assert driver == "push_consumer" and spec["group"] == "G_1"
            return process

        def mqadmin(self, namesrv: str, *args: str) -> MQAdminResult:
            calls.append(args)
            return MQAdminResult(list(args), 0, "Result [consumeResult=CR_SUCCESS, spentTimeMills=7]\n", "")

    scenario = Scenario(
        "bg",
        "d",
        {},
        (
            Step(
                "push_consumer",
                {
                    "background": "c",
                    "ready": {"event": "received", "count": 1},
                    "capture": {"cid": ["started", "#0", "clientId"]},
                    "spec": {"group": "G_1"},
                },
                "online",
            ),
            Step(
                "mqadmin", {"args": ["consumerStatus", "-d", "$cid"], "mask": ["spentTimeMills=\\d+"]}, "ask"
            ),
            Step("stop", {"of": "c", "fields": ["body"], "observe": ["received"]}, "stop"),
        ),
    )
    run = run_scenario(scenario, Target("t", "n:1", ("b:1",)), Client())  # type: ignore[arg-type]
    assert run.error is None
    assert calls == [("consumerStatus", "-d", "10.0.0.1@c0")]
    assert [s.observation for s in run.steps] == [
        {"started": True},
        {"ok": True, "failure": None, "lines": ["Result [consumeResult=CR_SUCCESS, <masked>]"]},
        {"received": {"body=m#0": {"body": "m"}}},
    ]
    assert process.killed


def test_an_own_cluster_scenario_runs_each_time_on_a_cluster_of_its_own_or_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contextlib
    from collections.abc import Iterator

    from rmqtwin.conformance import runner
    from rmqtwin.conformance.catalog import Target, run_scenario
    from rmqtwin.conformance.java_client import JavaClient, MQAdminResult

    started: list[str] = []
    stopped: list[str] = []

    @contextlib.contextmanager
    def own(name: str, conf: object) -> Iterator[Target]:
        assert conf == {"autoCreateTopicEnable": False}
        started.append(f"n:{len(started) + 10}")
        try:
            yield Target(name, started[-1], ("b:1",))
        finally:
            stopped.append(started[-1])

    seen: list[tuple[str, str, str]] = []
    workdirs: list[Path] = []

    class Client:
        version = type("V", (), {"line": "5"})()

        def mqadmin(self, namesrv: str, *args: str) -> MQAdminResult:
            path = Path(args[-1])
            seen.append((namesrv, path.name, path.read_text()))
            workdirs.append(path.parent)
            return MQAdminResult(list(args), 0, "done\n", "")

    scenario = Scenario(
        "perm",
        "d",
        {},
        (
            Step(
                "mqadmin",
                {"args": ["updateTopicList", "-f", "$workdir/t.json"], "files": {"t.json": "[]"}},
                "a",
            ),
        ),
        own_cluster=True,
        broker_conf={"autoCreateTopicEnable": False},
    )
    shared = Target("twin", "n:1", ("b:1",), own_cluster=lambda conf, brokers: own("twin", conf))
    run = run_scenario(scenario, shared, Client())  # type: ignore[arg-type]
    assert run.error is None and seen == [("n:10", "t.json", "[]")] and stopped == ["n:10"]
    assert not workdirs[0].exists()  # the run's own directory goes with it

    monkeypatch.setattr(runner, "run_scenario", lambda s, t, c: ScenarioRun(s.name, t.name, {}))
    ns = Target("ns=10.0.0.1:9876", "10.0.0.1:9876", ("b:9",))
    catalog = runner.run_catalog([scenario], ns, [shared], JavaClient("5"), progress=lambda line: None)
    assert catalog.results == [] and "ns=10.0.0.1:9876 cannot start" in catalog.skipped["perm"]
    data = write_reports(catalog, tmp_path)
    assert data["skipped"] == catalog.skipped
    [suite] = list(ET.fromstring((tmp_path / "junit.xml").read_text()))
    assert suite.get("skipped") == "1" and suite.find("testcase/skipped") is not None
