"""The scenario catalog in CI: rmqtwin against real 4.9.7 and real 5.5.0, each with its own client line.

One catalog run per line, on the line's shared real cluster (the reference, run twice) and one twin with
the same broker.conf (``TWIN_BROKER_CONF``). The reports are kept under ``build/conformance/<line>/``
(report.html, report.json, junit.xml), the path the README names. A scenario where the twin differs
from the reference fails here.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.conformance.catalog import Target, load_catalog
from rmqtwin.conformance.java_client import JavaClient
from rmqtwin.conformance.report import write_reports
from rmqtwin.conformance.runner import TWIN_BROKER_CONF, own_real, own_twin, run_catalog

REPORT_DIR = Path(
    os.environ.get("RMQTWIN_CONFORMANCE_OUT") or Path(__file__).resolve().parents[2] / "build" / "conformance"
)
"""Where the reports go (``RMQTWIN_CONFORMANCE_OUT`` for a run beside another checkout's)."""
CI_SCENARIOS = os.environ.get("RMQTWIN_CONFORMANCE_ONLY", "")
"""A regular expression narrowing the scenarios (default: the whole catalog)."""
EVERY_SCENARIO = os.environ.get("RMQTWIN_TEST_ALL") == "1"
"""``make test`` runs the scenarios tagged ``ci`` (the ones that replaced pytest scenarios, and the quick
careless-client ones): the reference runs twice, and the whole catalog takes over ten minutes a line on
a loaded two-core machine. ``make test-all`` and ``rmqtwin conformance run`` run every scenario."""


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("line", ["real-4.9", "real-5"])
def test_the_twin_behaves_like_real_rocketmq(
    line: str,
    real_rocketmq_factory: Any,
    rocketmq_factory: Any,
    java_client_factory: Callable[[str], JavaClient],
) -> None:
    version = line.removeprefix("real-")
    twin_line = "4.9" if version == "4.9" else "5.5"  # the twin answers as the reference's line
    real = real_rocketmq_factory(version)
    twin = rocketmq_factory(
        broker_conf=dict(TWIN_BROKER_CONF), broker_name="broker-a", rocketmq_version=twin_line
    )
    scenarios = [s for s in load_catalog(only=CI_SCENARIOS or None) if EVERY_SCENARIO or "ci" in s.tags]
    run = run_catalog(
        scenarios,
        # A scenario that needs a cluster of its own (wipeWritePerm) starts one per run, never
        # touching the shared one.
        Target(
            line,
            real.namesrv_addr,
            tuple(real.broker_addrs),
            own_cluster=functools.partial(own_real, version, name=line),
        ),
        [
            Target(
                "twin",
                twin.namesrv_addr,
                (twin.broker_addr,),
                own_cluster=functools.partial(own_twin, twin_line),
            )
        ],
        java_client_factory(version),
    )
    out = REPORT_DIR / version
    write_reports(run, out)
    assert run.ok, f"{run.verdict_line('twin')}; see {out / 'report.html'}"
