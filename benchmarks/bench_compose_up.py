"""docker-compose.yml's rmqtwin service against its real namesrv + broker: seconds from ``docker compose
up -d --wait SERVICE`` to healthy, and to the first route for TBW102 answered through the published
name server port (what a client on the host needs), side by side with the ratio.

    .venv/bin/python benchmarks/bench_compose_up.py [--rounds 3]

Needs the images of scripts/setup.d/40-docker.sh (RMQTWIN_DOCKER=1 bash scripts/setup.sh).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from rmqtwin.conformance.launcher import free_port
from rmqtwin.containers import RMQTWIN_IMAGE, ROCKETMQ_IMAGE
from rmqtwin.probe import route_brokers

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"rmqtwin": ("rmqtwin", "TWIN_NAMESRV_PORT"), "real": ("broker", "NAMESRV_PORT")}


def up_once(service: str, port_var: str) -> tuple[float, float]:
    """(seconds to ``up --wait`` returning, seconds to the first route from the host)."""
    port = free_port()
    env = {
        **os.environ,
        "COMPOSE_PROJECT_NAME": f"rmqtwin-bench-{uuid.uuid4().hex[:8]}",
        "ROCKETMQ_IMAGE": ROCKETMQ_IMAGE,
        "RMQTWIN_IMAGE": RMQTWIN_IMAGE,
        port_var: str(port),
    }

    def compose(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "compose", *args], cwd=ROOT, env=env, capture_output=True, text=True, check=False
        )

    try:
        start = time.monotonic()
        up = compose("up", "-d", "--wait", service)
        healthy = time.monotonic() - start
        if up.returncode != 0:
            raise RuntimeError(up.stderr)
        while True:
            try:
                if route_brokers(f"127.0.0.1:{port}", timeout=1):
                    break
            except OSError:
                pass
            time.sleep(0.05)
        return healthy, time.monotonic() - start
    finally:
        compose("down", "-v", "--remove-orphans")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    medians: dict[str, tuple[float, float]] = {}
    for name, (service, port_var) in TARGETS.items():
        rounds = [up_once(service, port_var) for _ in range(args.rounds)]
        healthy = statistics.median(r[0] for r in rounds)
        routed = statistics.median(r[1] for r in rounds)
        medians[name] = (healthy, routed)
        every = ", ".join(f"{h:.1f}/{r:.1f}" for h, r in rounds)
        print(f"{name:8s} up --wait healthy {healthy:6.2f} s  first route {routed:6.2f} s  (rounds: {every})")
    twin, real = medians["rmqtwin"], medians["real"]
    print(f"ratio real/rmqtwin: healthy {real[0] / twin[0]:.1f}x, first route {real[1] / twin[1]:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
