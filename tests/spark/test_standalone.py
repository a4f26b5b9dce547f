"""``rmqtwin spark ingest --master spark://…`` on a real standalone cluster (master and worker from
PySpark's own distribution, on loopback) writes the same Parquet as local[2]: the same data pages byte
for byte and the same footer. (The tasks write with pyarrow; when Spark's parquet-mr wrote them, the
order in which a column chunk lists its encodings changed from one JVM to the next, a hash set's: the
digest still sorts them.)"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.spark.conftest import Ingested

pq = pytest.importorskip("pyarrow.parquet")

pytestmark = [pytest.mark.spark, pytest.mark.timeout(1200)]


def parquet_digest(path: Path) -> str:
    """sha256 over the file's bytes before its footer (magic and every data page) and its footer as
    pyarrow reads it (schema, row groups, column chunks with offsets, sizes and statistics, key-value
    metadata), each column chunk's encodings sorted."""
    raw = path.read_bytes()
    footer_len = int.from_bytes(raw[-8:-4], "little")
    parquet = pq.ParquetFile(path)
    meta = parquet.metadata.to_dict()
    for row_group in meta["row_groups"]:
        for column in row_group["columns"]:
            column["encodings"] = sorted(column["encodings"])
    kv = {k.decode(): v.decode() for k, v in (parquet.metadata.metadata or {}).items()}
    footer = json.dumps(
        {"meta": meta, "kv": kv, "schema": parquet.schema_arrow.to_string()}, sort_keys=True, default=str
    )
    return hashlib.sha256(raw[: len(raw) - 8 - footer_len] + footer.encode()).hexdigest()


def parquet_files(out: Path) -> dict[str, list[str]]:
    """Per table partition (``frames/capture=…/hour=…``), each Parquet file's ``parquet_digest``,
    sorted (file names carry a random job id)."""
    files: dict[str, list[str]] = {}
    for table in ("frames", "exchanges", "messages"):
        for f in (out / table).rglob("*.parquet"):
            files.setdefault(str(f.parent.relative_to(out)), []).append(parquet_digest(f))
    return {k: sorted(v) for k, v in files.items()}


def finished_apps(cluster: Any, count: int, timeout: float = 30.0) -> list[str]:
    """The cluster's completed applications once there are ``count`` (the master learns that a driver
    stopped a moment after its process exits), sorted by name; or as they are after ``timeout``."""
    deadline = time.monotonic() + timeout
    while len(apps := cluster.completed_apps()) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return sorted(apps)


def test_standalone_cluster_ingest_writes_the_pages_and_footers_of_local(
    ingested: Ingested, standalone_cluster: Any, tmp_path: Path
) -> None:
    cluster = standalone_cluster(1)
    before = len(cluster.completed_apps())
    out = tmp_path / "cluster"
    inputs = [str(p) for p in (ingested.capture, ingested.pcap, ingested.damaged)]
    cli = [sys.executable, "-m", "rmqtwin", "spark", "ingest", *inputs, "--out", str(out)]
    proc = subprocess.run(
        [*cli, "--master", cluster.master_url],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert finished_apps(cluster, before + 1)[-1:] == ["rmqtwin"]  # it ran on the cluster, not local[*]
    local, remote = parquet_files(ingested.out), parquet_files(out)
    assert remote == local
    assert sum(len(v) for v in local.values()) >= 6
