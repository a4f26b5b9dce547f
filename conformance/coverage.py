"""The coverage matrix, generated from the code and the catalog: what the twin models, and what is tested.

Per request code (``RequestCode``, the union of 4.9.8's and 5.5.0's): whether rmqtwin's broker and name
server handle it (a handler in their dispatch table) or answer as Apache RocketMQ answers a code it has
no processor for; what real 4.9.7 and 5.5.0 answer a header-less request with that code (the checked-in
probe of ``conformance/request_codes.py``: *handled* when a processor took it, *not supported* for
REQUEST_CODE_NOT_SUPPORTED, *no answer*); why a code real serves is out of the twin's scope; and which
catalog scenarios send it themselves (``request`` steps; the codes the Java client sends inside a driver
step are seen in a capture, ``--capture``). Per broker.conf key of the twin's ``BrokerConfig``: honoured
(a modelled setting); any other key the twin keeps and reports verbatim (getBrokerConfig) but ignores.

``rmqtwin conformance coverage`` writes ``docs/coverage.md``; a test fails when that file is stale.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections import defaultdict
from pathlib import Path

from rmqtwin.codec.codes import RequestCode
from rmqtwin.conformance.catalog import CATALOG_DIR, load_catalog
from rmqtwin.conformance.request_codes import CodeAnswer, load_real

__all__ = ["DOCS_COVERAGE", "coverage_markdown"]

DOCS_COVERAGE = Path(__file__).resolve().parent.parent / "docs" / "coverage.md"


def _handled() -> tuple[set[int], set[int]]:
    """The request codes in the twin broker's and name server's dispatch tables."""
    from twisted.internet.task import Clock

    from rmqtwin.fakes.broker.controller import BrokerController
    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.fakes.namesrv.controller import NamesrvController

    clock = Clock()
    with tempfile.TemporaryDirectory(prefix="rmqtwin-coverage-") as store:
        config = BrokerConfig.from_properties({"brokerName": "broker-a", "brokerIP1": "127.0.0.1"})
        broker = BrokerController(config, store, clock)
        broker_codes = set(broker.dispatcher.table)
    namesrv_codes = set(NamesrvController(clock).dispatcher.table)
    return broker_codes, namesrv_codes


def _sent_by_scenarios(directory: Path = CATALOG_DIR) -> dict[int, list[str]]:
    sent: dict[int, list[str]] = defaultdict(list)
    for scenario in load_catalog(directory):
        for step in scenario.steps:
            if step.action == "request":
                names = sent[int(step.args["code"])]
                if scenario.name not in names:
                    names.append(scenario.name)
            elif step.action == "create_topic":
                for code in (RequestCode.UPDATE_AND_CREATE_TOPIC, RequestCode.GET_ROUTEINFO_BY_TOPIC):
                    if scenario.name not in sent[code]:
                        sent[code].append(scenario.name)
    return sent


_ACTING_MASTER = (
    "out of scope: 5.x acting master (enableSlaveActingMaster); master/slave replication itself is "
    "the HA port's protocol (docs/fakes.md)"
)
_AUTO_SWITCH = "out of scope: 5.x auto-switch HA, which only the controller mode uses"
_CONTAINER = "out of scope: 5.x broker container (several brokers in one JVM)"
_CONTROLLER = (
    "out of scope: the 5.x controller (DLedger-based controller mode): it elects masters over the "
    "DLedger Raft log, which has no place in a test double of a fixed master/slave cluster"
)
OUT_OF_SCOPE: dict[int, str] = {
    **{
        code: "ACL 1.0 admin: not modelled, edit plain_acl.yml (reloaded) instead"
        for code in (50, 51, 52, 53)
    },
    60: "5.x timer wheel (timerWheelEnable) not modelled",
    61: "5.x timer wheel (timerWheelEnable) not modelled",
    354: "out of scope: RocksDB consume queues",
    355: "out of scope: RocksDB config store",
    400: "5.x client-side load balancing off the broker (QUERY_ASSIGNMENT) not modelled yet",
    401: "5.x client-side load balancing off the broker not modelled yet",
    402: "5.x client-side load balancing off the broker not modelled yet",
    513: "out of scope: static topics (logical queues)",
    901: _ACTING_MASTER,
    902: _CONTAINER,
    903: _CONTAINER,
    904: _ACTING_MASTER,
    905: _ACTING_MASTER,
    **{code: _AUTO_SWITCH for code in range(906, 909)},
    **{code: _CONTROLLER for code in range(1001, 1014)},
    **{code: "out of scope: tiered storage and cold-data flow control" for code in range(2001, 2005)},
    **{code: "ACL 2.0 (users and policies) not modelled" for code in range(3001, 3011)},
    200056: "5.x POP rollback not modelled yet",
    5001: "5.5.0 timer engine switch (mqadmin switchTimerEngine, the RocksDB timeline) not modelled",
    **{
        code: "5.5.0 lite topics (mqadmin lite-topic commands, POP_LITE_MESSAGE) not modelled yet"
        for code in range(200070, 200080)
    },
}
"""Why a code a real server serves is not handled by the twin (DLedger itself has no remoting codes: its
replication speaks its own protocol, out of scope with the controller: a DLedger commitlog
(enableDLegerCommitLog) elects its master by Raft, while the twin models the fixed master/slave roles
of broker.conf and their HA port)."""


def _real_cell(answer: CodeAnswer | None) -> str:
    if answer is None:
        return "?"
    if answer.code is None:
        return "no answer"
    return "not supported" if answer.code == 3 else f"handled ({answer.code})"


def _conf_keys() -> list[str]:
    from rmqtwin.fakes.config import REPORTED_ONLY, BrokerConfig

    config = BrokerConfig()
    keys = set(config.to_properties()) - set(config.extra) - set(REPORTED_ONLY)
    return sorted(keys)


SAFER_THAN_REAL = (
    "CONSUMER_SEND_MSG_BACK with a group such as `/../../x`: real 4.9.7 auto-creates the group, answers 0, "
    "writes the DLQ consume queue outside its store and wedges its dispatcher (later messages unreadable); "
    "the twin refuses it (SUBSCRIPTION_GROUP_NOT_EXIST) as 5.5.0 does, whichever line it emulates, and its "
    "store refuses any path outside its root.",
    "A burst of 20k oneway requests (measured for issue 19): real 5.5.0 dropped about a third; "
    "the twin served them all.",
    "A client that pipelines requests and never reads (measured for issue 19): real 5.5.0 can run out "
    "of heap on 500k unread requests; the twin stops reading from a connection whose unsent answers "
    "pass 64 KiB (`writeBufferHighWaterMark`), so its memory per connection is bounded.",
)
"""Real behaviour the twin does not copy (found by the bad-input and load runs of issue 19)."""


def coverage_markdown() -> str:
    broker, namesrv = _handled()
    sent = _sent_by_scenarios()
    real = {line: load_real(line) for line in ("4.9", "5")}
    served = {
        code
        for line in real.values()
        for server in line.values()
        for code, answer in server.items()
        if answer.verdict == "handled"
    }
    gaps = sorted(c for c in served if c not in broker and c not in namesrv and c not in OUT_OF_SCOPE)
    lines = [
        "# Coverage matrix (generated)",
        "",
        "Generated by `rmqtwin conformance coverage` from rmqtwin's dispatch tables, its `BrokerConfig`,",
        "the probe of real Apache RocketMQ (`conformance/request_codes.py`, data in `conformance/data/`) and",
        "the scenario catalog (`conformance/catalog/`); `tests/conformance/test_coverage.py` fails when this",
        "file is stale. *twin*: *handled* is a handler in that server's dispatch table; *not supported*",
        "answers REQUEST_CODE_NOT_SUPPORTED with ` request type N not supported`, as the real broker (both",
        "lines) and the 5.5.0 name server do for a code without a processor; a 4.9 twin's name server",
        "leaves such a request unanswered, as 4.9.7's does. *real 4.9.7 / 5.5.0*: what each real server",
        "answered a request with that code and no header (`handled (c)`: a processor answered code c, an",
        "NPE over the missing header mostly; broker / name server). *Sent by*: catalog scenarios that send",
        "the code themselves (raw `request` and `create_topic` steps); the codes the Java client sends",
        "inside its driver steps are not listed.",
        "",
        f"{len(broker)} codes handled by the broker, {len(namesrv)} by the name server, "
        f"of {len(RequestCode)} request codes known to the codec (4.9.8 and 5.5.0). Real 4.9.7 or 5.5.0 "
        f"serves {len(served)} of them; the twin handles "
        f"{len(served & (broker | namesrv))} of those, {len(served & set(OUT_OF_SCOPE))} are out of its "
        f"scope (the reason is given) and {len(gaps)} not modelled yet: "
        f"{', '.join(RequestCode(c).name for c in gaps) or 'none'}.",
        "",
        "| code | name | twin broker | twin name server | real 4.9.7 | real 5.5.0 | scope "
        "| sent by scenarios |",
        "|---:|---|---|---|---|---|---|---|",
    ]
    for code in sorted(RequestCode, key=int):
        cells = []
        for line in ("4.9", "5"):
            b = _real_cell(real[line]["broker"].get(int(code)))
            n = _real_cell(real[line]["namesrv"].get(int(code)))
            cells.append(f"{b} / {n}")
        lines.append(
            f"| {int(code)} | {code.name} | {'handled' if code in broker else 'not supported'} | "
            f"{'handled' if code in namesrv else 'not supported'} | {cells[0]} | {cells[1]} | "
            f"{OUT_OF_SCOPE.get(int(code), '')} | {', '.join(sent.get(int(code), []))} |"
        )
    from rmqtwin.fakes.config import BrokerConfig

    fields = [f.name for f in dataclasses.fields(BrokerConfig) if f.name not in BrokerConfig._NOT_PROPERTIES]
    lines += [
        "",
        "## broker.conf keys",
        "",
        f"The twin honours these {len(fields)} keys (its `BrokerConfig`); every other key is kept verbatim,",
        "shown by getBrokerConfig and otherwise ignored.",
        "",
        "| key | twin |",
        "|---|---|",
    ]
    lines += [f"| {key} | honoured |" for key in _conf_keys()]
    lines += ["", "## Where the twin is deliberately safer than the real broker", ""]
    lines += [f"- {what}" for what in SAFER_THAN_REAL]
    lines += [
        "",
        "The bad-input answers the twin shares with each real line, and the few it does not, are in",
        "docs/bad-inputs.md (generated from `conformance/bad_inputs.py`).",
    ]
    return "\n".join(lines) + "\n"


def main_coverage(out: Path = DOCS_COVERAGE) -> int:
    out.write_text(coverage_markdown(), encoding="utf-8")
    print(f"wrote {out}")
    return 0
