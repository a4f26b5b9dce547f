"""docker-compose.yml is complete and consistent with rmqtwin's own CLI, with or without an engine."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from rmqtwin.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    # As compose reads it with no variables set: ${NAME:-default} is the default.
    data = yaml.safe_load(re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", COMPOSE.read_text()))
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
    assert service["image"] == "rmqtwin:local"  # what scripts/setup.d/40-docker.sh builds
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


def test_advertised_broker_ports_are_published_one_to_one(compose: dict[str, Any]) -> None:
    """A client dials the port a broker advertises, so host port = container port for each broker."""
    services = compose["services"]
    twin = build_parser().parse_args(_command(services["rmqtwin"]))
    proxy = build_parser().parse_args(_command(services["proxy"]))
    conf = dict(
        line.split("=", 1) for line in (ROOT / "docker/broker.conf").read_text().splitlines() if "=" in line
    )
    expected = {
        "rmqtwin": str(twin.broker_port),
        "proxy": str(proxy.broker_port),
        "broker": conf["listenPort"],
    }
    for name, port in expected.items():
        mappings = {tuple(spec.split(":")[-2:]) for spec in services[name]["ports"]}
        assert (port, port) in mappings, name
        assert all(spec.startswith("127.0.0.1:") for spec in services[name]["ports"]), name
