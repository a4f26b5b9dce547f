"""The main file for ``spark-submit``: ``spark-submit [options] submit.py JOB ARGS…`` runs
``rmqtwin spark JOB ARGS…`` (ingest, report, replay) on whatever master spark-submit was given.

spark-submit needs the main file on the submitting machine's disk: take it out of the built wheel
(``unzip -p dist/rmqtwin-*.whl rmqtwin/spark/submit.py > submit.py``) and ship the wheel itself with
``--py-files`` (docs/spark.md, "Clusters").
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from rmqtwin.cli import main as cli

    return cli(["spark", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    raise SystemExit(main())
