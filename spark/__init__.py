"""PySpark jobs that ingest, analyse and replay captures.

``register(spark)`` makes the project's data sources known to a session (``spark_session`` does it);
each module listed in ``DATA_SOURCE_MODULES`` contributes its ``DATA_SOURCES`` tuple.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["DATA_SOURCE_MODULES", "register"]

DATA_SOURCE_MODULES: tuple[str, ...] = ("rmqtwin.spark.sources",)


def register(spark: SparkSession) -> None:
    """Register every data source of ``DATA_SOURCE_MODULES`` with ``spark`` (``rmqcap``, ``pcap``,
    ``rocketmq-store``, ...)."""
    for name in DATA_SOURCE_MODULES:
        for source in importlib.import_module(name).DATA_SOURCES:
            spark.dataSource.register(source)
