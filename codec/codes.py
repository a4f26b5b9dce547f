"""Request, response and language codes, serialize types and MQVersion ordinals.

Request codes are the union of ``RequestCode.java`` in rocketmq-all-4.9.8 and every 5.x release up to
5.5 (5.x moved the class to ``remoting/.../remoting/protocol``). Codes on the wire are kept as plain
ints by the codec, so an unknown code still decodes; use :func:`request_code_name` /
:func:`response_code_name` to print them.
"""

from __future__ import annotations

import re
from enum import IntEnum
from functools import lru_cache

__all__ = [
    "CURRENT_VERSION_4",
    "CURRENT_VERSION_5",
    "HIGHER_VERSION",
    "LanguageCode",
    "RequestCode",
    "ResponseCode",
    "SerializeType",
    "language_name",
    "request_code_name",
    "response_code_name",
    "version_name",
    "version_names",
    "version_ordinal",
]


class RequestCode(IntEnum):
    """Request codes of 4.9.8 and 5.x. Codes 50-54 (ACL 1.0 admin) are gone from 5.3.3 on."""

    SEND_MESSAGE = 10
    PULL_MESSAGE = 11
    QUERY_MESSAGE = 12
    QUERY_BROKER_OFFSET = 13
    QUERY_CONSUMER_OFFSET = 14
    UPDATE_CONSUMER_OFFSET = 15
    UPDATE_AND_CREATE_TOPIC = 17
    UPDATE_AND_CREATE_TOPIC_LIST = 18
    GET_ALL_TOPIC_CONFIG = 21
    GET_TOPIC_CONFIG_LIST = 22
    GET_TOPIC_NAME_LIST = 23
    UPDATE_BROKER_CONFIG = 25
    GET_BROKER_CONFIG = 26
    TRIGGER_DELETE_FILES = 27
    GET_BROKER_RUNTIME_INFO = 28
    SEARCH_OFFSET_BY_TIMESTAMP = 29
    GET_MAX_OFFSET = 30
    GET_MIN_OFFSET = 31
    GET_EARLIEST_MSG_STORETIME = 32
    VIEW_MESSAGE_BY_ID = 33
    HEART_BEAT = 34
    UNREGISTER_CLIENT = 35
    CONSUMER_SEND_MSG_BACK = 36
    END_TRANSACTION = 37
    GET_CONSUMER_LIST_BY_GROUP = 38
    CHECK_TRANSACTION_STATE = 39
    NOTIFY_CONSUMER_IDS_CHANGED = 40
    LOCK_BATCH_MQ = 41
    UNLOCK_BATCH_MQ = 42
    GET_ALL_CONSUMER_OFFSET = 43
    GET_ALL_DELAY_OFFSET = 45
    CHECK_CLIENT_CONFIG = 46
    GET_CLIENT_CONFIG = 47
    UPDATE_AND_CREATE_ACL_CONFIG = 50
    DELETE_ACL_CONFIG = 51
    GET_BROKER_CLUSTER_ACL_INFO = 52
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG = 53
    GET_BROKER_CLUSTER_ACL_CONFIG = 54
    GET_TIMER_CHECK_POINT = 60
    GET_TIMER_METRICS = 61
    PUT_KV_CONFIG = 100
    GET_KV_CONFIG = 101
    DELETE_KV_CONFIG = 102
    REGISTER_BROKER = 103
    UNREGISTER_BROKER = 104
    GET_ROUTEINFO_BY_TOPIC = 105
    GET_BROKER_CLUSTER_INFO = 106
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
    GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
    GET_TOPIC_STATS_INFO = 202
    GET_CONSUMER_CONNECTION_LIST = 203
    GET_PRODUCER_CONNECTION_LIST = 204
    WIPE_WRITE_PERM_OF_BROKER = 205
    GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
    DELETE_SUBSCRIPTIONGROUP = 207
    GET_CONSUME_STATS = 208
    SUSPEND_CONSUMER = 209
    RESUME_CONSUMER = 210
    RESET_CONSUMER_OFFSET_IN_CONSUMER = 211
    RESET_CONSUMER_OFFSET_IN_BROKER = 212
    ADJUST_CONSUMER_THREAD_POOL = 213
    WHO_CONSUME_THE_MESSAGE = 214
    DELETE_TOPIC_IN_BROKER = 215
    DELETE_TOPIC_IN_NAMESRV = 216
    REGISTER_TOPIC_IN_NAMESRV = 217
    GET_KVLIST_BY_NAMESPACE = 219
    RESET_CONSUMER_CLIENT_OFFSET = 220
    GET_CONSUMER_STATUS_FROM_CLIENT = 221
    INVOKE_BROKER_TO_RESET_OFFSET = 222
    INVOKE_BROKER_TO_GET_CONSUMER_STATUS = 223
    GET_TOPICS_BY_CLUSTER = 224
    UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST = 225
    QUERY_TOPIC_CONSUME_BY_WHO = 300
    REGISTER_FILTER_SERVER = 301
    REGISTER_MESSAGE_FILTER_CLASS = 302
    QUERY_CONSUME_TIME_SPAN = 303
    GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
    GET_SYSTEM_TOPIC_LIST_FROM_BROKER = 305
    CLEAN_EXPIRED_CONSUMEQUEUE = 306
    GET_CONSUMER_RUNNING_INFO = 307
    QUERY_CORRECTION_OFFSET = 308
    CONSUME_MESSAGE_DIRECTLY = 309
    SEND_MESSAGE_V2 = 310
    GET_UNIT_TOPIC_LIST = 311
    GET_HAS_UNIT_SUB_TOPIC_LIST = 312
    GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST = 313
    CLONE_GROUP_OFFSET = 314
    VIEW_BROKER_STATS_DATA = 315
    CLEAN_UNUSED_TOPIC = 316
    GET_BROKER_CONSUME_STATS = 317
    UPDATE_NAMESRV_CONFIG = 318
    GET_NAMESRV_CONFIG = 319
    SEND_BATCH_MESSAGE = 320
    QUERY_CONSUME_QUEUE = 321
    QUERY_DATA_VERSION = 322
    RESUME_CHECK_HALF_MESSAGE = 323
    SEND_REPLY_MESSAGE = 324
    SEND_REPLY_MESSAGE_V2 = 325
    PUSH_REPLY_MESSAGE_TO_CLIENT = 326
    ADD_WRITE_PERM_OF_BROKER = 327
    GET_ALL_PRODUCER_INFO = 328
    DELETE_EXPIRED_COMMITLOG = 329
    QUERY_TOPICS_BY_CONSUMER = 343
    QUERY_SUBSCRIPTION_BY_CONSUMER = 345
    GET_TOPIC_CONFIG = 351
    GET_SUBSCRIPTIONGROUP_CONFIG = 352
    UPDATE_AND_GET_GROUP_FORBIDDEN = 353
    CHECK_ROCKSDB_CQ_WRITE_PROGRESS = 354
    EXPORT_ROCKSDB_CONFIG_TO_JSON = 355
    LITE_PULL_MESSAGE = 361
    RECALL_MESSAGE = 370
    QUERY_ASSIGNMENT = 400
    SET_MESSAGE_REQUEST_MODE = 401
    GET_ALL_MESSAGE_REQUEST_MODE = 402
    UPDATE_AND_CREATE_STATIC_TOPIC = 513
    GET_BROKER_MEMBER_GROUP = 901
    ADD_BROKER = 902
    REMOVE_BROKER = 903
    BROKER_HEARTBEAT = 904
    NOTIFY_MIN_BROKER_ID_CHANGE = 905
    EXCHANGE_BROKER_HA_INFO = 906
    GET_BROKER_HA_STATUS = 907
    RESET_MASTER_FLUSH_OFFSET = 908
    CONTROLLER_ALTER_SYNC_STATE_SET = 1001
    CONTROLLER_ELECT_MASTER = 1002
    CONTROLLER_REGISTER_BROKER = 1003
    CONTROLLER_GET_REPLICA_INFO = 1004
    CONTROLLER_GET_METADATA_INFO = 1005
    CONTROLLER_GET_SYNC_STATE_DATA = 1006
    GET_BROKER_EPOCH_CACHE = 1007
    NOTIFY_BROKER_ROLE_CHANGED = 1008
    UPDATE_CONTROLLER_CONFIG = 1009
    GET_CONTROLLER_CONFIG = 1010
    CLEAN_BROKER_DATA = 1011
    CONTROLLER_GET_NEXT_BROKER_ID = 1012
    CONTROLLER_APPLY_BROKER_ID = 1013
    UPDATE_COLD_DATA_FLOW_CTR_CONFIG = 2001
    REMOVE_COLD_DATA_FLOW_CTR_CONFIG = 2002
    GET_COLD_DATA_FLOW_CTR_INFO = 2003
    SET_COMMITLOG_READ_MODE = 2004
    AUTH_CREATE_USER = 3001
    AUTH_UPDATE_USER = 3002
    AUTH_DELETE_USER = 3003
    AUTH_GET_USER = 3004
    AUTH_LIST_USER = 3005
    AUTH_CREATE_ACL = 3006
    AUTH_UPDATE_ACL = 3007
    AUTH_DELETE_ACL = 3008
    AUTH_GET_ACL = 3009
    AUTH_LIST_ACL = 3010
    SWITCH_TIMER_ENGINE = 5001
    POP_MESSAGE = 200050
    ACK_MESSAGE = 200051
    PEEK_MESSAGE = 200052
    CHANGE_MESSAGE_INVISIBLETIME = 200053
    NOTIFICATION = 200054
    POLLING_INFO = 200055
    POP_ROLLBACK = 200056
    POP_LITE_MESSAGE = 200070
    LITE_SUBSCRIPTION_CTL = 200071
    ACK_LITE_MESSAGE = 200072
    NOTIFY_UNSUBSCRIBE_LITE = 200073
    GET_BROKER_LITE_INFO = 200074
    GET_PARENT_TOPIC_INFO = 200075
    GET_LITE_TOPIC_INFO = 200076
    GET_LITE_CLIENT_INFO = 200077
    GET_LITE_GROUP_INFO = 200078
    TRIGGER_LITE_DISPATCH = 200079
    BATCH_ACK_MESSAGE = 200151


class ResponseCode(IntEnum):
    """Response codes, including ``RemotingSysResponseCode`` (0-4).

    209-211 mean the ACL 1.0 admin failures in 4.9.x but POLLING_FULL / POLLING_TIMEOUT /
    BROKER_NOT_EXIST in 5.x. Both names are members; the 4.9.x names come first and are therefore the
    canonical ``name`` of those values (``ResponseCode(209).name == "UPDATE_AND_CREATE_ACL_CONFIG_FAILED"``),
    while ``ResponseCode.POLLING_FULL is ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED``. Callers that
    know which side they talk to should use :func:`response_code_name` with ``major``.
    """

    SUCCESS = 0
    SYSTEM_ERROR = 1
    SYSTEM_BUSY = 2
    REQUEST_CODE_NOT_SUPPORTED = 3
    TRANSACTION_FAILED = 4
    RPC_TIME_OUT = -1006
    RPC_SEND_TO_CHANNEL_FAILED = -1004
    RPC_ADDR_IS_NULL = -1002
    RPC_UNKNOWN = -1000
    FLUSH_DISK_TIMEOUT = 10
    SLAVE_NOT_AVAILABLE = 11
    FLUSH_SLAVE_TIMEOUT = 12
    MESSAGE_ILLEGAL = 13
    SERVICE_NOT_AVAILABLE = 14
    VERSION_NOT_SUPPORTED = 15
    NO_PERMISSION = 16
    TOPIC_NOT_EXIST = 17
    TOPIC_EXIST_ALREADY = 18
    PULL_NOT_FOUND = 19
    PULL_RETRY_IMMEDIATELY = 20
    PULL_OFFSET_MOVED = 21
    QUERY_NOT_FOUND = 22
    SUBSCRIPTION_PARSE_FAILED = 23
    SUBSCRIPTION_NOT_EXIST = 24
    SUBSCRIPTION_NOT_LATEST = 25
    SUBSCRIPTION_GROUP_NOT_EXIST = 26
    FILTER_DATA_NOT_EXIST = 27
    FILTER_DATA_NOT_LATEST = 28
    INVALID_PARAMETER = 29
    TRANSACTION_SHOULD_COMMIT = 200
    TRANSACTION_SHOULD_ROLLBACK = 201
    TRANSACTION_STATE_UNKNOW = 202
    TRANSACTION_STATE_GROUP_WRONG = 203
    NO_BUYER_ID = 204
    NOT_IN_CURRENT_UNIT = 205
    CONSUMER_NOT_ONLINE = 206
    CONSUME_MSG_TIMEOUT = 207
    NO_MESSAGE = 208
    UPDATE_AND_CREATE_ACL_CONFIG_FAILED = 209
    DELETE_ACL_CONFIG_FAILED = 210
    UPDATE_GLOBAL_WHITE_ADDRS_CONFIG_FAILED = 211
    POLLING_FULL = 209
    POLLING_TIMEOUT = 210
    BROKER_NOT_EXIST = 211
    BROKER_DISPATCH_NOT_COMPLETE = 212
    BROADCAST_CONSUMPTION = 213
    FLOW_CONTROL = 215
    NOT_LEADER_FOR_QUEUE = 501
    ILLEGAL_OPERATION = 604
    GO_AWAY = 1500
    CONTROLLER_FENCED_MASTER_EPOCH = 2000
    CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH = 2001
    CONTROLLER_INVALID_MASTER = 2002
    CONTROLLER_INVALID_REPLICAS = 2003
    CONTROLLER_MASTER_NOT_AVAILABLE = 2004
    CONTROLLER_INVALID_REQUEST = 2005
    CONTROLLER_BROKER_NOT_ALIVE = 2006
    CONTROLLER_NOT_LEADER = 2007
    CONTROLLER_BROKER_METADATA_NOT_EXIST = 2008
    CONTROLLER_INVALID_CLEAN_BROKER_METADATA = 2009
    CONTROLLER_BROKER_NEED_TO_BE_REGISTERED = 2010
    CONTROLLER_MASTER_STILL_EXIST = 2011
    CONTROLLER_ELECT_MASTER_FAILED = 2012
    CONTROLLER_ALTER_SYNC_STATE_SET_FAILED = 2013
    CONTROLLER_BROKER_ID_INVALID = 2014
    CONTROLLER_JRAFT_INTERNAL_ERROR = 2015
    CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS = 2016
    LMQ_QUOTA_EXCEEDED = 2017
    LITE_SUBSCRIPTION_QUOTA_EXCEEDED = 2018
    USER_NOT_EXIST = 3001
    POLICY_NOT_EXIST = 3002


_RESPONSE_NAMES_5 = {209: "POLLING_FULL", 210: "POLLING_TIMEOUT", 211: "BROKER_NOT_EXIST"}


class LanguageCode(IntEnum):
    """``LanguageCode`` of the sender; written by name in JSON headers, as a byte in binary ones."""

    JAVA = 0
    CPP = 1
    DOTNET = 2
    PYTHON = 3
    DELPHI = 4
    ERLANG = 5
    RUBY = 6
    OTHER = 7
    HTTP = 8
    GO = 9
    PHP = 10
    OMS = 11
    RUST = 12
    NODE_JS = 13


class SerializeType(IntEnum):
    """Header serialization, carried in the high byte of the frame's second word."""

    JSON = 0
    ROCKETMQ = 1


def _name_or_int(enum_cls: type[IntEnum], value: int) -> str:
    try:
        return enum_cls(value).name
    except ValueError:
        return str(value)


def request_code_name(code: int) -> str:
    """The RequestCode name of ``code``, or its decimal text when no such code exists."""
    return _name_or_int(RequestCode, code)


def response_code_name(code: int, major: int = 4) -> str:
    """The ResponseCode name of ``code`` as RocketMQ ``major`` (4 or 5) names it; decimal text if unknown."""
    if major >= 5 and code in _RESPONSE_NAMES_5:
        return _RESPONSE_NAMES_5[code]
    return _name_or_int(ResponseCode, code)


def language_name(code: int) -> str:
    """The LanguageCode name of ``code``, or its decimal text when unknown."""
    return _name_or_int(LanguageCode, code)


# --- MQVersion -----------------------------------------------------------------------------------------
# ``MQVersion.Version`` is an enum whose ordinal is what travels in the ``version`` field. Its members are
# regular after a hand-written 3.0.0 prelude: for every release a ``_SNAPSHOT`` then the release itself.


def _minor_patches(major: int, minor: int) -> range:
    if major == 3 and minor == 0:
        return range(1, 16)  # V3_0_1 .. V3_0_15
    if major == 3 and minor >= 3:
        return range(1, 10)  # V3_3_1 .. V3_9_9 have no x.y.0
    return range(10)


@lru_cache(maxsize=1)
def version_names() -> tuple[str, ...]:
    """All ``MQVersion.Version`` names in ordinal order (the last one is ``HIGHER_VERSION``)."""
    names = ["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"]
    names += [f"V3_0_0_BETA{i}" for i in range(1, 6)]
    for i in range(6, 10):
        names += [f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}"]
    names.append("V3_0_0_FINAL")
    for major in (3, 4, 5):
        for minor in range(10):
            for patch in _minor_patches(major, minor):
                names += [f"V{major}_{minor}_{patch}_SNAPSHOT", f"V{major}_{minor}_{patch}"]
    names.append("HIGHER_VERSION")
    return tuple(names)


@lru_cache(maxsize=1)
def _ordinals() -> dict[str, int]:
    return {name: i for i, name in enumerate(version_names())}


_VERSION_TEXT = re.compile(r"^V?(\d+)[._](\d+)[._](\d+)(?:[-_](SNAPSHOT))?$", re.IGNORECASE)


def version_ordinal(version: str) -> int:
    """The ordinal of a release: ``"4.9.8"``, ``"V4_9_8"``, ``"5.0.0-SNAPSHOT"`` or any enum name."""
    ordinals = _ordinals()
    if version in ordinals:
        return ordinals[version]
    m = _VERSION_TEXT.match(version.strip())
    if m is None:
        raise ValueError(f"not a RocketMQ version: {version!r}")
    name = f"V{m.group(1)}_{m.group(2)}_{m.group(3)}" + ("_SNAPSHOT" if m.group(4) else "")
    try:
        return ordinals[name]
    except KeyError:
        raise ValueError(f"no MQVersion member for {version!r}") from None


def version_name(ordinal: int) -> str:
    """``MQVersion.getVersionDesc``: the enum name, ``HIGHER_VERSION`` beyond the end (negative: error)."""
    names = version_names()
    if ordinal < 0:
        raise ValueError(f"negative MQVersion ordinal {ordinal}")
    return names[min(ordinal, len(names) - 1)]


CURRENT_VERSION_4 = 409
"""``MQVersion.CURRENT_VERSION`` of 4.9.8 (V4_9_8)."""
CURRENT_VERSION_5 = 513
"""The ordinal of V5_5_0, what a 5.5.0 JVM sends (413 + 2 * 50)."""
HIGHER_VERSION = 612
