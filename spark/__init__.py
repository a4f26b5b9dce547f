"""PySpark jobs that ingest, analyse and replay captures."""
