"""MappedFile appends with the commitlog's warm-ahead: the bytes land where they belong, nothing else
changes (the warming only faults pages in)."""

from __future__ import annotations

import os
from pathlib import Path

from rmqtwin.store_mirror.mapped_file import OS_PAGE_SIZE, MappedFile


def test_warmed_appends_write_only_their_bytes(tmp_path: Path) -> None:
    size = 10 * OS_PAGE_SIZE + 123  # not a whole number of pages, as a consume-queue file is not
    path = tmp_path / f"{0:020d}"
    mf = MappedFile(str(path), size, create=True, warm_chunk=3 * OS_PAGE_SIZE)
    expected = bytearray(size)
    pos = 0
    record = 0
    while True:
        data = bytes([record % 251 + 1]) * (700 + record * 37 % 900)
        if not mf.append(data):
            assert pos + len(data) > size
            break
        expected[pos : pos + len(data)] = data
        pos += len(data)
        record += 1
    assert mf.wrote_position == pos
    mf.flush()
    mf.close()
    assert path.read_bytes() == bytes(expected)


def test_warming_a_reloaded_file_keeps_what_it_holds(tmp_path: Path) -> None:
    size = 8 * OS_PAGE_SIZE
    path = tmp_path / f"{0:020d}"
    content = os.urandom(5 * OS_PAGE_SIZE + 77)
    path.write_bytes(content + bytes(size - len(content)))
    mf = MappedFile(str(path), size, warm_chunk=OS_PAGE_SIZE)
    mf.wrote_position = len(content)  # as recovery sets it
    assert mf.append(b"\xff" * 100)
    mf.flush()
    mf.close()
    assert path.read_bytes() == content + b"\xff" * 100 + bytes(size - len(content) - 100)
