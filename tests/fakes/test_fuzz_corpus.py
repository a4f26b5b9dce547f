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
