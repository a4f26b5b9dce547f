"""Bad input side by side: every case of conformance/bad_inputs.py sent to the twin and to real RocketMQ.

Per line, one twin answering as that line (``--rocketmq-version``) and the line's shared real cluster get
the same cases, one connection each; the answer's code and remark, the connection's fate, the broker's
survival and the ledger of acknowledged messages must agree, except where ``DIFFERENCES`` says why the
twin deliberately differs. Both runs must also match ``conformance/bad_inputs.json``, the record
docs/bad-inputs.md is generated from (``RMQTWIN_BAD_INPUTS_RECORD=1`` rewrites both from the run).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import pytest

from rmqtwin.conformance import bad_inputs
from rmqtwin.conformance.runner import TWIN_BROKER_CONF

REWRITE = os.environ.get("RMQTWIN_BAD_INPUTS_RECORD") == "1"


def _entries(addr: str, tag: str, skip: dict[str, str]) -> dict[str, dict[str, object]]:
    outcomes = bad_inputs.run_suite(addr, tag=tag, skip=skip)
    return {o.case: bad_inputs.record_entry(o, tag) for o in outcomes}


@pytest.mark.timeout(600)
@pytest.mark.parametrize("line", ["real-4.9", "real-5"])
def test_bad_inputs_are_answered_as_real_rocketmq_answers_them(
    line: str, real_rocketmq_factory: Any, rocketmq_factory: Any
) -> None:
    version = line.removeprefix("real-")
    twin_line, _release = bad_inputs.LINES[version]
    real = real_rocketmq_factory(version)
    twin = rocketmq_factory(broker_conf=dict(TWIN_BROKER_CONF), rocketmq_version=twin_line)
    stamp = str(int(time.time() * 1000))
    skip = {case: why for (ln, case), why in bad_inputs.NOT_SENT.items() if ln == version}
    real_run = _entries(real.broker_addr, f"r{stamp}", skip)
    twin_run = _entries(twin.broker_addr, f"t{stamp}", {})

    for side, run in (("twin", twin_run), ("real", real_run)):
        broken = {c: e for c, e in run.items() if e["survived"] != "yes" or e["lost"]}
        if side == "twin":
            assert not broken, f"the twin died or lost acknowledged messages: {broken}"
    mismatches = {
        case: {"twin": twin_run[case], "real": real_run[case]}
        for case in twin_run
        if bad_inputs.differs(version, case) is None and twin_run[case] != real_run[case]
    }
    if REWRITE:
        bad_inputs.save_record(version, twin_run, real_run)
    assert not mismatches, (
        "the twin answers otherwise than real " + line + ":\n" + json.dumps(mismatches, indent=1)
    )
    recorded = bad_inputs.load_record().get(version, {})
    stale = [
        case
        for side, run in (("twin", twin_run), ("real", real_run))
        for case, entry in run.items()
        if recorded.get(side, {}).get(case) != entry
    ]
    assert not stale, (
        f"conformance/bad_inputs.json is stale for {stale}: rerun with RMQTWIN_BAD_INPUTS_RECORD=1"
    )


def test_the_bad_inputs_page_is_generated_from_the_record() -> None:
    assert bad_inputs.DOCS_BAD_INPUTS.read_text(encoding="utf-8") == bad_inputs.bad_inputs_markdown(), (
        "docs/bad-inputs.md is stale: run `python -m rmqtwin.conformance.bad_inputs docs`"
    )


def test_the_record_covers_every_case_on_both_lines() -> None:
    names = {c.name for c in bad_inputs.cases("T", "G")}
    record = bad_inputs.load_record()
    for line in bad_inputs.LINES:
        for side in ("twin", "real"):
            assert set(record.get(line, {}).get(side, {})) == names, (
                f"{line} {side}: record out of date, run test_bad_inputs.py with RMQTWIN_BAD_INPUTS_RECORD=1"
            )
    assert len(names) >= 95


@pytest.mark.timeout(300)
@pytest.mark.parametrize("line", ["real-4.9", "real-5"])
def test_a_proxy_preamble_gives_the_client_address_as_real_rocketmq_takes_it(
    line: str, real_rocketmq_factory: Any, rocketmq_factory: Any
) -> None:
    """5.5.0 lists a producer behind a PROXY v1 preamble at the preamble's source address; 4.9.7 does not
    read preambles (the heartbeat never arrives). The twin answers as the line it emulates."""
    version = line.removeprefix("real-")
    real = real_rocketmq_factory(version)
    twin = rocketmq_factory(broker_conf=dict(TWIN_BROKER_CONF), rocketmq_version=bad_inputs.LINES[version][0])
    group = f"PG_proxied_{version.replace('.', '')}_{int(time.time() * 1000)}"
    real_addrs = bad_inputs.proxied_client_addrs(real.broker_addr, group)
    twin_addrs = bad_inputs.proxied_client_addrs(twin.broker_addr, group)
    assert twin_addrs == real_addrs
    assert real_addrs == (["10.1.2.3:5555"] if version == "5" else [])
