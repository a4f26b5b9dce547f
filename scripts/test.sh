#!/usr/bin/env bash
# Sets up (idempotently) and runs the check: ruff, mypy, then the pytest suite.
# The default run (CI: .ci/run -> make test) includes the real-Java-client evidence of every area against
# real Apache RocketMQ 4.9.7 and 5.5.0 on one shared cluster per line: the fakes-vs-real conformance
# scenarios, the twin broker behind a real name server, the proxy in front of a real cluster (broker kill
# included) and the store interop both ways, and where the docker set-up can run (it builds what is
# missing, from nothing on a new machine; otherwise they skip saying why) docker-compose.yml brought up with the Java client and the testcontainers
# modules. Only the exhaustive variants (marker `slow`: the launcher's
# own restart/two-broker checks, the 20-round crash test) are left out; RMQTWIN_TEST_ALL=1
# (`make test-all`) runs them too.
set -euo pipefail
cd "$(dirname "$0")/.."
# The docker tests run here, so the set-up brings their images up to date with the tree (40-docker.sh).
RMQTWIN_DOCKER_TESTS=1 bash scripts/setup.sh
VENV=.venv
echo "== ruff"
"$VENV/bin/ruff" check .
"$VENV/bin/ruff" format --check .
echo "== mypy"
bash scripts/typecheck.sh
echo "== pytest"
set +e
# Two pytest-xdist workers (RMQTWIN_TEST_WORKERS): the real-client tests mostly wait on JVMs and
# brokers, so two overlap well on two cores. --dist loadgroup keeps each real line's tests on one
# worker (conformance/pytest_plugin.py groups them), so no cluster is started twice.
# --durations: the slowest set-ups and tests, so the log shows where the minutes go.
PARALLEL=(-n "${RMQTWIN_TEST_WORKERS:-2}" --dist loadgroup --durations=25)
if [ "${RMQTWIN_TEST_ALL:-0}" = 1 ]; then
  "$VENV/bin/python" -m pytest "${PARALLEL[@]}" "$@"
else
  "$VENV/bin/python" -m pytest -m "not slow" "${PARALLEL[@]}" "$@"
fi
rc=$?
set -e
# pytest exits 5 when nothing was collected; that is a failure of the suite, not a pass.
exit $rc
