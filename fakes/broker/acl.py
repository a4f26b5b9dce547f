"""ACL 1.0 ("plain ACL", ``plain_acl.yml``) as the Apache RocketMQ 4.9.x broker enforces it.

With ``aclEnable=true`` the 4.9.x broker runs ``PlainAccessValidator`` as an RPC hook before every
processor (both ports, every request code): ``parse`` says which topics and groups a request
needs and with which permission, ``PlainPermissionManager.validate`` checks, in this order, the
global white remote addresses, the access key, the account's white remote address, the HmacSHA1
signature of the sorted ext fields plus body, the admin-only request codes and the topic/group
permissions. A refusal is an ``AclException`` the remoting layer answers as ``SYSTEM_ERROR`` with
``RemotingHelper.exceptionSimpleDesc`` as remark (exception text and the top stack frame), and
not at all for a oneway request. The name server does no ACL check.

5.x removed ACL 1.0 (RIP-77, 5.3.3 on): a 5.5.0 broker reads ``aclEnable`` but nothing uses it, so
the same ``broker.conf`` + ``plain_acl.yml`` lets every request through there. The fake follows
4.9.x whenever ``aclEnable=true``. Reference: acl/src/main/java/org/apache/rocketmq/acl/ at
rocketmq-all-4.9.7 (the line numbers in the remarks are that broker's).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntFlag
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmqtwin.codec.bodies import AclConfig, PlainAccessConfig
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.java import java_hash_map_order
from rmqtwin.fakes.broker.topics import RETRY_GROUP_TOPIC_PREFIX, TRACE_TOPIC
from rmqtwin.fakes.dispatch import response

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.dispatch import Channel

ACCESS_KEY = "AccessKey"
SIGNATURE = "Signature"
UNIQUE_MSG_QUERY_FLAG = "_UNIQUE_KEY_QUERY"
ACL_FILE = "conf/plain_acl.yml"
ACL_DIR = "conf/acl"
ACCESS_KEY_MIN_LENGTH = 6
SECRET_KEY_MIN_LENGTH = 6

_ACL_EXCEPTION = "org.apache.rocketmq.acl.common.AclException"
_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
_VALIDATOR = "org.apache.rocketmq.acl.plain.PlainAccessValidator"


class Permission(IntFlag):
    """``org.apache.rocketmq.acl.common.Permission`` bits."""

    NONE = 0
    DENY = 1
    ANY = 2
    PUB = 4
    SUB = 8


ADMIN_CODES = frozenset(
    {
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.UPDATE_BROKER_CONFIG,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.UPDATE_AND_CREATE_SUBSCRIPTIONGROUP,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
    }
)
"""``Permission.ADMIN_CODE``: request codes only an ``admin: true`` account may send."""


def check_permission(needed: int, owned: int) -> bool:
    """``Permission.checkPermission``: DENY wins, ANY is PUB or SUB, else the bits must meet."""
    if owned & Permission.DENY:
        return False
    if needed & Permission.ANY:
        return bool(owned & (Permission.PUB | Permission.SUB))
    return bool(needed & owned)


def parse_perm(text: object) -> Permission:
    """``Permission.parsePermFromString``: anything unknown (or absent) is DENY."""
    if text is None:
        return Permission.DENY
    return {
        "PUB": Permission.PUB,
        "SUB": Permission.SUB,
        "PUB|SUB": Permission.PUB | Permission.SUB,
        "SUB|PUB": Permission.PUB | Permission.SUB,
    }.get(str(text).strip(), Permission.DENY)


def retry_topic(group: str | None) -> str | None:
    return None if group is None else RETRY_GROUP_TOPIC_PREFIX + group


def resource_name(resource: str) -> str:
    """``PlainAccessResource.printStr``: ``group:G`` for a retry topic, else ``topic:T``."""
    if resource.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return f"group:{resource[len(RETRY_GROUP_TOPIC_PREFIX) :]}"
    return f"topic:{resource}"


# --------------------------------------------------------------------------------------------- signature


def _java_string_key(text: str) -> bytes:
    """Sort key matching ``String.compareTo`` (UTF-16 code units), the order of Java's TreeMap."""
    return text.encode("utf-16-be", "surrogatepass")


def signature_content(ext_fields: Mapping[str, str] | None, body: bytes | None) -> bytes:
    """``AclUtils.combineRequestContent`` as the broker builds it: the ext-field values sorted by key
    (without ``Signature`` and ``_UNIQUE_KEY_QUERY``), concatenated, UTF-8, then the body."""
    fields = ext_fields or {}
    keys = sorted(
        (k for k in fields if k not in (SIGNATURE, UNIQUE_MSG_QUERY_FLAG)),
        key=_java_string_key,
    )
    return "".join(fields[k] for k in keys).encode("utf-8") + (body or b"")


def cal_signature(content: bytes, secret_key: str) -> str:
    """``AclSigner.calSignature``: base64 of HmacSHA1 keyed with the UTF-8 secret key."""
    digest = hmac.new(secret_key.encode("utf-8"), content, hashlib.sha1).digest()
    return base64.b64encode(digest).decode("ascii")


def sign_request(request: RemotingCommand, access_key: str, secret_key: str) -> None:
    """Sign a request as ``AclClientRPCHook`` does (for tests and tools that talk to an ACL broker)."""
    fields = dict(request.ext_fields or {})
    fields[ACCESS_KEY] = access_key
    fields[SIGNATURE] = cal_signature(signature_content(fields, request.body), secret_key)
    request.ext_fields = fields


# --------------------------------------------------------------------------------------------- errors


class AclError(Exception):
    """An ``AclException`` thrown at ``frame`` (``Class.method(File.java:line)``)."""

    def __init__(self, message: str, frame: str) -> None:
        super().__init__(message)
        self.message = message
        self.frame = frame

    @property
    def remark(self) -> str:
        """``RemotingHelper.exceptionSimpleDesc``: ``toString()`` and the top stack frame."""
        return f"{_ACL_EXCEPTION}: {self.message}, {self.frame}"


def _at(method: str, line: int) -> str:
    cls = _VALIDATOR if method == "parse" else _MANAGER
    return f"{cls}.{method}({cls.rsplit('.', 1)[1]}.java:{line})"


class AclConfigError(ValueError):
    """A plain_acl.yml the real broker would not load (its AclException message)."""


# --------------------------------------------------------------------------------------------- addresses


def _is_ipv4(text: str) -> bool:
    """commons-validator ``isValidInet4Address``: four decimal octets, no leading zeros."""
    parts = text.split(".")
    if len(parts) != 4:
        return False
    for part in parts:
        if not part.isdigit() or len(part) > 3 or (len(part) > 1 and part[0] == "0") or int(part) > 255:
            return False
    return True


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def expand_ip(address: str, part: int) -> str:
    """``AclUtils.expandIP``: upper case, ``::`` expanded to ``part`` groups, each padded to 4 digits."""
    address = address.upper()
    pad = part - address.count(":")
    if pad > 0:
        address = address.replace("::", ":" * (pad + 1))
    return ":".join(group.rjust(4, "0") for group in address.split(":"))


class RemoteAddressStrategy:
    """``RemoteAddressStrategyFactory``: a white remote address pattern, matched against the bare
    host (without port) the request came from."""

    def match(self, host: str | None) -> bool:
        raise NotImplementedError


class _Null(RemoteAddressStrategy):
    def match(self, host: str | None) -> bool:
        return True


class _Blank(RemoteAddressStrategy):
    def match(self, host: str | None) -> bool:
        return False


class _Multiple(RemoteAddressStrategy):
    def __init__(self, addresses: Iterable[str]) -> None:
        self.addresses: set[str] = set()
        for address in addresses:
            if _is_ipv4(address):
                self.addresses.add(address)
            elif _is_ipv6(address):
                self.addresses.add(expand_ip(address, 8))
            else:
                raise AclConfigError(f"Netaddress examine Exception netaddress is {address}")

    def match(self, host: str | None) -> bool:
        if host is not None and _is_ipv6(host):
            host = expand_ip(host, 8)
        return host in self.addresses


class _One(RemoteAddressStrategy):
    def __init__(self, address: str) -> None:
        if not (_is_ipv4(address) or _is_ipv6(address)):
            raise AclConfigError(f"Netaddress examine Exception netaddress is {address}")
        self.expanded = expand_ip(address, 8).upper()

    def match(self, host: str | None) -> bool:
        return host is not None and expand_ip(host, 8).upper() == self.expanded


class _Range(RemoteAddressStrategy):
    """``192.168.1.*``, ``192.168.1-5.*``, ``192.168.1.1-5``; IPv6 ``1050::*``, ``1050::1-ff``."""

    def __init__(self, pattern: str) -> None:
        self.head = ""
        self.start = 0
        self.end = 0
        self.index = 0
        if ":" in pattern:
            parts = [p for p in pattern.split(":") if p]
            for i in range(1, len(parts)):
                if self._analyse(parts, i, 16, 0xFFFF):
                    head = _v6_head(pattern)
                    self.index = len([p for p in head.split(":") if p])
                    self.head = head
                    break
        else:
            parts = [p for p in pattern.split(".") if p]
            if len(parts) != 4:
                raise AclConfigError(f"Netaddress examine scope Exception netaddress is {pattern}")
            for i in (1, 2, 3):
                if self._analyse(parts, i, 10, 255):
                    _check_octets(pattern, parts[:i])
                    self.head = "".join(p.strip() + "." for p in parts[:i])
                    break

    def _analyse(self, parts: list[str], index: int, base: int, top: int) -> bool:
        value = parts[index].strip()
        self.index = index
        if value == "*":
            self.start, self.end = 0, top
        elif "-" in value:
            if value.startswith("-"):
                raise AclConfigError(
                    f"RangeRemoteAddressStrategy netaddress examine scope Exception value {value} "
                )
            low, _, high = value.partition("-")
            self.start, self.end = int(low, base), int(high, base)
            if not (0 <= self.start <= self.end <= top):
                raise AclConfigError(
                    "RangeRemoteAddressStrategy netaddress examine scope Exception "
                    f"start is {self.start} , end is {self.end}"
                )
        return self.end > 0

    def match(self, host: str | None) -> bool:
        if host is None or not self.head:
            return False
        if _is_ipv4(host):
            if not host.startswith(self.head):
                return False
            rest = host[len(self.head) :].split(".")
            return self.start <= int(rest[0]) <= self.end
        if _is_ipv6(host):
            expanded = expand_ip(host, 8).upper()
            if not expanded.startswith(self.head):
                return False
            value = int(expanded[5 * self.index : 5 * self.index + 4], 16)
            return self.start <= value <= self.end
        return False


def _check_octets(pattern: str, octets: list[str]) -> None:
    for octet in octets:
        if not octet.strip().isdigit() or int(octet) > 255:
            raise AclConfigError(f"Netaddress examine scope Exception netaddress is {pattern}")


def _v6_head(pattern: str) -> str:
    """``AclUtils.v6ipProcess``: the expanded fixed groups in front of the range."""
    star, minus = "*" in pattern, "-" in pattern
    if star and minus:
        last = pattern.rfind(":")
        sub, part = pattern[: pattern[:last].rfind(":")], 6
    else:
        sub, part = pattern[: pattern.rfind(":")], 7
    return expand_ip(sub, part)


def remote_address_strategy(pattern: str | None) -> RemoteAddressStrategy:
    """``RemoteAddressStrategyFactory.getRemoteAddressStrategy``."""
    if pattern is None or not pattern.strip():
        return _Blank()
    if pattern in ("*", "*.*.*.*", "*:*:*:*:*:*:*:*"):
        return _Null()
    if pattern.endswith("}"):
        sep = ":" if ":" in pattern else "."
        last = [p for p in pattern.split(sep) if p][-1]
        if not last.startswith("{"):
            raise AclConfigError(
                "MultipleRemoteAddressStrategy netaddress examine scope Exception netaddress"
            )
        prefix = pattern[: pattern.index("{")]
        return _Multiple(prefix + item for item in last[1:-1].split(",") if item)
    if "," in pattern:
        return _Multiple(item for item in pattern.split(",") if item)
    if "*" in pattern or "-" in pattern:
        return _Range(pattern)
    return _One(pattern)


# --------------------------------------------------------------------------------------------- config


@dataclass
class PlainAccount:
    """One ``accounts`` entry of plain_acl.yml (``PlainAccessResource`` as the broker builds it)."""

    access_key: str
    secret_key: str
    white_remote_address: RemoteAddressStrategy = field(default_factory=_Blank)
    admin: bool = False
    default_topic_perm: Permission = Permission.DENY
    default_group_perm: Permission = Permission.DENY
    perms: dict[str, Permission] = field(default_factory=dict)
    """Topic names and retry topics (``%RETRY%group``) to their permission."""
    listing: PlainAccessConfig = field(default_factory=PlainAccessConfig)
    """The entry as GET_BROKER_CLUSTER_ACL_CONFIG lists it (``PlainAccessConfig``, nulls left out)."""

    @classmethod
    def from_yaml(cls, entry: Mapping[str, Any]) -> PlainAccount:
        access_key, secret_key = entry.get("accessKey"), entry.get("secretKey")
        if (
            access_key is None
            or secret_key is None
            or len(str(access_key)) <= ACCESS_KEY_MIN_LENGTH
            or len(str(secret_key)) <= SECRET_KEY_MIN_LENGTH
        ):
            raise AclConfigError(
                f"The accessKey={access_key} and secretKey={secret_key} cannot be null "
                "and length should longer than 6"
            )
        account = cls(
            access_key=str(access_key),
            secret_key=str(secret_key),
            white_remote_address=remote_address_strategy(_opt_str(entry.get("whiteRemoteAddress"))),
            admin=str(entry.get("admin", False)).lower() == "true",
            default_topic_perm=parse_perm(entry.get("defaultTopicPerm")),
            default_group_perm=parse_perm(entry.get("defaultGroupPerm")),
        )
        account.listing = _plain_access_config(entry, account)
        for key, is_topic in (("groupPerms", False), ("topicPerms", True)):
            for item in entry.get(key) or ():
                parts = [p for p in str(item).split("=") if p]
                if len(parts) != 2:
                    kind = "topic" if is_topic else "group"
                    raise AclConfigError(f"Parse resource permission failed for {kind}:{item}")
                name = parts[0].strip()
                account.perms[name if is_topic else RETRY_GROUP_TOPIC_PREFIX + name] = parse_perm(parts[1])
        return account


def _plain_access_config(entry: Mapping[str, Any], account: PlainAccount) -> PlainAccessConfig:
    """``PlainAccessConfig`` as fastjson reads it from the YAML map: strings, a boolean admin."""

    def strings(key: str) -> list[str] | None:
        items = entry.get(key)
        return None if items is None else [str(item) for item in items]

    return PlainAccessConfig(
        access_key=account.access_key,
        secret_key=account.secret_key,
        white_remote_address=_opt_str(entry.get("whiteRemoteAddress")),
        admin=account.admin,
        default_topic_perm=_opt_str(entry.get("defaultTopicPerm")),
        default_group_perm=_opt_str(entry.get("defaultGroupPerm")),
        topic_perms=strings("topicPerms"),
        group_perms=strings("groupPerms"),
    )


def _opt_str(value: object) -> str | None:
    return None if value is None else str(value)


@dataclass
class PlainAclConfig:
    """Every account and global white address of the ACL files, as ``PlainPermissionManager.load``."""

    global_white_addresses: list[RemoteAddressStrategy] = field(default_factory=list)
    accounts: dict[str, PlainAccount] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    global_white_listing: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, files: Iterable[str | Path]) -> PlainAclConfig:
        """Read the files in order; an access key defined twice keeps its first definition."""
        import yaml

        config = cls()
        for name in files:
            path = Path(name)
            try:
                data = yaml.safe_load(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                continue
            except yaml.YAMLError as exc:
                raise AclConfigError(str(exc)) from exc
            config.files.append(path)
            if not isinstance(data, Mapping) or not data:
                continue
            for pattern in data.get("globalWhiteRemoteAddresses") or ():
                config.global_white_addresses.append(remote_address_strategy(str(pattern)))
                config.global_white_listing.append(str(pattern))
            for entry in data.get("accounts") or ():
                account = PlainAccount.from_yaml(entry)
                config.accounts.setdefault(account.access_key, account)
        return config


def default_acl_files(rocketmq_home: str | None) -> list[Path]:
    """Where the 4.9.x broker looks: every ``*.yml``/``*.yaml`` under ``$ROCKETMQ_HOME/conf/acl/``
    (recursively), then ``$ROCKETMQ_HOME/conf/plain_acl.yml``; nothing without a home."""
    if not rocketmq_home:
        return []
    home = Path(rocketmq_home)
    acl_dir = home / ACL_DIR
    found = (
        sorted(p for p in acl_dir.rglob("*") if p.is_file() and p.suffix in (".yml", ".yaml"))
        if acl_dir.is_dir()
        else []
    )
    default = home / ACL_FILE
    return [*found, *([default] if default not in found else [])]


def acl_files(acl_file: str | None, environ: Mapping[str, str] = os.environ) -> list[Path]:
    """An explicit file (``rmqtwin serve --acl-file``), else the real broker's location rule."""
    if acl_file:
        return [Path(acl_file)]
    return default_acl_files(environ.get("ROCKETMQ_HOME"))


# --------------------------------------------------------------------------------------------- validator


@dataclass
class AccessResource:
    """What one request asks for (``PlainAccessResource`` as ``parse`` fills it)."""

    request_code: int
    host: str | None
    access_key: str | None = None
    signature: str | None = None
    perms: dict[str, Permission] = field(default_factory=dict)
    content: bytes = b""

    def add(self, resource: str | None, perm: Permission) -> None:
        if resource is not None:
            self.perms[resource] = perm


def _host_of(remote_addr: str | None) -> str | None:
    if remote_addr is not None and ":" in remote_addr:
        return remote_addr[: remote_addr.rfind(":")]
    return remote_addr


class PlainAccessValidator:
    """``PlainAccessValidator`` + ``PlainPermissionManager.validate`` over a loaded config."""

    def __init__(self, config: PlainAclConfig) -> None:
        self.config = config

    def parse(self, request: RemotingCommand, remote_addr: str | None) -> AccessResource:
        resource = AccessResource(request.code, _host_of(remote_addr))
        ext = request.ext_fields
        if ext is None:
            return resource
        resource.access_key = ext.get(ACCESS_KEY)
        resource.signature = ext.get(SIGNATURE)
        try:
            self._resources(request, ext, resource)
        except Exception as exc:  # Java wraps anything parse meets: AclException(t.getMessage(), t)
            raise AclError(_java_message(exc), _at("parse", 134)) from exc
        resource.content = signature_content(ext, request.body)
        return resource

    @staticmethod
    def _resources(request: RemotingCommand, ext: Mapping[str, str], res: AccessResource) -> None:
        code = request.code
        if code in (RequestCode.SEND_MESSAGE, RequestCode.SEND_MESSAGE_V2):
            v2 = code == RequestCode.SEND_MESSAGE_V2
            topic = ext.get("b" if v2 else "topic")
            if topic is not None and topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
                # Java reads "group", which SendMessageRequestHeader does not have: nothing is added.
                res.add(retry_topic(ext.get("a" if v2 else "group")), Permission.SUB)
            else:
                res.add(topic, Permission.PUB)
        elif code == RequestCode.CONSUMER_SEND_MSG_BACK:
            res.add(retry_topic(ext.get("group")), Permission.SUB)
        elif code == RequestCode.PULL_MESSAGE:
            res.add(ext.get("topic"), Permission.SUB)
            res.add(retry_topic(ext.get("consumerGroup")), Permission.SUB)
        elif code == RequestCode.QUERY_MESSAGE:
            res.add(ext.get("topic"), Permission.SUB)
        elif code == RequestCode.HEART_BEAT:
            from rmqtwin.codec.bodies import HeartbeatData

            if request.body is None:
                raise _JavaNullError()
            heartbeat = HeartbeatData.decode(request.body)
            for consumer in heartbeat.consumer_data_set:
                res.add(retry_topic(consumer.group_name), Permission.SUB)
                for subscription in consumer.subscription_data_set:
                    res.add(subscription.topic, Permission.SUB)
        elif code in _DECODED_HEADERS:
            _decode_like_java(ext, _DECODED_HEADERS[code])
            res.add(retry_topic(ext.get("consumerGroup")), Permission.SUB)
            if code == RequestCode.UPDATE_CONSUMER_OFFSET:
                res.add(ext["topic"], Permission.SUB)

    def validate(self, resource: AccessResource) -> None:
        config = self.config
        for strategy in config.global_white_addresses:
            if strategy.match(resource.host):
                return
        if resource.access_key is None:
            raise AclError("No accessKey is configured", _at("validate", 663))
        owned = config.accounts.get(resource.access_key)
        if owned is None:
            raise AclError(f"No acl config for {resource.access_key}", _at("validate", 667))
        if owned.white_remote_address.match(resource.host):
            return
        if cal_signature(resource.content, owned.secret_key) != resource.signature:
            raise AclError(
                f"Check signature failed for accessKey={resource.access_key}", _at("validate", 683)
            )
        if resource.perms.get(TRACE_TOPIC) == Permission.PUB:
            return
        self.check_perm(resource, owned)

    @staticmethod
    def check_perm(resource: AccessResource, owned: PlainAccount) -> None:
        """``checkPerm``: the first refused resource in Java's HashMap order is the one reported."""
        if resource.request_code in ADMIN_CODES and not owned.admin:
            raise AclError(
                f"Need admin permission for request code={resource.request_code}, "
                f"but accessKey={owned.access_key} is not",
                _at("checkPerm", 580),
            )
        if not resource.perms or (not owned.perms and owned.admin):
            return  # nothing asked for; an admin without topicPerms/groupPerms may do anything
        for name in java_hash_map_order(resource.perms):
            needed = resource.perms[name]
            is_group = name.startswith(RETRY_GROUP_TOPIC_PREFIX)
            if name not in owned.perms:
                default = owned.default_group_perm if is_group else owned.default_topic_perm
                if not check_permission(needed, default):
                    raise AclError(f"No default permission for {resource_name(name)}", _at("checkPerm", 605))
                continue
            if not check_permission(needed, owned.perms[name]):
                raise AclError(f"No default permission for {resource_name(name)}", _at("checkPerm", 610))

    def check(self, remote_addr: str | None, request: RemotingCommand) -> None:
        """``validate(parse(request, remoteAddr))``; raises ``AclError``."""
        self.validate(self.parse(request, remote_addr))

    def before_dispatch(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        """The broker's RPC hook: None lets the request through, else the refusal to answer."""
        try:
            self.check(channel.remote_addr, request)
        except AclError as exc:
            return response(ResponseCode.SYSTEM_ERROR, exc.remark)
        return None


_DECODED_HEADERS: dict[int, tuple[tuple[str, int | None, bool], ...]] = {
    # (field, bits of a Java integer or None for a String, @CFNotNull), in declaration order
    RequestCode.UNREGISTER_CLIENT: (
        ("clientID", None, True),
        ("producerGroup", None, False),
        ("consumerGroup", None, False),
    ),
    RequestCode.GET_CONSUMER_LIST_BY_GROUP: (("consumerGroup", None, True),),
    RequestCode.UPDATE_CONSUMER_OFFSET: (
        ("consumerGroup", None, True),
        ("topic", None, True),
        ("queueId", 32, True),
        ("commitOffset", 64, True),
    ),
}
"""The headers ``parse`` reads with ``decodeCommandCustomHeader`` (the others straight from ext fields)."""

_JAVA_INT = re.compile(r"[+-]?[0-9]+\Z")


def _decode_like_java(ext: Mapping[str, str], fields: Iterable[tuple[str, int | None, bool]]) -> None:
    """``RemotingCommand.decodeCommandCustomHeader``: the first null @CFNotNull field or unparsable
    number, in declaration order, fails it."""
    for name, bits, not_null in fields:
        value = ext.get(name)
        if value is None:
            if not_null:
                raise _JavaNullError(f"the custom field <{name}> is null")
            continue
        if bits is not None:
            limit = 1 << (bits - 1)
            if not _JAVA_INT.match(value) or not -limit <= int(value) < limit:
                raise ValueError(f'For input string: "{value}"')


class _JavaNullError(Exception):
    """A null the Java parse meets (an NPE, or ``decodeCommandCustomHeader``'s missing field)."""


def _java_message(exc: BaseException) -> str:
    """``t.getMessage()`` of the Java exception the fake's one stands for (null prints as "null")."""
    if isinstance(exc, _JavaNullError):
        return str(exc) if exc.args else "null"
    return str(exc) or "null"


class PlainAclService:
    """The ACL files, their validator, and the reload the real broker's ``AclFileWatchService`` does
    (every 500 ms: a changed, added or removed file reloads them all; a file that does not load
    leaves the last good config in force)."""

    WATCH_INTERVAL = 0.5

    def __init__(self, acl_file: str | None, environ: Mapping[str, str] = os.environ) -> None:
        self.acl_file = acl_file
        self.environ = environ
        self._stamp = self._files_stamp()
        self.validator = PlainAccessValidator(PlainAclConfig.load(acl_files(acl_file, environ)))

    def _files_stamp(self) -> tuple[tuple[str, int, int], ...]:
        stamp = []
        for path in acl_files(self.acl_file, self.environ):
            try:
                st = path.stat()
            except OSError:
                continue
            stamp.append((str(path), st.st_mtime_ns, st.st_size))
        return tuple(stamp)

    def reload_if_changed(self) -> bool:
        """True when the files changed and loaded."""
        stamp = self._files_stamp()
        if stamp == self._stamp:
            return False
        self._stamp = stamp
        try:
            config = PlainAclConfig.load(acl_files(self.acl_file, self.environ))
        except AclConfigError:
            return False
        self.validator.config = config
        return True

    def before_dispatch(self, channel: Channel, request: RemotingCommand) -> RemotingCommand | None:
        return self.validator.before_dispatch(channel, request)


def broker_cluster_acl_config(acl: PlainAclService | None, *, fastjson2: bool) -> RemotingCommand | None:
    """GET_BROKER_CLUSTER_ACL_CONFIG (54): every account and global white address of the files.

    Without ACL the real broker's validator lookup is null and the processor answers nothing."""
    if acl is None:
        return None
    config = acl.validator.config
    body = AclConfig(
        global_white_addrs=config.global_white_listing,
        plain_access_configs=[account.listing for account in config.accounts.values()],
    )
    return response(ext_fields={}, body=body.encode(fastjson2=fastjson2))
