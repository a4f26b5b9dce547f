#!/usr/bin/env bash
# tcpdump (Debian's package) for the tests that record a real Java client session with `tcpdump -i lo`
# beside `rmqtwin proxy` and check the pcap path against the capture path
# (rmqtwin.conformance.session). Skipped when already installed; without root or apt-get those tests
# skip, saying why.
set -euo pipefail
if command -v tcpdump >/dev/null 2>&1 || [ -x /usr/bin/tcpdump ] || [ -x /usr/sbin/tcpdump ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "[setup] tcpdump not installed and no root apt-get: the pcap-vs-capture checks will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends tcpdump >/dev/null 2>&1 || {
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends tcpdump >/dev/null
}
