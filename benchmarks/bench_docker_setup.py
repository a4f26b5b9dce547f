"""What the docker set-up costs: scripts/setup.d/40-docker.sh from nothing cached, then again with
everything cached, each step's seconds side by side.

"Nothing cached" runs the step as a fresh machine would, on a running engine: an empty HOME (no compose
plugin), empty Go module and build caches, no pip cache, and image names of its own (a new base image
from debootstrap, so no layer of the project's images is reused). Only the RocketMQ jars (fetched by
10-rocketmq.sh, measured there) are shared. The images it built are removed at the end.

    .venv/bin/python benchmarks/bench_docker_setup.py
"""

from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEP = ROOT / "scripts" / "setup.d" / "40-docker.sh"
CACHE = Path(os.environ.get("RMQTWIN_CACHE", Path.home() / ".cache" / "rmqtwin"))
IMAGES = {
    "RMQTWIN_BASE_IMAGE": "rmqtwin-base:bench",
    "RMQTWIN_IMAGE": "rmqtwin:bench",
    "ROCKETMQ_LOCAL_IMAGE": "rmqtwin-rocketmq:bench",
}
LINE = re.compile(r"\[\s*(\d+)s\] (.*)")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(env: dict[str, str]) -> tuple[float, float, list[tuple[int, str]]]:
    """Run the step; its wall time, the CPU seconds of its own processes (the compose plugin's Go build,
    debootstrap, pip wheel; not the engine's image builds) and its own timestamped log lines."""
    start, cpu = time.monotonic(), children_cpu()
    proc = subprocess.run(["bash", str(STEP)], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    lines = [(int(m[1]), m[2]) for m in map(LINE.search, proc.stderr.splitlines()) if m]
    return time.monotonic() - start, children_cpu() - cpu, lines


def main() -> int:
    home = Path(tempfile.mkdtemp(prefix="bench-docker-"))
    cache = home / "cache"
    (cache / "rocketmq").mkdir(parents=True)
    jars = CACHE / "rocketmq" / "5.5.0"
    (cache / "rocketmq" / "5.5.0").symlink_to(jars)
    env = {
        **os.environ,
        **IMAGES,
        "HOME": str(home),
        "DOCKER_CONFIG": str(home / ".docker"),
        "GOPATH": str(home / "go"),
        "GOCACHE": str(home / "go-build"),
        "GOFLAGS": "-modcacherw",
        "PIP_NO_CACHE_DIR": "1",
        "RMQTWIN_CACHE": str(cache),
        "RMQTWIN_DOCKER": "1",
        "VENV": str(ROOT / ".venv"),
    }
    try:
        load = os.getloadavg()[0]
        cold, cold_cpu, cold_lines = run(env)
        print(
            f"nothing cached   {cold:7.1f} s  (its processes' CPU {cold_cpu:.0f} s; load average "
            f"{load:.1f} before, {os.getloadavg()[0]:.1f} after)",
            flush=True,
        )
        previous = 0
        for seconds, text in cold_lines:
            print(f"  {seconds:5d} s  (+{seconds - previous:4d} s)  {text}")
            previous = seconds
        status = (cache / "docker" / "status").read_text().strip()
        if status != "ok":
            print(f"the cold set-up did not finish: {status}")
            return 1
        warm, _, warm_lines = run(env)
        print(f"all cached       {warm:7.1f} s")
        for seconds, text in warm_lines:
            print(f"  {seconds:5d} s  {text}")
        for image in IMAGES.values():
            size = subprocess.run(
                ["docker", "image", "inspect", "--format", "{{.Size}}", image],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            if size:
                print(f"image {image:28s} {int(size) / 1e6:6.0f} MB")
        print(f"ratio cold/warm  {cold / max(warm, 0.1):7.1f}")
    finally:
        subprocess.run(["docker", "image", "rm", "-f", *IMAGES.values()], capture_output=True, check=False)
        subprocess.run(["docker", "image", "prune", "-f"], capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
