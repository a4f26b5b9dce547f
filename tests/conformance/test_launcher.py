"""The launcher's pure parts: version names, ports, broker.conf, and the readiness probe's wire format."""

from __future__ import annotations

import json
import socket
import struct
import threading
from pathlib import Path

import pytest

from rmqtwin.conformance import cli, launcher
from rmqtwin.conformance.launcher import RealRocketMQ, resolve_version


@pytest.mark.parametrize(
    ("name", "server", "client"),
    [
        ("4.9", "4.9.7", "4.9.8"),
        ("4.9.8", "4.9.7", "4.9.8"),
        ("4.9.7", "4.9.7", "4.9.8"),
        ("4", "4.9.7", "4.9.8"),
        ("5", "5.5.0", "5.5.0"),
        ("5.x", "5.5.0", "5.5.0"),
        ("5.5.0", "5.5.0", "5.5.0"),
    ],
)
def test_resolve_version(name: str, server: str, client: str) -> None:
    version = resolve_version(name)
    assert (version.server, version.client) == (server, client)


def test_resolve_version_rejects_unknown() -> None:
    with pytest.raises(ValueError, match="unknown RocketMQ version"):
        resolve_version("3.2")


def test_free_broker_port_leaves_fast_and_ha_ports_free() -> None:
    taken = {1, 2}
    port = launcher.free_broker_port(taken)
    for p in (port - 2, port, port + 1):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", p))


def test_broker_conf_derives_ports_and_paths_and_lets_overrides_win(tmp_path: Path) -> None:
    rmq = RealRocketMQ(
        "5", store_dir=tmp_path / "s", brokers=2, broker_conf_overrides={"brokerIP1": "10.0.0.1"}
    )
    rmq.namesrv_port = 9000
    rmq.broker_ports = [10911, 10921]
    rmq.store_dirs = [tmp_path / "s" / "broker-a", tmp_path / "s" / "broker-b"]
    conf = rmq.broker_conf(1)
    assert conf["brokerName"] == "broker-b"
    assert conf["listenPort"] == 10921
    assert conf["haListenPort"] == 10922
    assert conf["namesrvAddr"] == "127.0.0.1:9000"
    assert conf["storePathCommitLog"] == str(tmp_path / "s" / "broker-b" / "commitlog")
    assert conf["brokerIP1"] == "10.0.0.1"
    assert conf["autoCreateTopicEnable"] is True
    text = launcher._format_properties(conf)
    assert "autoCreateTopicEnable=true\n" in text
    assert "mappedFileSizeCommitLog=16777216\n" in text


def test_addresses_need_a_started_instance() -> None:
    with pytest.raises(launcher.RealRocketMQError, match="not started"):
        _ = RealRocketMQ("4.9").namesrv_addr


def test_cli_overrides_parse_key_value() -> None:
    assert cli._parse_overrides(["a=1", " b = x=y "]) == {"a": "1", "b": "x=y"}
    with pytest.raises(SystemExit):
        cli._parse_overrides(["novalue"])


def _serve_once(
    server: socket.socket, reply_body: bytes, seen: list[bytes], answer: dict[str, object] | None = None
) -> None:
    conn, _ = server.accept()
    with conn:
        (length,) = struct.unpack(">I", launcher._read_exact(conn, 4))
        seen.append(launcher._read_exact(conn, length))
        fields = answer or {"code": 0}
        header = json.dumps({**fields, "flag": 1, "language": "JAVA", "opaque": 1, "version": 397}).encode()
        frame = struct.pack(">I", len(header)) + header + reply_body
        conn.sendall(struct.pack(">I", len(frame)) + frame)


def test_query_cluster_info_frames_a_json_request_and_splits_the_answer() -> None:
    body = b'{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"127.0.0.1:10911"}}}}'
    seen: list[bytes] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        thread = threading.Thread(target=_serve_once, args=(server, body, seen))
        thread.start()
        code, got = launcher.query_cluster_info(f"127.0.0.1:{server.getsockname()[1]}")
        thread.join(5)
    assert (code, got) == (0, body)
    (word,) = struct.unpack(">I", seen[0][:4])
    assert word >> 24 == 0  # JSON serialize type
    header = json.loads(seen[0][4 : 4 + (word & 0xFFFFFF)])
    assert header["code"] == launcher.GET_BROKER_CLUSTER_INFO
    assert header["language"] == "JAVA"
    assert len(seen[0]) == 4 + (word & 0xFFFFFF)  # no body


# What a just-registered 4.9.7 broker answered in CI before its store stats had a sample.
NOT_SAMPLED = {
    "code": 1,
    "remark": "java.util.NoSuchElementException, org.apache.rocketmq.store.StoreStatsService.getPutTps",
}


@pytest.mark.parametrize(("answer", "ready"), [(NOT_SAMPLED, False), ({"code": 0}, True)])
def test_a_broker_is_ready_only_once_runtime_info_answers_success(
    answer: dict[str, object], ready: bool
) -> None:
    seen: list[bytes] = []
    rmq = RealRocketMQ("4.9")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        thread = threading.Thread(target=_serve_once, args=(server, b"{}", seen, answer))
        thread.start()
        got = rmq._answers_runtime_info(f"127.0.0.1:{server.getsockname()[1]}", None)
        thread.join(5)
    assert got is ready
    assert rmq.last_probe_answer == (answer["code"], answer.get("remark"))
    (word,) = struct.unpack(">I", seen[0][:4])
    assert json.loads(seen[0][4 : 4 + (word & 0xFFFFFF)])["code"] == launcher.GET_BROKER_RUNTIME_INFO


ACL_YML = """\
globalWhiteRemoteAddresses:
  - 10.254.0.*
accounts:
  - accessKey: plainUser
    secretKey: plainSecret1
  - accessKey: adminKey
    secretKey: adminSecret1
    admin: true
"""


def test_the_probe_of_an_acl_broker_is_signed_as_its_admin_account() -> None:
    """4.9's ACL refuses an unsigned probe before reading its stats; the signature must verify as the
    broker verifies it (checked here by the twin's own AclUtils port, written separately)."""
    from rmqtwin.fakes.broker.acl import cal_signature, signature_content

    credentials = launcher.acl_probe_credentials({"plain_acl.yml": ACL_YML})
    assert credentials == ("adminKey", "adminSecret1")
    assert launcher.acl_probe_credentials({"broker.conf": "aclEnable=true"}) is None
    seen: list[bytes] = []
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        thread = threading.Thread(target=_serve_once, args=(server, b"{}", seen))
        thread.start()
        launcher.probe(
            f"127.0.0.1:{server.getsockname()[1]}", launcher.GET_BROKER_RUNTIME_INFO, credentials=credentials
        )
        thread.join(5)
    (word,) = struct.unpack(">I", seen[0][:4])
    fields = json.loads(seen[0][4 : 4 + (word & 0xFFFFFF)])["extFields"]
    assert fields["AccessKey"] == "adminKey"
    assert fields["Signature"] == cal_signature(signature_content(fields, None), "adminSecret1")
