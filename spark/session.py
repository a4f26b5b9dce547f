"""The one way this project builds a SparkSession: loopback-bound, the venv's Python in the workers,
the rmqtwin data sources registered."""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

__all__ = ["spark_session"]


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "rmqtwin",
    partitions: int = 2,
    driver_memory: str = "1g",
    sources: bool = True,
    java_options: str | None = None,
    short_job: bool = False,
) -> SparkSession:
    """A session on ``master`` (default ``local[2]``); drivers and local executors bind 127.0.0.1, and
    executors start this interpreter (a bare ``python3`` from PATH lacks pyarrow and rmqtwin).

    Under ``spark-submit`` (no ``master`` given, and spark-submit's gateway in the environment) the
    submitted master, hosts, Python and parallelism are kept (YARN, Kubernetes: executors elsewhere);
    only the settings the jobs rely on are set. ``driver_memory`` takes effect only when this call starts
    the JVM (the first session of the process). ``sources=False`` skips registering the rmqtwin data
    sources, for a job that reads only Parquet (the report): registering them costs about 2 s.
    ``java_options`` are the driver JVM's (default: map the class-data archive of :mod:`.cds` when
    it has been built), also only when this call starts the JVM. ``short_job`` (the report: tens of
    seconds of queries) keeps the JIT at its first tier: C2's compiles, several CPU seconds on two
    cores, were not paid back (the 1M-frame report 23.4-23.8 s against 25.6-29.0 s, alternating)."""
    submitted = master is None and "PYSPARK_GATEWAY_PORT" in os.environ
    builder = (
        SparkSession.builder.appName(app_name)
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.speculation", "false")
        .config("spark.sql.sources.partitionOverwriteMode", "dynamic")
    )
    if not submitted:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = (
            builder.master(master or "local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", str(partitions))
            .config("spark.default.parallelism", str(partitions))
            .config("spark.driver.memory", driver_memory)
            .config("spark.pyspark.python", sys.executable)
        )
        if java_options is None:
            from rmqtwin.spark.cds import java_options as archive_options

            java_options = " ".join(
                o for o in (archive_options(), "-XX:TieredStopAtLevel=1" if short_job else None) if o
            )
        if java_options:
            builder = builder.config("spark.driver.extraJavaOptions", java_options)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    if sources:
        from rmqtwin.spark import register

        register(spark)
    return spark
