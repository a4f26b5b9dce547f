"""docker-compose.yml brought up for real: the real Java client, on the host and in a container on the
compose network, sends and consumes through each entry point (real RocketMQ, the recording proxy in
front of it, rmqtwin); the proxy's capture opens with ``rmqtwin capture show``; ``down -v`` leaves
nothing. The testcontainers modules are tested in test_containers.py.

Images come from scripts/setup.d/40-docker.sh; without an engine these tests skip with its reason.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from rmqtwin.conformance.java_client import JavaClient, target_dir
from rmqtwin.conformance.launcher import free_port
from rmqtwin.containers import RMQTWIN_IMAGE, ROCKETMQ_IMAGE
from tests.docker.helpers import capture_show, msg_ids

# In make test wherever the docker set-up could run (scripts/setup.d/40-docker.sh says why not).
pytestmark = [pytest.mark.docker, pytest.mark.java, pytest.mark.xdist_group("docker")]

ROOT = Path(__file__).resolve().parents[2]
ADVERTISED_NAMES = ("broker", "proxy", "rmqtwin")


@dataclass
class Stack:
    project: str
    env: dict[str, str]
    captures: Path
    hosts_file: Path
    entry_points: dict[str, tuple[str, str]]
    """entry point -> (namesrv from the host, namesrv in the compose network)"""

    def compose(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["docker", "compose", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def leftovers(self) -> list[str]:
        label = f"label=com.docker.compose.project={self.project}"
        found = []
        for kind in ("container", "volume", "network"):
            out = subprocess.run(
                ["docker", kind, "ls", "-q", *(["-a"] if kind == "container" else []), "--filter", label],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.split()
            found += [f"{kind} {name}" for name in out]
        return found


@pytest.fixture(scope="module")
def stack(docker_engine: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("compose")
    captures = work / "captures"
    captures.mkdir()
    captures.chmod(0o777)  # the proxy runs as the image's rmqtwin user
    hosts_file = work / "hosts"
    hosts_file.write_text(f"127.0.0.1 localhost {' '.join(ADVERTISED_NAMES)}\n")
    project = f"rmqtwin-test-{uuid.uuid4().hex[:8]}"
    ports = {name: str(free_port()) for name in ("NAMESRV_PORT", "PROXY_NAMESRV_PORT", "TWIN_NAMESRV_PORT")}
    env = {
        **os.environ,
        "COMPOSE_PROJECT_NAME": project,
        "ROCKETMQ_IMAGE": ROCKETMQ_IMAGE,
        "RMQTWIN_IMAGE": RMQTWIN_IMAGE,
        "CAPTURES_DIR": str(captures),
        **ports,
    }
    s = Stack(
        project,
        env,
        captures,
        hosts_file,
        {
            "real": (f"127.0.0.1:{ports['NAMESRV_PORT']}", "namesrv:9876"),
            "proxy": (f"127.0.0.1:{ports['PROXY_NAMESRV_PORT']}", "proxy:9876"),
            "twin": (f"127.0.0.1:{ports['TWIN_NAMESRV_PORT']}", "rmqtwin:9876"),
        },
    )
    try:
        up = s.compose("up", "-d", "--wait", timeout=600)
        assert up.returncode == 0, up.stderr + s.compose("logs").stdout[-5000:]
        yield s
    finally:
        down = s.compose("down", "-v", "--remove-orphans")
        assert down.returncode == 0, down.stderr
    assert s.leftovers() == []


class NetworkJavaClient(JavaClient):
    """The same drivers, run by the rocketmq image's JRE in a container on the compose network (paths
    mounted at the same place, so the JavaClient command line works unchanged)."""

    def __init__(self, network: str) -> None:
        super().__init__("5")
        self.network = network

    def _command(self, main_class: str, args: Sequence[str], home: Path, **kwargs: object) -> list[str]:
        command = super()._command(main_class, args, home, **kwargs)
        java = [arg for arg in command[1:] if "SharedArchiveFile" not in arg and "ArchiveClasses" not in arg]
        target = target_dir(self.version)
        return [
            "docker",
            "run",
            "--rm",
            "--network",
            self.network,
            "--user",
            f"{os.getuid()}:{os.getgid()}",
            "-v",
            f"{target}:{target}:ro",
            "-v",
            f"{home}:{home}",
            "-w",
            str(home),
            "-e",
            f"ROCKETMQ_HOME={home}",
            ROCKETMQ_IMAGE,
            "java",
            *java,
        ]


@pytest.mark.parametrize("entry", ["real", "proxy", "twin"])
def test_java_client_in_network_and_on_host(
    stack: Stack, entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Host producer -> in-network consumer and in-network producer -> host consumer, through one entry
    point: the advertised broker names work on both sides."""
    host_ns, net_ns = stack.entry_points[entry]
    inside = NetworkJavaClient(f"{stack.project}_rocketmq")
    host = JavaClient("5")
    topic = f"Docker{entry.title()}{uuid.uuid4().hex[:6]}"

    monkeypatch.setenv("JAVA_TOOL_OPTIONS", f"-Djdk.net.hosts.file={stack.hosts_file}")
    from_host = host.producer(host_ns, topic, mode="sync", count=4)
    monkeypatch.delenv("JAVA_TOOL_OPTIONS")
    assert len(from_host.sent) == 4, from_host.errors
    from_inside = inside.producer(net_ns, topic, mode="sync", count=4)
    assert len(from_inside.sent) == 4, from_inside.errors

    got_inside = inside.push_consumer(
        net_ns, topic, group=f"gi-{topic}", expect=8, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET"
    )
    assert msg_ids(got_inside.received) == msg_ids(from_host.sent) | msg_ids(from_inside.sent)
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", f"-Djdk.net.hosts.file={stack.hosts_file}")
    got_host = host.push_consumer(
        host_ns, topic, group=f"gh-{topic}", expect=8, consumeFromWhere="CONSUME_FROM_FIRST_OFFSET"
    )
    assert msg_ids(got_host.received) == msg_ids(from_host.sent) | msg_ids(from_inside.sent)


def test_proxy_capture_opens_with_capture_show(stack: Stack) -> None:
    """The proxy records into ./captures (CAPTURES_DIR); the host's rmqtwin reads it while it grows."""
    captures = sorted(stack.captures.glob("traffic.rmqcap*"))
    assert captures, list(stack.captures.iterdir())
    shown = capture_show(captures[0])
    assert "GET_ROUTEINFO_BY_TOPIC" in shown
    assert "SEND_MESSAGE" in shown, shown[-2000:]
