"""The ingest on a small heap: memory is bounded by the partitioning, not by the capture's size.

Before the one-pass ingest, persisted DataFrames of records carrying message bodies were built as
in-heap columnar batches of 10,000 rows; a 200,000-frame synthetic capture (387 MB) ran a 512 MiB
driver out of heap (``OutOfMemoryError`` in ``NullableColumnBuilder.build``), a 1M-frame one a 1 GiB
driver. The driver memory is set at JVM start, so this runs in its own process.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(1800)]

FRAMES = 200_000


def test_a_large_capture_ingests_on_a_512m_driver(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    from rmqtwin.proxy.stats import CaptureStats
    from rmqtwin.proxy.synth import synthesize

    capture = tmp_path / "big.rmqcap"
    synthesize(capture, frames=FRAMES, seed=1)
    script = textwrap.dedent(
        f"""
        import json
        from rmqtwin.spark.ingest import ingest
        from rmqtwin.spark.session import spark_session
        spark = spark_session("local[2]", driver_memory="512m")
        heap = spark.sparkContext._jvm.java.lang.Runtime.getRuntime().maxMemory()
        result = ingest(spark, [{str(capture)!r}], {str(tmp_path / "out")!r}, progress=None)
        print(json.dumps({{"heap": heap, "rows": result.rows}}))
        spark.stop()
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=1700, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["heap"] <= 512 * 1024 * 1024
    assert got["rows"]["frames"] == CaptureStats.of(capture).frames >= FRAMES
