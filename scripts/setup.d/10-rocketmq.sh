#!/usr/bin/env bash
# Real Apache RocketMQ for the conformance suite: namesrv + broker + tools jars of 4.9.7 and
# 5.5.0 fetched from Maven Central into ~/.cache/rmqtwin/rocketmq/<version>/lib (or
# $RMQTWIN_CACHE), and the -sources.jar files tests/codec/test_codes.py reads RocketMQ's code tables
# from (launcher.SOURCE_JARS, into ~/.cache/rmqtwin/rocketmq-sources). Skipped quickly when already there. The fetch itself is
# rmqtwin.conformance.launcher.fetch, the same code the launcher runs on demand.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${VENV:-$PWD/.venv}
if ! command -v mvn >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
  echo "[setup] java/mvn not found: real RocketMQ not fetched (tests marked 'real' will skip)" >&2
  exit 0
fi
"$VENV/bin/rmqtwin" real fetch --version all
