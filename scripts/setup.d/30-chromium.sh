#!/usr/bin/env bash
# Headless Chromium (Debian's `chromium`) for the tests that check the HTML reports render: the
# replay report is opened with --headless --dump-dom and must show its verdict line and plots.
# Skipped when already installed; without root or apt-get the tests that need it skip.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "[setup] chromium not installed and no root apt-get: HTML report checks will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium >/dev/null
