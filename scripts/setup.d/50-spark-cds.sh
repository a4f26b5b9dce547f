#!/usr/bin/env bash
# The Spark driver JVM's class-data archive (rmqtwin.spark.cds): a `rmqtwin spark` job then starts
# its JVM in about half the time. Built once per JVM and PySpark; a failure only costs speed.
set -euo pipefail
cd "$(dirname "$0")/../.."
"$VENV/bin/rmqtwin" spark cds >&2 || echo "[setup] spark cds: the archive could not be built; Spark jobs start without it" >&2
