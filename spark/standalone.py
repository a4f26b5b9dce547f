"""A real Spark standalone cluster on loopback, started from PySpark's own distribution.

``StandaloneCluster(workers=N)`` runs ``spark-class org.apache.spark.deploy.master.Master`` and N
``org.apache.spark.deploy.worker.Worker`` processes (the jars PySpark ships, nothing downloaded), all
bound to 127.0.0.1 on free ports, and waits until the master lists every worker ALIVE (its JSON status
page), not for a sleep. ``master_url`` is what ``--master`` takes::

    with StandaloneCluster(workers=2) as cluster:
        subprocess.run(["rmqtwin", "spark", "ingest", CAPTURE, "--out", OUT, "--master", cluster.master_url])

Executors are started by the workers and run this interpreter's Python (``spark_session`` sets
``spark.pyspark.python``), so rmqtwin and pyarrow are importable in them.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType

__all__ = ["StandaloneCluster", "StandaloneError", "spark_home"]


class StandaloneError(RuntimeError):
    """The master or a worker did not start; the message carries the tail of its log."""


def spark_home() -> Path:
    """PySpark's installed distribution (its ``bin/spark-class`` and ``jars/``)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class StandaloneCluster:
    """One master and ``workers`` workers (``cores`` cores and ``memory_mb`` MiB each) on 127.0.0.1."""

    def __init__(
        self,
        workers: int = 1,
        *,
        cores: int = 1,
        memory_mb: int = 1024,
        work_dir: str | os.PathLike[str] | None = None,
        start_timeout: float = 180.0,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.workers = workers
        self.cores = cores
        self.memory_mb = memory_mb
        self.start_timeout = start_timeout
        self._own_dir = work_dir is None
        self.work_dir = (
            Path(work_dir) if work_dir is not None else Path(tempfile.mkdtemp(prefix="rmqtwin-spark-"))
        )
        self.port = 0
        self.ui_port = 0
        self.processes: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment the cluster's processes (and a spark-submit to it) run with."""
        from rmqtwin.conformance.launcher import java_executable

        env = dict(os.environ)
        env["SPARK_HOME"] = str(spark_home())
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        env["SPARK_LOG_DIR"] = str(self.work_dir / "logs")
        env["PYSPARK_PYTHON"] = sys.executable
        java = java_executable()
        if java is not None:
            env["JAVA_HOME"] = str(Path(java).resolve().parent.parent)
        return env

    def _spawn(self, name: str, main_class: str, args: list[str]) -> None:
        log = self.work_dir / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), main_class, *args],
                env=self.env(),
                cwd=self.work_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append((name, proc, log))

    def _status(self) -> dict[str, object] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as answer:
                value = json.loads(answer.read())
        except (OSError, urllib.error.URLError, ValueError):
            return None
        return value if isinstance(value, dict) else None

    def alive_workers(self) -> int:
        status = self._status() or {}
        workers = status.get("workers") or []
        assert isinstance(workers, list)
        return sum(1 for w in workers if isinstance(w, dict) and w.get("state") == "ALIVE")

    def completed_apps(self) -> list[str]:
        """Names of the applications that ran on the cluster and finished."""
        apps = (self._status() or {}).get("completedapps") or []
        assert isinstance(apps, list)
        return [str(a.get("name")) for a in apps if isinstance(a, dict)]

    def log_tail(self, lines: int = 30) -> str:
        out = []
        for name, _, log in self.processes:
            text = log.read_text(errors="replace").splitlines()[-lines:]
            out.append(f"--- {name} ({log})\n" + "\n".join(text))
        return "\n".join(out)

    def start(self) -> StandaloneCluster:
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.port, self.ui_port = _free_port(), _free_port()
        deadline = time.monotonic() + self.start_timeout
        self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(self.ui_port)],
        )
        try:
            self._wait(lambda: self._status() is not None, deadline, "the master's status page")
            for i in range(self.workers):
                work = self.work_dir / f"worker-{i}"
                work.mkdir(exist_ok=True)
                self._spawn(
                    f"worker-{i}",
                    "org.apache.spark.deploy.worker.Worker",
                    [
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        str(self.cores),
                        "--memory",
                        f"{self.memory_mb}m",
                        "--webui-port",
                        str(_free_port()),
                        "--work-dir",
                        str(work),
                        self.master_url,
                    ],
                )
            self._wait(
                lambda: self.alive_workers() >= self.workers, deadline, f"{self.workers} ALIVE workers"
            )
        except BaseException:
            self.stop()
            raise
        return self

    def _wait(self, ready: object, deadline: float, what: str) -> None:
        assert callable(ready)
        while time.monotonic() < deadline:
            for name, proc, _ in self.processes:
                if proc.poll() is not None:
                    raise StandaloneError(
                        f"Spark {name} exited with {proc.returncode} waiting for {what}\n{self.log_tail()}"
                    )
            if ready():
                return
            time.sleep(0.2)
        raise StandaloneError(
            f"timed out after {self.start_timeout:.0f}s waiting for {what}\n{self.log_tail()}"
        )

    def stop(self) -> None:
        """SIGTERM the workers (they kill their executors), then the master; kill what lingers."""
        for _, proc, _ in reversed(self.processes):
            if proc.poll() is None:
                proc.terminate()
        for _, proc, _ in reversed(self.processes):
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.processes.clear()
        if self._own_dir:
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
