"""testcontainers modules: the twin (:class:`RmqtwinContainer`), real Apache RocketMQ
(:class:`RocketMQContainer`) and the recording proxy in front of either (:class:`RecordingProxyContainer`),
each with ``get_namesrv_address()`` usable from the host.

RocketMQ clients dial the broker address the name server hands out, so each container publishes its
broker port 1:1 on the host's loopback (a free port chosen here) and advertises ``127.0.0.1``; the name
server port is published anywhere. "Started" means the name server routes ``TBW102`` to a broker
(:mod:`rmqtwin.probe`), not that a port is open. Images: scripts/setup.d/40-docker.sh builds
``rmqtwin:local`` and ``rmqtwin-rocketmq:5.5.0`` (``RMQTWIN_IMAGE`` / ``ROCKETMQ_IMAGE`` override).
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import time
from pathlib import Path
from typing import cast

from testcontainers.core.container import DockerContainer

from rmqtwin.conformance.launcher import cache_dir, free_broker_port, free_port
from rmqtwin.probe import route_brokers

__all__ = [
    "RMQTWIN_IMAGE",
    "ROCKETMQ_IMAGE",
    "RecordingProxyContainer",
    "RmqtwinContainer",
    "RocketMQContainer",
    "docker_problem",
]

RMQTWIN_IMAGE = os.environ.get("RMQTWIN_IMAGE", "rmqtwin:local")
ROCKETMQ_IMAGE = os.environ.get("ROCKETMQ_IMAGE", "rmqtwin-rocketmq:5.5.0")
LOOPBACK = "127.0.0.1"
PROXY_NAMESRV_PORT = 29876
"""Container port of a :class:`RecordingProxyContainer`'s name server (in its cluster's namespace)."""


def docker_problem(images: tuple[str, ...] = (RMQTWIN_IMAGE, ROCKETMQ_IMAGE)) -> str | None:
    """Why the docker tests cannot run here (engine, compose plugin, images), or None.

    The set-up step's own reason (``~/.cache/rmqtwin/docker/status``) comes first: it names what it
    could not install, start or build."""
    status = cache_dir() / "docker" / "status"
    reason = status.read_text().strip() if status.exists() else ""
    if reason and reason != "ok":
        return f"set-up: {reason}"
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
    except Exception as exc:
        return (
            f"no reachable Docker engine ({type(exc).__name__}: {exc}); "
            "make test or make docker, run as root, starts one"
        )
    compose = subprocess.run(["docker", "compose", "version"], capture_output=True, check=False)
    if compose.returncode != 0:
        return "the Docker engine answers but the 'docker compose' plugin is missing (40-docker.sh builds it)"
    for image in images:
        try:
            client.images.get(image)
        except Exception:
            return f"image {image} is not built (scripts/setup.d/40-docker.sh builds it)"
    return None


def _no_reaper() -> None:
    """Ryuk (testcontainers' reaper) is a Docker Hub image; without it locally, containers are stopped
    by the code that started them (context managers), which every caller here does anyway."""
    from testcontainers.core.config import testcontainers_config

    if not testcontainers_config.ryuk_disabled:
        import docker

        try:
            docker.from_env().images.get(testcontainers_config.ryuk_image)
        except Exception:
            testcontainers_config.ryuk_disabled = True


class _RoutedContainer(DockerContainer):
    """A name server on container port 9876 (published anywhere on loopback) and a broker whose port is
    published 1:1, ready when the name server routes TBW102."""

    startup_timeout = 120.0

    def __init__(self, image: str, broker_port: int | None = None) -> None:
        super().__init__(image)
        self.broker_port = broker_port or free_broker_port()
        # The ports of a RecordingProxyContainer that may join this network namespace later (a
        # container sharing a namespace cannot publish ports of its own): its name server anywhere,
        # its broker listener 1:1 like ours.
        self.proxy_broker_port = free_broker_port({self.broker_port - 2, self.broker_port})
        # Published on the loopback only (docker-py's (host_ip, port) form).
        ports = cast("dict[object, object]", self.ports)
        ports[9876] = (LOOPBACK, free_port())
        ports[self.broker_port] = (LOOPBACK, self.broker_port)
        ports[PROXY_NAMESRV_PORT] = (LOOPBACK, free_port())
        ports[self.proxy_broker_port] = (LOOPBACK, self.proxy_broker_port)

    def get_namesrv_address(self) -> str:
        """``127.0.0.1:PORT``: what a client on the host puts in namesrvAddr."""
        return f"{LOOPBACK}:{self.get_exposed_port(9876)}"

    def get_broker_address(self) -> str:
        return f"{LOOPBACK}:{self.broker_port}"

    def start(self) -> _RoutedContainer:
        _no_reaper()
        super().start()
        self.wait_until_routed()
        return self

    def wait_until_routed(self, timeout: float | None = None) -> None:
        """Block until the name server routes TBW102 to this broker; raise with the logs otherwise."""
        deadline = time.monotonic() + (timeout or self.startup_timeout)
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                if self.get_broker_address() in route_brokers(self.get_namesrv_address(), timeout=2):
                    return
                last = "no route yet"
            except (OSError, ValueError) as exc:
                last = str(exc)
            self.reload()
            if self.status not in ("created", "running"):
                break
            time.sleep(0.2)
        out, err = self.get_logs()
        raise TimeoutError(
            f"{self.image} not routed ({last}); status {self.status}; logs:\n{(out + err).decode()[-3000:]}"
        )

    def restart(self, *, kill: bool = False) -> None:
        """``docker restart`` (SIGTERM, then start), or SIGKILL then start with ``kill``; same container,
        same volumes and ports. Returns once routed again."""
        container = self.get_wrapped_container()
        if kill:
            container.kill()
            container.wait()
            container.start()
        else:
            container.restart(timeout=30)
        self.wait_until_routed()


class RmqtwinContainer(_RoutedContainer):
    """``rmqtwin serve`` in a container; the store lives in the image's /data volume.

    With ``fresh=True`` every (re)start begins with an empty store, so :meth:`reset` gives the next
    test a twin with no topics, messages, offsets or groups of the last one."""

    startup_timeout = 60.0

    def __init__(
        self,
        image: str = RMQTWIN_IMAGE,
        *,
        broker_port: int | None = None,
        fresh: bool = False,
        broker_conf: dict[str, str] | None = None,
    ) -> None:
        super().__init__(image, broker_port)
        serve = [
            "rmqtwin",
            "serve",
            "--host=0.0.0.0",
            "--namesrv-port=9876",
            f"--broker-port={self.broker_port}",
            f"--advertise={LOOPBACK}",
            "--store=/data/store",
        ]
        if broker_conf:
            conf = "".join(f"{k}={v}\n" for k, v in broker_conf.items())
            self.with_copy_into_container(conf.encode(), "/data/broker.conf")
            serve.append("--config=/data/broker.conf")
        script = ("rm -rf /data/store; " if fresh else "") + "exec " + " ".join(serve)
        self.with_kwargs(entrypoint=["sh", "-c", script])

    def reset(self) -> None:
        """A twin with an empty store (needs ``fresh=True``): restarted, routed again in about a second."""
        self.restart()


class RocketMQContainer(_RoutedContainer):
    """Real Apache RocketMQ: ``sh mqnamesrv`` and ``sh mqbroker -n 127.0.0.1:9876 -c broker.conf`` in one
    container of the official image's layout, brokerIP1 127.0.0.1 and listenPort published 1:1."""

    def __init__(
        self,
        image: str = ROCKETMQ_IMAGE,
        *,
        broker_port: int | None = None,
        broker_conf: dict[str, str] | None = None,
    ) -> None:
        super().__init__(image, broker_port)
        conf = {
            "brokerClusterName": "DefaultCluster",
            "brokerName": "broker-a",
            "brokerId": "0",
            "brokerIP1": LOOPBACK,
            "listenPort": str(self.broker_port),
            "autoCreateTopicEnable": "true",
            "autoCreateSubscriptionGroup": "true",
            "mappedFileSizeCommitLog": str(64 * 1024 * 1024),
            "brokerFastFailureEnable": "false",
            "osPageCacheBusyTimeOutMills": "10000",
            **(broker_conf or {}),
        }
        text = "".join(f"{k}={v}\n" for k, v in conf.items())
        self.with_copy_into_container(text.encode(), "/home/rocketmq/broker.conf")
        self.with_env("JAVA_OPT_EXT", "-Xms256m -Xmx512m")
        self.with_command(
            [
                "sh",
                "-c",
                "JAVA_OPT_EXT='-Xms128m -Xmx256m' sh mqnamesrv >/dev/null 2>&1 & "
                "exec sh mqbroker -n 127.0.0.1:9876 -c /home/rocketmq/broker.conf",
            ]
        )


class RecordingProxyContainer(DockerContainer):
    """``rmqtwin proxy`` in front of a started :class:`RmqtwinContainer` or :class:`RocketMQContainer`,
    recording every frame to ``/captures/traffic.rmqcap`` in the container.

    It joins the cluster container's network namespace, so it reaches the cluster's name server and
    broker on that namespace's loopback, exactly at the addresses the cluster advertises, and serves on
    the two ports the cluster container published for it (its name server anywhere, its broker listener
    1:1, advertised as 127.0.0.1). Stop it before its cluster; a restart of the cluster container gives
    it a new namespace, so start a new proxy after one."""

    startup_timeout = 60.0
    CAPTURES = "/captures"

    def __init__(self, cluster: _RoutedContainer, image: str = RMQTWIN_IMAGE) -> None:
        super().__init__(image)
        self.cluster = cluster
        self.with_kwargs(network_mode=f"container:{cluster.get_wrapped_container().id}")
        self.with_command(
            [
                "proxy",
                f"--upstream={LOOPBACK}:9876",
                "--host=0.0.0.0",
                f"--port={PROXY_NAMESRV_PORT}",
                f"--advertise={LOOPBACK}",
                f"--broker-port={cluster.proxy_broker_port}",
                f"--capture={self.CAPTURES}/traffic.rmqcap",
            ]
        )

    def get_namesrv_address(self) -> str:
        """``127.0.0.1:PORT``: the proxy's name server from the host (routes point at the proxy)."""
        return f"{LOOPBACK}:{self.cluster.get_exposed_port(PROXY_NAMESRV_PORT)}"

    def get_broker_address(self) -> str:
        return f"{LOOPBACK}:{self.cluster.proxy_broker_port}"

    def start(self) -> RecordingProxyContainer:
        _no_reaper()
        super().start()
        deadline = time.monotonic() + self.startup_timeout
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                if self.get_broker_address() in route_brokers(self.get_namesrv_address(), timeout=2):
                    return self
                last = "no route through the proxy yet"
            except (OSError, ValueError) as exc:
                last = str(exc)
            time.sleep(0.2)
        out, err = self.get_logs()
        raise TimeoutError(f"proxy not routing ({last}); logs:\n{(out + err).decode()[-3000:]}")

    def get_captures(self, dest: Path, *, stop: bool = False) -> list[Path]:
        """Copy the capture segments to ``dest`` on the host and return their paths.

        A running proxy's capture holds what it has written so far; ``stop=True`` stops the proxy
        first (SIGTERM), so every frame it read is in the files."""
        container = self.get_wrapped_container()
        if stop:
            container.stop(timeout=30)
        stream, _ = container.get_archive(self.CAPTURES)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            tar.extractall(dest, filter="data")
        return sorted((dest / Path(self.CAPTURES).name).glob("traffic.rmqcap*"))
