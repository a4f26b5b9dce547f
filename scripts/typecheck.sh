#!/usr/bin/env bash
# mypy over the rmqtwin namespace. mypy cannot follow the editable install's folder mapping, so it
# checks a view in build/typecheck/ where rmqtwin/<area> links to each top-level folder.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VIEW=$ROOT/build/typecheck
# Updated in place, never removed first: several checks may run at once in one tree.
mkdir -p "$VIEW/rmqtwin"
for f in rmqtwin/*.py; do ln -sfn "$ROOT/$f" "$VIEW/$f"; done
for area in codec fakes store_mirror proxy conformance spark; do ln -sfn "$ROOT/$area" "$VIEW/rmqtwin/$area"; done
find "$VIEW" -xtype l -delete  # links to modules that are gone
cd "$VIEW"
exec "$ROOT/.venv/bin/mypy" --config-file "$ROOT/pyproject.toml" --cache-dir "$ROOT/build/mypy-cache" -p rmqtwin "$@"
