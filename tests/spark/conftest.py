"""One SparkSession per pytest process (local[2], bound to 127.0.0.1) for the ``spark`` tests, and one
ingest shared by every test that only reads its tables.

Starting Spark and warming its Python workers is most of what a small ingest costs, so the session
ingests once: a synthetic capture, the same capture exported as a pcap, and a small capture with a
truncated last record. ``standalone_cluster(workers)`` is a real Spark standalone master with that
many workers (``rmqtwin.spark.standalone``), started once per worker count. ``make test`` keeps the
tests of this directory on one xdist worker (``conformance/pytest_plugin.py``), so CI starts one
Spark for them.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("PySpark needs Java 17+")
    from rmqtwin.spark.session import spark_session

    session = spark_session("local[2]", app_name="rmqtwin-tests")
    yield session
    session.stop()


@dataclass(frozen=True)
class Ingested:
    """What the shared ingest read and where its tables are."""

    capture: Path
    """``c.rmqcap``: synthetic traffic (``synthesize(frames=1200, seed=11)``)."""
    pcap: Path
    """``c.pcap``: the same capture through ``to_pcap``."""
    damaged: Path
    """``d.rmqcap``: 100 frames, its last record cut short."""
    out: Path
    result: Any
    """The ``IngestResult``."""


@pytest.fixture(scope="session")
def ingested(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Ingested:
    from rmqtwin.proxy.pcap import to_pcap
    from rmqtwin.proxy.synth import synthesize
    from rmqtwin.spark.ingest import ingest

    root = tmp_path_factory.mktemp("ingest")
    capture, pcap, damaged = root / "c.rmqcap", root / "c.pcap", root / "d.rmqcap"
    synthesize(capture, frames=1200, seed=11)
    to_pcap(capture, pcap)
    synthesize(damaged, frames=100, seed=6)
    damaged.write_bytes(damaged.read_bytes()[:-3])
    out = root / "tables"
    result = ingest(spark, [str(capture), str(pcap), str(damaged)], out, progress=None)
    return Ingested(capture, pcap, damaged, out, result)


def assert_tables_give_capture_stats(spark: Any, capture: Path, out: Path) -> None:
    """``rmqtwin capture stats`` of ``capture`` (one process, no Spark) and the tables under ``out``
    agree: frame count, and per request code the exchange count and latency p50/p99."""
    from pyspark.sql import functions as sf

    from rmqtwin.proxy.stats import CaptureStats, percentile

    stats = CaptureStats.of(capture)
    where = f"capture = '{capture.name}'"
    rows = (
        spark.read.parquet(str(out / "exchanges"))
        .where(where)
        .groupBy("request_code")
        .agg(
            sf.count("*").alias("n"),
            sf.expr("percentile_disc(0.5) WITHIN GROUP (ORDER BY latency_ns)").alias("p50"),
            sf.expr("percentile_disc(0.99) WITHIN GROUP (ORDER BY latency_ns)").alias("p99"),
        )
        .collect()
    )
    got = {r["request_code"]: (r["n"], r["p50"], r["p99"]) for r in rows}
    want = {}
    for code, row in stats.by_code.items():
        lat = sorted(row.latencies)
        want[code] = (row.count, percentile(lat, 50) if lat else None, percentile(lat, 99) if lat else None)
    assert got == want
    assert spark.read.parquet(str(out / "frames")).where(where).count() == stats.frames


@pytest.fixture(scope="session")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[int], Any]]:
    """``standalone_cluster(2)``: a real standalone master and 2 workers (1 core, 1 GiB each) on
    loopback from PySpark's distribution, shared by the session; ``.master_url`` is ``spark://…``."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java 17+")
    from rmqtwin.spark.standalone import StandaloneCluster

    clusters: dict[int, StandaloneCluster] = {}

    def get(workers: int = 1) -> StandaloneCluster:
        cluster = clusters.get(workers)
        if cluster is None:
            work = tmp_path_factory.mktemp(f"standalone-{workers}")
            cluster = clusters[workers] = StandaloneCluster(workers, work_dir=work).start()
        return cluster

    try:
        yield get
    finally:
        for cluster in clusters.values():
            cluster.stop()
