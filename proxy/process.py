"""``rmqtwin proxy`` as a child process, for tests, benchmarks and scripts that drive one.

The proxy prints one ``listening on HOST:PORT`` line when ready; its stderr (warnings, errors) goes to a
file next to the capture, never to a pipe that nobody drains (a full pipe would block its reactor).
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rmqtwin.proxy.capture import Record, read_records

__all__ = ["ProxyProcess", "start_proxy"]


@dataclass
class ProxyProcess:
    process: subprocess.Popen[str]
    namesrv: str
    """The proxy's namesrv address, ``host:port``: the only setting clients need."""
    capture: Path
    log_path: Path
    faults_url: str | None = None
    """The fault API's base URL when started with ``faults=True``."""
    metrics_url: str | None = None
    """The Prometheus endpoint when started with ``--metrics-port``."""

    def log(self) -> str:
        """What the proxy wrote to stderr: warnings, and errors that closed a connection."""
        return self.log_path.read_text()

    def records(self) -> list[Record]:
        return list(read_records(self.capture))

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (the proxy closes its connections, writes what is queued and fsyncs), then wait."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def start_proxy(
    upstream: str,
    capture: str | os.PathLike[str],
    *extra: str,
    ready_timeout: float = 30.0,
    record: bool = True,
    faults: bool = False,
) -> ProxyProcess:
    """Start ``rmqtwin proxy --upstream UPSTREAM --port 0 --capture CAPTURE EXTRA…`` and wait until ready.

    With ``record=False`` the proxy only forwards (no ``--capture``); ``capture`` then only names
    where its log goes. ``faults=True`` adds its fault API on a free loopback port (``faults_url``).
    """
    capture = Path(capture)
    log_path = capture.with_name(capture.name + ".log")
    cmd = [sys.executable, "-m", "rmqtwin", "proxy", "--upstream", upstream, "--port", "0"]
    cmd += [
        *(["--capture", str(capture)] if record else []),
        *(["--faults-port", "0"] if faults else []),
        *extra,
    ]
    with log_path.open("w") as log:
        process = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True)
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], ready_timeout)
    line = process.stdout.readline() if ready else ""
    match = re.search(r"listening on (\S+) ", line)
    faults_url = metrics_url = None
    if match is not None and faults:
        # printed right after the first line (and maybe read with it into the pipe's buffer already)
        api = re.search(r"fault API on (\S+)", process.stdout.readline())
        faults_url = api.group(1) if api is not None else None
    if match is not None and "--metrics-port" in extra:
        scrape = re.search(r"metrics on (\S+)", process.stdout.readline())
        metrics_url = scrape.group(1) if scrape is not None else None
    if (
        match is None
        or (faults and faults_url is None)
        or ("--metrics-port" in extra and metrics_url is None)
    ):
        process.kill()
        process.wait()
        raise RuntimeError(f"rmqtwin proxy did not start: {line!r}\n{log_path.read_text()}")
    return ProxyProcess(process, match.group(1), capture, log_path, faults_url, metrics_url)
