#!/usr/bin/env bash
# Idempotent set-up of a fresh machine: .venv with rmqtwin and its dev tools, the Java-side
# builds (Maven), and the system packages the tests use. Safe to run again; quick when done.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=$ROOT/.venv
STAMP_DIR=$VENV/.rmqtwin-stamps
PY=${PYTHON:-python3}

log() { printf '[setup] %s\n' "$*" >&2; }

# 1. Python virtualenv with rmqtwin (editable) and the dev tools.
if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
mkdir -p "$STAMP_DIR"
want=$(cat pyproject.toml setup.py | sha256sum | cut -c1-16)
if [ "$(cat "$STAMP_DIR/python" 2>/dev/null)" != "$want" ]; then
  log "installing rmqtwin and its dependencies into .venv"
  "$VENV/bin/python" -m pip install -q -U pip setuptools wheel
  "$VENV/bin/python" -m pip install -q -e ".[spark,report,dev]"
  echo "$want" > "$STAMP_DIR/python"
fi

# 2. System tools the tests use as oracles (tshark reads the pcaps we write).
if [ "${RMQTWIN_SKIP_APT:-0}" != 1 ] && ! command -v tshark >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  log "installing tshark from Debian's packages"
  (export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq tshark >/dev/null) \
    || log "tshark could not be installed; pcap tests will skip"
fi

# 3. Java side: each Maven project under the tree builds once per change of its sources (every module's
#    target/ is build output, not source; a project without any target/ has not been built here).
for pom in $(ls conformance/java/pom.xml tests/golden/java/pom.xml docker/testcontainers-java/pom.xml 2>/dev/null); do
  dir=$(dirname "$pom")
  key=$(echo "$dir" | tr '/' '_')
  want=$(find "$dir" -name target -prune -o -type f -print | sort | xargs sha256sum | sha256sum | cut -c1-16)
  built=$(find "$dir" -name target -type d -prune -print -quit)
  if [ "$(cat "$STAMP_DIR/$key" 2>/dev/null)" != "$want" ] || [ -z "$built" ]; then
    log "building $dir with Maven"
    (cd "$dir" && mvn -q -B -DskipTests package) || { log "Maven build of $dir failed"; exit 1; }
    echo "$want" > "$STAMP_DIR/$key"
  fi
done

# 4. Extra set-up steps contributed by each area (e.g. fetching real RocketMQ jars).
for step in scripts/setup.d/*.sh; do
  [ -e "$step" ] || continue
  log "running $step"
  VENV="$VENV" bash "$step"
done
log "ready"
