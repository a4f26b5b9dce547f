"""docker-compose.yml is complete and consistent with rmqtwin's own CLI, with or without an engine."""

from __future__ import annotations

import shlex
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from rmqtwin.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    assert isinstance(data, dict)
    return data


def _command(service: dict[str, Any]) -> list[str]:
    command = service["command"]
    return shlex.split(command) if isinstance(command, str) else [str(part) for part in command]


def test_services_present(compose: dict[str, Any]) -> None:
    assert set(compose["services"]) >= {"namesrv", "broker", "proxy", "rmqtwin"}


@pytest.mark.parametrize("name", ["proxy", "rmqtwin"])
def test_rmqtwin_services_commands_parse_with_the_cli(compose: dict[str, Any], name: str) -> None:
    service = compose["services"][name]
    assert "build" in service
    args = build_parser().parse_args(_command(service))
    assert args.handler is not None


def test_dependencies_wait_on_healthchecks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    for name, service in services.items():
        for dependency, condition in (service.get("depends_on") or {}).items():
            assert condition == {"condition": "service_healthy"}, name
            assert "healthcheck" in services[dependency], f"{name} waits on unchecked {dependency}"


def test_mounted_files_exist(compose: dict[str, Any]) -> None:
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                path = ROOT / source
                assert path.exists() or source == "./captures", f"missing {source}"


def test_published_ports_match_the_advertised_rmqtwin_ports(compose: dict[str, Any]) -> None:
    service = compose["services"]["rmqtwin"]
    args = build_parser().parse_args(_command(service))
    published = {int(spec.split(":")[0]) for spec in service["ports"]}
    assert {args.namesrv_port, args.broker_port, args.broker_port - 2} <= published


@pytest.mark.docker
@pytest.mark.slow
def test_compose_stack_serves_rmqtwin(docker_engine: None) -> None:
    """With an engine: the stack comes up and rmqtwin's namesrv answers on the published port."""
    from testcontainers.compose import DockerCompose

    with DockerCompose(str(ROOT), compose_file_name="docker-compose.yml", services=["rmqtwin"], wait=True):
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", 19876), timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
