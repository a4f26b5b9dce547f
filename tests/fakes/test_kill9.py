"""kill -9 of ``rmqtwin serve`` during a send loop (``rmqtwin.conformance.kill9``): with SYNC_FLUSH no
acknowledged plain, batch or transactional message is lost or duplicated after the restart; with
ASYNC_FLUSH whatever is lost was on a commitlog page still dirty at the kill."""

from __future__ import annotations

import pytest

from rmqtwin.conformance.kill9 import TrialResult, run_trials


def _assert_nothing_acknowledged_lost(results: list[TrialResult]) -> None:
    for r in results:
        assert r.acked > 0, f"trial {r.trial}: nothing acknowledged before the kill"
        assert r.lost == [] and r.duplicates == [], (r.trial, r.lost[:5], r.duplicates[:5])


def test_one_sigkill_during_sync_flush_sends() -> None:
    _assert_nothing_acknowledged_lost(run_trials(1, "SYNC_FLUSH", seed=1, log=False))


@pytest.mark.slow
def test_twenty_sigkills_during_sync_flush_sends_of_messages_batches_and_transactions() -> None:
    results = run_trials(20, "SYNC_FLUSH", seed=9, log=False)
    _assert_nothing_acknowledged_lost(results)
    kinds = sum((r.kinds for r in results), start=results[0].kinds.__class__())
    assert kinds["single"] and kinds["batch"] and kinds["transaction"]


@pytest.mark.slow
def test_sigkill_under_async_flush_loses_at_most_what_was_not_flushed() -> None:
    for r in run_trials(5, "ASYNC_FLUSH", seed=5, log=False):
        assert r.duplicates == []
        if r.at_risk is not None:
            assert set(r.lost) <= set(r.at_risk), r.trial
