"""The fuzz corpus (``rmqtwin.conformance.fuzz``, kept in ``tests/fuzz_corpus``) replayed: every
input that once reached new code in the codec or the broker's request handling, and every input
that once found a bug, runs without a finding."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmqtwin.conformance.fuzz_harness import codec_input, replay

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
