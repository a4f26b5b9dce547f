"""Every store layout: the struct hot path and the construct declaration agree on arbitrary values."""

from __future__ import annotations

import struct
from typing import Any

from construct import Struct
from hypothesis import given
from hypothesis import strategies as st

from rmqtwin.store_mirror.layouts import (
    CHECKPOINT,
    CHECKPOINT_FILE_SIZE,
    CQ_ENTRY,
    INDEX_ENTRY,
    INDEX_HEADER,
    INDEX_SLOT,
    Checkpoint,
    ConsumeQueueEntry,
    IndexEntry,
    IndexHashSlot,
    IndexHeader,
)

I32 = st.integers(-(2**31), 2**31 - 1)
I64 = st.integers(-(2**63), 2**63 - 1)


def field_names(layout: Struct) -> list[str]:
    return [str(sc.name) for sc in layout.subcons if sc.name]


def agree(layout: Struct, fast: struct.Struct, values: tuple[Any, ...]) -> None:
    raw = fast.pack(*values)
    names = field_names(layout)
    assert layout.build(dict(zip(names, values, strict=True))) == raw
    parsed = layout.parse(raw)
    assert tuple(parsed[n] for n in names) == values == fast.unpack(raw)


@given(I64, I32, I64)
def test_consume_queue_entry(offset: int, size: int, tags_code: int) -> None:
    agree(ConsumeQueueEntry, CQ_ENTRY, (offset, size, tags_code))


@given(st.tuples(I64, I64, I64, I64, I32, I32))
def test_index_header(values: tuple[int, ...]) -> None:
    agree(IndexHeader, INDEX_HEADER, values)


@given(I32)
def test_index_slot(value: int) -> None:
    agree(IndexHashSlot, INDEX_SLOT, (value,))


@given(st.tuples(I32, I64, I32, I32))
def test_index_entry(values: tuple[int, ...]) -> None:
    agree(IndexEntry, INDEX_ENTRY, values)


@given(st.tuples(I64, I64, I64, I64, I64))
def test_checkpoint(values: tuple[int, ...]) -> None:
    built = Checkpoint.build(dict(zip(field_names(Checkpoint), values, strict=True)))
    assert len(built) == CHECKPOINT_FILE_SIZE
    assert built[: CHECKPOINT.size] == CHECKPOINT.pack(*values)
    assert built[CHECKPOINT.size :] == bytes(CHECKPOINT_FILE_SIZE - CHECKPOINT.size)
