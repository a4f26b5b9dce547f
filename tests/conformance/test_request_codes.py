"""Every request code, header-less, to the twin as each line, beside what real 4.9.7 / 5.5.0 answered
(conformance/data/request-codes-*.json, made by ``python -m rmqtwin.conformance.request_codes real-X``).

A code real does not serve gets the same answer from the twin (code and remark, or silence); a code real
serves is handled by the twin, out of scope with a reason, or named in the coverage matrix's list of
codes not modelled yet.
"""

from __future__ import annotations

from typing import Any

import pytest

from rmqtwin.codec.codes import CURRENT_VERSION_4, CURRENT_VERSION_5, RequestCode
from rmqtwin.conformance.coverage import OUT_OF_SCOPE
from rmqtwin.conformance.request_codes import load_real, not_supported_remark
from rmqtwin.fakes.namesrv.controller import NamesrvController
from tests.fakes.helpers import Peer, clocked_broker


@pytest.mark.parametrize("line", ["4.9", "5"])
def test_unserved_codes_answer_as_real_and_served_ones_are_accounted_for(line: str, tmp_path: Any) -> None:
    with clocked_broker(tmp_path, rocketmq_version="4.9" if line == "4.9" else "5.5") as (broker, clock):
        namesrv = NamesrvController(clock, five=line == "5")
        version = CURRENT_VERSION_4 if line == "4.9" else CURRENT_VERSION_5
        real = load_real(line)
        for server, dispatcher in (("broker", broker.dispatcher), ("namesrv", namesrv.dispatcher)):
            for code, answer in real[server].items():
                if answer.verdict == "handled":
                    assert code in dispatcher.table or code in OUT_OF_SCOPE or code in NOT_MODELLED_YET, (
                        server,
                        RequestCode(code).name,
                    )
                    continue
                if code in dispatcher.table or code in OUT_OF_SCOPE:
                    continue  # the twin serves more than this real line (a 5.x code), or a reason is given
                peer = Peer(dispatcher, clock)
                peer.send(code, version=version)
                got = [(r.code, r.remark) for r in peer.responses()]
                if answer.verdict == "no answer":
                    assert got == [], (server, code, got)
                else:
                    assert got == [(3, not_supported_remark(code))], (server, code, got)


NOT_MODELLED_YET: set[int] = set()
"""Served by a real line, not by the twin yet (the coverage matrix names them too)."""
