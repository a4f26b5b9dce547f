#!/usr/bin/env bash
# Sets up (idempotently) and runs rmqtwin on its embedded default:
# namesrv on 9876, broker on 10911, store in ./rmqtwin-store.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/rmqtwin serve --store ./rmqtwin-store "$@"
