#!/usr/bin/env bash
# Sets up (idempotently) and runs the check: ruff, mypy, then the pytest suite.
# By default the long real-broker scenario tests (marker `slow`) are left out so the suite stays within
# minutes; RMQTWIN_TEST_ALL=1 (`make test-all`) runs them too.
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
if [ "${RMQTWIN_TEST_ALL:-0}" = 1 ]; then
  "$VENV/bin/python" -m pytest "$@"
else
  "$VENV/bin/python" -m pytest -m "not slow" "$@"
fi
rc=$?
set -e
# pytest exits 5 when nothing was collected; that is a failure of the suite, not a pass.
exit $rc
