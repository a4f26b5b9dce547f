"""One SparkSession per pytest process (local[2], bound to 127.0.0.1) for the ``spark`` tests."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
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
