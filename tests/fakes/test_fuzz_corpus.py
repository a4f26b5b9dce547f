"""The fuzz corpus (``rmqtwin.conformance.fuzz``, kept in ``tests/fuzz_corpus``) replayed: every
input that once reached new code in the codec or the broker's request handling, and every input
that once found a bug, runs without a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqtwin.codec.codes import RequestCode
from rmqtwin.codec.command import create_request, encode_command
from rmqtwin.conformance.fuzz_harness import Harness, codec_input, replay

CORPUS = Path(__file__).resolve().parent.parent / "fuzz_corpus"


def test_the_codec_corpus_replays_without_a_finding() -> None:
    inputs = sorted((CORPUS / "codec").iterdir())
    assert inputs
    for path in inputs:
        codec_input(path.read_bytes())


def test_the_broker_corpus_replays_without_a_finding(tmp_path: Path) -> None:
    inputs = sorted(str(p) for p in (CORPUS / "broker").iterdir())
    assert replay(inputs, str(tmp_path)) == len(inputs)


@pytest.mark.parametrize("name", sorted(p.name for p in (CORPUS / "found").iterdir()))
def test_each_input_that_found_a_bug(name: str, tmp_path: Path) -> None:
    assert replay([str(CORPUS / "found" / name)], str(tmp_path)) == 1


def test_a_topic_made_with_2_31_queues_is_forgotten_after_its_input(tmp_path: Path) -> None:
    """A later GET_CONSUME_STATS would walk each of its queues (as AdminBrokerProcessor does): a run once
    spent minutes and 1.7 GB there."""
    fields = {"defaultTopic": "TBW102", "writeQueueNums": "8", "perm": "6", "topicFilterType": "SINGLE_TAG"}
    create = create_request(
        RequestCode.UPDATE_AND_CREATE_TOPIC, fields | {"topic": "Huge", "readQueueNums": "2147483647"}
    )
    small = create_request(
        RequestCode.UPDATE_AND_CREATE_TOPIC, fields | {"topic": "Small", "readQueueNums": "1024"}
    )
    harness = Harness(str(tmp_path))
    try:
        for command in (create, small):
            harness.one_input(b"\x00" + encode_command(command))  # even first byte: the raw stream
        assert harness.broker.topics.get("Huge") is None
        assert harness.broker.topics.get("Small") is not None
    finally:
        harness.close()


def test_a_broker_whose_group_table_grew_past_the_limit_is_renewed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each group change persists the whole table: past MAX_TABLE groups the harness starts a fresh
    broker, so the run stays fast; until then, groups made by earlier inputs are still there."""
    monkeypatch.setattr("rmqtwin.conformance.fuzz_harness.MAX_TABLE", 40)
    harness = Harness(str(tmp_path))
    try:
        first = harness.broker
        built_in = len(first.groups.table)
        made = 40 - built_in + 1  # the input that makes the table pass 40 renews the broker
        for i in range(made):
            command = create_request(RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP, {}, b"")
            command.body = (
                b'{"groupName":"G%d","consumeEnable":true,"consumeBroadcastEnable":true,'
                b'"retryQueueNums":1,"retryMaxTimes":16,"brokerId":0,"whichBrokerWhenConsumeSlowly":1}' % i
            )
            harness.one_input(b"\x00" + encode_command(command))
            if i < made - 1:
                assert harness.broker is first and f"G{i}" in first.groups.table
        assert harness.generation == 1 and harness.broker is not first
        assert "G0" not in harness.broker.groups.table
        assert not (tmp_path / "0").exists()  # the old store is gone
    finally:
        harness.close()
