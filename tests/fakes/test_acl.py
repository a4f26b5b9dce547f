"""Plain ACL (ACL 1.0) in the fake broker: signatures, permissions, white addresses, the hook in
front of dispatch. The Java client's behaviour against rmqtwin and a real broker is in
test_java_acl.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from twisted.internet.task import Clock

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.fakes.broker.acl import (
    AclConfigError,
    Permission,
    PlainAclConfig,
    cal_signature,
    check_permission,
    default_acl_files,
    parse_perm,
    remote_address_strategy,
    signature_content,
)
from rmqtwin.fakes.broker.controller import BrokerController
from rmqtwin.fakes.namesrv.controller import NamesrvController
from tests.fakes.helpers import Peer, clocked_broker, make_broker


def test_signature_matches_the_java_acl_client_rpc_hook() -> None:
    """Vectors printed by rocketmq-acl 4.9.8's ``AclClientRPCHook.doBeforeRequest`` on requests built with
    ``RemotingCommand.createRequestCommand`` (then ``makeCustomHeaderToNet``): a SEND_MESSAGE_V2 with
    a UTF-8 body and an UPDATE_CONSUMER_OFFSET without one."""
    send_v2 = {
        "AccessKey": "RocketMQ",
        "a": "PG_acl",
        "b": "TopicAcl",
        "c": "TBW102",
        "d": "4",
        "e": "1",
        "f": "0",
        "g": "1700000000123",
        "h": "0",
        "i": "UNIQ_KEY\x01ABC\x02WAIT\x01true\x02",
        "j": "0",
        "k": "false",
        "m": "false",
    }
    body = "hello \u00e9\u4e16".encode()
    assert cal_signature(signature_content(send_v2, body), "12345678") == "z3JcrU9li4pKvD561y40gRNqeeE="
    # The broker signs every ext field but Signature and _UNIQUE_KEY_QUERY, in any wire order.
    shuffled = dict(reversed([*send_v2.items(), ("Signature", "x"), ("_UNIQUE_KEY_QUERY", "true")]))
    assert cal_signature(signature_content(shuffled, body), "12345678") == "z3JcrU9li4pKvD561y40gRNqeeE="
    offset = {
        "AccessKey": "rocketmq2",
        "commitOffset": "42",
        "consumerGroup": "GID_acl",
        "queueId": "3",
        "topic": "TopicAcl",
    }
    assert cal_signature(signature_content(offset, None), "12345678") == "KxX6lPgHvANIoiDXcQr8DYgKjx8="


@pytest.mark.parametrize(
    ("needed", "owned", "allowed"),
    [
        (Permission.PUB, Permission.PUB, True),
        (Permission.PUB, Permission.SUB, False),
        (Permission.SUB, Permission.SUB, True),
        (Permission.SUB, Permission.PUB | Permission.SUB, True),
        (Permission.PUB, Permission.PUB | Permission.SUB, True),
        (Permission.PUB, Permission.DENY, False),
        (Permission.SUB, Permission.DENY | Permission.SUB, False),
        (Permission.ANY, Permission.SUB, True),
        (Permission.ANY, Permission.PUB, True),
        (Permission.ANY, Permission.NONE, False),
        (Permission.PUB | Permission.SUB, Permission.SUB, True),
    ],
)
def test_permission_check_as_java(needed: Permission, owned: Permission, allowed: bool) -> None:
    assert check_permission(needed, owned) is allowed


def test_permission_strings() -> None:
    assert parse_perm("PUB") == Permission.PUB
    assert parse_perm(" SUB ") == Permission.SUB
    assert parse_perm("PUB|SUB") == parse_perm("SUB|PUB") == Permission.PUB | Permission.SUB
    assert parse_perm("DENY") == parse_perm(None) == parse_perm("pub") == Permission.DENY


@pytest.mark.parametrize(
    ("pattern", "matching", "not_matching"),
    [
        ("*", ["10.1.2.3", "::1"], []),
        ("*.*.*.*", ["192.168.0.1"], []),
        ("", [], ["127.0.0.1"]),
        ("192.168.1.*", ["192.168.1.0", "192.168.1.255"], ["192.168.2.1", "10.168.1.1"]),
        ("192.168.1.1-5", ["192.168.1.1", "192.168.1.5"], ["192.168.1.6", "192.168.1.10"]),
        ("192.168.1-3.*", ["192.168.3.9"], ["192.168.4.9"]),
        ("192.*.*.*", ["192.0.0.1"], ["193.0.0.1"]),
        ("192.168.1.{1,2}", ["192.168.1.1", "192.168.1.2"], ["192.168.1.3"]),
        ("192.168.1.1,192.168.1.7", ["192.168.1.7"], ["192.168.1.2"]),
        ("127.0.0.1", ["127.0.0.1"], ["127.0.0.2"]),
        ("::1", ["0:0:0:0:0:0:0:1"], ["::2"]),
        ("1050::0005:0600:300c:*", ["1050:0:0:0:5:600:300c:326b"], ["1050:0:0:0:5:600:300d:1"]),
        ("1050::0005:0600:300c:1-ff", ["1050::5:600:300c:ff"], ["1050::5:600:300c:100"]),
    ],
)
def test_white_remote_address_patterns(pattern: str, matching: list[str], not_matching: list[str]) -> None:
    strategy = remote_address_strategy(pattern)
    for host in matching:
        assert strategy.match(host), (pattern, host)
    for host in not_matching:
        assert not strategy.match(host), (pattern, host)


@pytest.mark.parametrize("pattern", ["256.0.0.1", "192.168.1.5-1", "192.168.1.-3", "not-an-ip"])
def test_bad_white_remote_addresses_do_not_load(pattern: str) -> None:
    with pytest.raises(AclConfigError):
        remote_address_strategy(pattern)


def test_short_keys_and_bad_resources_do_not_load(tmp_path: Path) -> None:
    path = tmp_path / "plain_acl.yml"
    path.write_text("accounts:\n  - accessKey: short\n    secretKey: 12345678\n")
    with pytest.raises(AclConfigError, match="cannot be null and length should longer than 6"):
        PlainAclConfig.load([path])
    path.write_text(
        "accounts:\n  - accessKey: longenough\n    secretKey: 12345678\n    topicPerms: [TopicA]\n"
    )
    with pytest.raises(AclConfigError, match="Parse resource permission failed for topic:TopicA"):
        PlainAclConfig.load([path])


def test_real_location_rule_reads_conf_acl_then_plain_acl_yml(tmp_path: Path) -> None:
    (tmp_path / "conf" / "acl" / "team").mkdir(parents=True)
    (tmp_path / "conf" / "acl" / "team" / "a.yaml").write_text(_account("TeamKey01", "secret001"))
    (tmp_path / "conf" / "acl" / "notes.txt").write_text("ignored")
    (tmp_path / "conf" / "plain_acl.yml").write_text(
        _account("TeamKey01", "other0001") + _account("Main0001", "s1234567")
    )
    files = default_acl_files(str(tmp_path))
    assert [p.name for p in files] == ["a.yaml", "plain_acl.yml"]
    config = PlainAclConfig.load(files)
    # An access key defined in two files keeps the first definition.
    assert config.accounts["TeamKey01"].secret_key == "secret001"
    assert set(config.accounts) == {"TeamKey01", "Main0001"}
    assert default_acl_files(None) == []


def _account(access_key: str, secret_key: str, *, header: bool = True) -> str:
    head = "accounts:\n" if header else ""
    return f"{head}  - accessKey: {access_key}\n    secretKey: {secret_key}\n"


ACL_YML = """\
globalWhiteRemoteAddresses:
  - 10.254.0.*
accounts:
  - accessKey: AdminKey01
    secretKey: admin12345
    admin: true
  - accessKey: UserKey001
    secretKey: user123456
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - TopicOk=PUB|SUB
      - TopicSub=SUB
    groupPerms:
      - GroupDeny=DENY
  - accessKey: LocalKey01
    secretKey: local12345
    whiteRemoteAddress: 127.0.0.*
    defaultTopicPerm: DENY
"""

ADMIN = ("AdminKey01", "admin12345")
USER = ("UserKey001", "user123456")


def signed(ext: dict[str, Any], body: bytes | None, keys: tuple[str, str]) -> dict[str, str]:
    fields = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in ext.items()}
    fields["AccessKey"] = keys[0]
    fields["Signature"] = cal_signature(signature_content(fields, body), keys[1])
    return fields


def remark(message: str, method: str, line: int) -> str:
    cls = "PlainAccessValidator" if method == "parse" else "PlainPermissionManager"
    return (
        f"org.apache.rocketmq.acl.common.AclException: {message}, "
        f"org.apache.rocketmq.acl.plain.{cls}.{method}({cls}.java:{line})"
    )


@pytest.fixture
def acl_broker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    home = tmp_path / "home"
    (home / "conf").mkdir(parents=True)
    (home / "conf" / "plain_acl.yml").write_text(ACL_YML)
    monkeypatch.setenv("ROCKETMQ_HOME", str(home))
    with clocked_broker(tmp_path, aclEnable="true") as (broker, clock):
        yield broker, clock, home


def _send_fields(topic: str) -> dict[str, Any]:
    return {
        "a": "pg",
        "b": topic,
        "c": "TBW102",
        "d": 4,
        "e": 0,
        "f": 0,
        "g": 1_700_000_000_000,
        "h": 0,
        "i": "WAIT\x01true\x02",
        "j": 0,
        "k": False,
        "m": False,
    }


def test_signed_requests_pass_and_refusals_are_system_error_with_the_java_remark(acl_broker: Any) -> None:
    broker, clock, _ = acl_broker
    peer = Peer(broker.dispatcher, clock)
    body = b"acl"
    send = RequestCode.SEND_MESSAGE_V2
    ok = peer.call(send, signed(_send_fields("TopicOk"), body, USER), body, version=409)
    assert ok.code == ResponseCode.SUCCESS, ok.remark

    unsigned = peer.call(send, _send_fields("TopicOk"), body, version=409)
    assert (unsigned.code, unsigned.remark) == (
        ResponseCode.SYSTEM_ERROR,
        remark("No accessKey is configured", "validate", 663),
    )
    wrong = peer.call(send, signed(_send_fields("TopicOk"), body, (USER[0], "wrong12345")), body, version=409)
    assert wrong.remark == remark("Check signature failed for accessKey=UserKey001", "validate", 683)
    # The body is signed too.
    tampered = peer.call(send, signed(_send_fields("TopicOk"), body, USER), b"other", version=409)
    assert tampered.remark == remark("Check signature failed for accessKey=UserKey001", "validate", 683)
    unknown = peer.call(send, signed(_send_fields("TopicOk"), body, ("Nobody0001", "x")), body, version=409)
    assert unknown.remark == remark("No acl config for Nobody0001", "validate", 667)

    sub_only = peer.call(send, signed(_send_fields("TopicSub"), body, USER), body, version=409)
    assert sub_only.remark == remark("No default permission for topic:TopicSub", "checkPerm", 610)
    default_deny = peer.call(send, signed(_send_fields("TopicOther"), body, USER), body, version=409)
    assert default_deny.remark == remark("No default permission for topic:TopicOther", "checkPerm", 605)

    create = {
        "topic": "TopicNew",
        "readQueueNums": 4,
        "writeQueueNums": 4,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "defaultTopic": "TBW102",
    }
    refused = peer.call(RequestCode.UPDATE_AND_CREATE_TOPIC, signed(create, None, USER))
    assert refused.remark == remark(
        "Need admin permission for request code=17, but accessKey=UserKey001 is not", "checkPerm", 580
    )
    assert "TopicNew" not in broker.topics.table
    created = peer.call(RequestCode.UPDATE_AND_CREATE_TOPIC, signed(create, None, ADMIN))
    assert created.code == ResponseCode.SUCCESS, created.remark
    assert "TopicNew" in broker.topics.table


def test_acl_runs_before_the_handler_lookup_and_for_every_code(acl_broker: Any) -> None:
    broker, clock, _ = acl_broker
    peer = Peer(broker.dispatcher, clock)
    unknown = peer.call(9999)
    assert unknown.remark == remark("No accessKey is configured", "validate", 663)
    signed_unknown = peer.call(9999, signed({}, None, USER))
    assert signed_unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    offset = {"consumerGroup": "GroupDeny", "topic": "TopicOk", "queueId": 0, "commitOffset": 1}
    group_deny = peer.call(RequestCode.UPDATE_CONSUMER_OFFSET, signed(offset, None, USER))
    assert group_deny.remark == remark("No default permission for group:GroupDeny", "checkPerm", 610)
    missing = peer.call(RequestCode.UPDATE_CONSUMER_OFFSET, signed({"topic": "TopicOk"}, None, USER))
    assert missing.remark == remark("the custom field <consumerGroup> is null", "parse", 134)
    bad_queue = peer.call(RequestCode.UPDATE_CONSUMER_OFFSET, signed({**offset, "queueId": "x"}, None, USER))
    assert bad_queue.remark == remark('For input string: "x"', "parse", 134)
    # UnregisterClientRequestHeader: clientID is @CFNotNull, the groups may be null.
    no_client = peer.call(RequestCode.UNREGISTER_CLIENT, signed({"producerGroup": "pg"}, None, USER))
    assert no_client.remark == remark("the custom field <clientID> is null", "parse", 134)
    producer_only = peer.call(
        RequestCode.UNREGISTER_CLIENT, signed({"clientID": "c1", "producerGroup": "pg"}, None, USER)
    )
    assert producer_only.code == ResponseCode.SUCCESS, producer_only.remark


def test_heartbeat_needs_sub_on_every_subscribed_topic_and_group(acl_broker: Any) -> None:
    import orjson

    broker, clock, _ = acl_broker
    peer = Peer(broker.dispatcher, clock)

    def heartbeat(group: str, topic: str) -> Any:
        body = orjson.dumps(
            {
                "clientID": "127.0.0.1@1",
                "consumerDataSet": [
                    {
                        "groupName": group,
                        "consumeType": "CONSUME_PASSIVELY",
                        "messageModel": "CLUSTERING",
                        "consumeFromWhere": "CONSUME_FROM_FIRST_OFFSET",
                        "subscriptionDataSet": [{"topic": topic, "subString": "*", "subVersion": 1}],
                        "unitMode": False,
                    }
                ],
                "producerDataSet": [],
            }
        )
        return peer.call(RequestCode.HEART_BEAT, signed({}, body, USER), body, version=409)

    assert heartbeat("GroupOk", "TopicSub").code == ResponseCode.SUCCESS
    assert heartbeat("GroupOk", "TopicOther").remark == remark(
        "No default permission for topic:TopicOther", "checkPerm", 605
    )
    assert heartbeat("GroupDeny", "TopicOk").remark == remark(
        "No default permission for group:GroupDeny", "checkPerm", 610
    )


def test_white_addresses_skip_the_signature(acl_broker: Any) -> None:
    broker, clock, _ = acl_broker
    peer = Peer(broker.dispatcher, clock)  # connects from 127.0.0.1
    local = peer.call(RequestCode.GET_BROKER_CONFIG, {"AccessKey": "LocalKey01", "Signature": "anything"})
    assert local.code == ResponseCode.SUCCESS
    # Past its white address an account skips the permission checks too, as Java's validate returns.
    create = {
        "topic": "TopicLocal",
        "readQueueNums": 1,
        "writeQueueNums": 1,
        "perm": 6,
        "topicFilterType": "SINGLE_TAG",
        "defaultTopic": "TBW102",
    }
    assert peer.call(RequestCode.UPDATE_AND_CREATE_TOPIC, {**create, "AccessKey": "LocalKey01"}).code == 0
    # A global white address lets anything through, credentials or not.
    from rmqtwin.codec.command import create_request

    broker.acl.validator.check(
        "10.254.0.7:40000", create_request(RequestCode.DELETE_TOPIC_IN_BROKER, {"topic": "T"})
    )


def test_refused_oneway_gets_no_answer(acl_broker: Any) -> None:
    broker, clock, _ = acl_broker
    peer = Peer(broker.dispatcher, clock)
    peer.send(RequestCode.UNREGISTER_CLIENT, {"clientID": "c1", "producerGroup": "pg"}, oneway=True)
    assert peer.responses() == []
    assert peer.proto.connected_flag


def test_the_file_is_reloaded_on_change(acl_broker: Any) -> None:
    broker, clock, home = acl_broker
    peer = Peer(broker.dispatcher, clock)
    newcomer = ("NewKey0001", "new1234567")
    assert (
        peer.call(RequestCode.GET_BROKER_CONFIG, signed({}, None, newcomer)).code == ResponseCode.SYSTEM_ERROR
    )
    (home / "conf" / "plain_acl.yml").write_text(ACL_YML + _account(*newcomer, header=False))
    clock.advance(1)
    assert peer.call(RequestCode.GET_BROKER_CONFIG, signed({}, None, newcomer)).code == ResponseCode.SUCCESS
    # A file that does not load leaves the last good one in force.
    (home / "conf" / "plain_acl.yml").write_text("accounts:\n  - accessKey: x\n")
    clock.advance(1)
    assert peer.call(RequestCode.GET_BROKER_CONFIG, signed({}, None, newcomer)).code == ResponseCode.SUCCESS


def test_no_acl_without_acl_enable_and_none_on_the_name_server(tmp_path: Path) -> None:
    clock = Clock()
    broker: BrokerController = make_broker(tmp_path, clock)
    try:
        assert broker.acl is None
        assert Peer(broker.dispatcher, clock).call(RequestCode.GET_BROKER_CONFIG).code == ResponseCode.SUCCESS
    finally:
        broker.shutdown()
    namesrv = NamesrvController(clock)
    assert namesrv.dispatcher.before_dispatch == []
    answer = Peer(namesrv.dispatcher, clock).call(RequestCode.GET_BROKER_CLUSTER_INFO)
    assert answer.code == ResponseCode.SUCCESS


def test_acl_config_lists_the_accounts_as_plain_access_configs(acl_broker: Any) -> None:
    import json

    broker, clock, _ = acl_broker
    answer = Peer(broker.dispatcher, clock).call(
        RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG, signed({}, None, USER)
    )
    assert (answer.code, answer.ext_fields) == (ResponseCode.SUCCESS, {})
    listed = json.loads(answer.body or b"")
    assert listed["globalWhiteAddrs"] == ["10.254.0.*"]
    assert [c["accessKey"] for c in listed["plainAccessConfigs"]] == [
        "AdminKey01",
        "UserKey001",
        "LocalKey01",
    ]
    user = listed["plainAccessConfigs"][1]
    assert user == {
        "accessKey": "UserKey001",
        "admin": False,
        "defaultGroupPerm": "SUB",
        "defaultTopicPerm": "DENY",
        "groupPerms": ["GroupDeny=DENY"],
        "secretKey": "user123456",
        "topicPerms": ["TopicOk=PUB|SUB", "TopicSub=SUB"],
    }
    assert list(user) == sorted(user)  # fastjson's bean field order


def test_acl_config_without_acl_gets_no_answer(tmp_path: Path) -> None:
    """The real processor meets a null validator, logs it and answers nothing."""
    clock = Clock()
    broker = make_broker(tmp_path, clock)
    try:
        peer = Peer(broker.dispatcher, clock)
        peer.send(RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG)
        assert peer.responses() == []
    finally:
        broker.shutdown()
