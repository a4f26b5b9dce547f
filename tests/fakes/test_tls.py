"""TLS on rmqtwin's ports, per ``tls.server.mode``, with a plain socket, Python's TLS and the Java client."""

from __future__ import annotations

import socket
import ssl
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import RemotingCommand, create_request
from rmqtwin.codec.connection import RemotingConnection, ResponseReceived
from rmqtwin.fakes.pytest_plugin import RunningTwin, start_subprocess
from rmqtwin.fakes.tls import self_signed_pem


def _client_context() -> ssl.SSLContext:
    """What a Java client in ``tls.test.mode`` does: TLS, but any server certificate is accepted."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def call(addr: str, code: int, *, tls: bool) -> RemotingCommand | None:
    """One request over a fresh connection; ``None`` when the server closes it instead of answering."""
    host, _, port = addr.rpartition(":")
    conn = RemotingConnection()
    raw = socket.create_connection((host, int(port)), timeout=10)
    try:
        sock: socket.socket = _client_context().wrap_socket(raw) if tls else raw
    except (ssl.SSLError, OSError):
        raw.close()
        return None
    with sock:
        conn.send_request(create_request(code), now=0, timeout=10)
        try:
            sock.sendall(conn.data_to_send())
            while True:
                data = sock.recv(65536)
                if not data:
                    return None
                for event in conn.receive_data(data):
                    if isinstance(event, ResponseReceived):
                        return event.command
        except (ssl.SSLError, ConnectionError):
            return None


@pytest.fixture
def twin_with(tmp_path: Path) -> Iterator[Callable[..., RunningTwin]]:
    started: list[RunningTwin] = []

    def start(*serve_args: str) -> RunningTwin:
        twin = start_subprocess(str(tmp_path / f"twin{len(started)}"), serve_args=serve_args)
        started.append(twin)
        return twin

    yield start
    for twin in started:
        twin.stop()


def test_permissive_by_default_serves_plain_and_tls_on_every_port(
    twin_with: Callable[..., RunningTwin],
) -> None:
    twin = twin_with()
    for addr in (twin.namesrv_addr, twin.broker_addr, twin.vip_addr):
        for tls in (False, True):
            answer = call(addr, RequestCode.GET_BROKER_CLUSTER_INFO, tls=tls)
            assert answer is not None, (addr, tls)
    answer = call(twin.namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO, tls=True)
    assert answer is not None and answer.code == ResponseCode.SUCCESS and b"broker-a" in (answer.body or b"")


def test_enforcing_closes_plain_connections_and_disabled_closes_tls_ones(
    twin_with: Callable[..., RunningTwin],
) -> None:
    enforcing = twin_with("--tls-mode", "enforcing")
    assert call(enforcing.namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO, tls=False) is None
    answer = call(enforcing.namesrv_addr, RequestCode.GET_BROKER_CLUSTER_INFO, tls=True)
    assert answer is not None and answer.code == ResponseCode.SUCCESS
    disabled = twin_with("--tls-mode", "disabled")
    assert call(disabled.broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO, tls=True) is None
    answer = call(disabled.broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO, tls=False)
    assert answer is not None and answer.code == ResponseCode.SUCCESS
    # the server survived the refused connections
    assert call(enforcing.broker_addr, RequestCode.GET_BROKER_RUNTIME_INFO, tls=True) is not None


def test_a_given_certificate_is_the_one_served(twin_with: Callable[..., RunningTwin], tmp_path: Path) -> None:
    pem = self_signed_pem("rmqtwin-test-cert")
    key, _, cert = pem.partition(b"-----END PRIVATE KEY-----\n")
    (tmp_path / "key.pem").write_bytes(key + b"-----END PRIVATE KEY-----\n")
    (tmp_path / "cert.pem").write_bytes(cert)
    twin = twin_with("--tls-cert", str(tmp_path / "cert.pem"), "--tls-key", str(tmp_path / "key.pem"))
    host, _, port = twin.broker_addr.rpartition(":")
    with (
        socket.create_connection((host, int(port)), timeout=10) as raw,
        _client_context().wrap_socket(raw) as sock,
    ):
        served = sock.getpeercert(binary_form=True)
    assert served is not None and ssl.DER_cert_to_PEM_cert(served).encode().strip() == cert.strip()


def tls_scenario(java_client: Any, namesrv: str, topic: str, group: str) -> tuple[list[Any], list[Any]]:
    """``-Dtls.enable=true``: the producer and consumer talk TLS to the name server and the broker."""
    tls = {"tls.enable": "true"}
    messages = [{"body": f"tls-{i}"} for i in range(3)]
    sent = java_client.producer(namesrv, topic, messages=messages, systemProperties=tls).check()
    got = java_client.push_consumer(
        namesrv, topic, group=group, expect=3, timeoutMs=60_000, systemProperties=tls
    ).check()
    return [e.get("status") for e in sent.sent], sorted(e.get("body") for e in got.received)


EXPECTED = (["SEND_OK"] * 3, ["tls-0", "tls-1", "tls-2"])


@pytest.mark.java
def test_java_client_with_tls_against_an_enforcing_twin(
    twin_with: Callable[..., RunningTwin], java_client: Any, unique_name: Callable[[str], str]
) -> None:
    """Enforcing mode closes plain connections, so the client's success shows it used TLS throughout."""
    twin = twin_with("--tls-mode", "enforcing")
    assert (
        tls_scenario(java_client, twin.namesrv_addr, unique_name("TopicTls"), unique_name("gtls")) == EXPECTED
    )


@pytest.mark.java
@pytest.mark.real
def test_java_client_with_tls_against_real_rocketmq(
    real_rocketmq: Any, java_client: Any, unique_name: Callable[[str], str]
) -> None:
    """The same scenario against the real broker (its default, permissive mode, self-signed certificate)."""
    namesrv = real_rocketmq.namesrv_addr
    assert tls_scenario(java_client, namesrv, unique_name("TopicTls"), unique_name("gtls")) == EXPECTED
