#!/usr/bin/env bash
# Sets up (idempotently) and runs the whole check: ruff, mypy, then the pytest suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
VENV=.venv
echo "== ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "== mypy"
bash scripts/typecheck.sh
echo "== pytest"
set +e
"$VENV/bin/python" -m pytest "$@"
rc=$?
set -e
# pytest exits 5 when nothing was collected; that is a failure of the suite, not a pass.
exit $rc
