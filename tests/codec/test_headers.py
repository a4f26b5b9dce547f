"""Typed custom headers: ext-field round trips, Java wire names and types, V1/V2 send mapping, errors.

The Java check reflects over the real header classes of rocketmq-common 4.9.8 and rocketmq-remoting
5.5.0 (the golden build's ``headers`` command, tests/golden/oracle.py): every Java field must exist here
under the same wire name with the same type, and ``@CFNotNull`` must match our required fields.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rmqtwin.codec import headers as h
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.errors import HeaderError, HeaderFieldError
from tests.golden.oracle import run_golden
from tests.golden.vectors import JAVA_HEADER_KINDS

ALL_CLASSES = sorted({*h.REQUEST_HEADERS.values(), *h.RESPONSE_HEADERS.values()}, key=lambda c: c.__name__)

_KIND_NAMES = {0: "str", 1: "int", 2: "long", 3: "bool", 4: "double"}


def _kind(spec: Any) -> str:
    return _KIND_NAMES[spec.kind]


def _value_strategy(spec: Any) -> st.SearchStrategy[Any]:
    kind = _kind(spec)
    if kind == "str":
        base: st.SearchStrategy[Any] = st.text()
    elif kind == "int":
        base = st.integers(-(2**31), 2**31 - 1)
    elif kind == "long":
        base = st.integers(-(2**63), 2**63 - 1)
    elif kind == "bool":
        base = st.booleans()
    else:
        base = st.floats(allow_nan=False, allow_infinity=False)
    nullable = not spec.required and spec.default is None  # primitives have a non-None default
    return st.none() | base if nullable else base


def _header_strategy(cls: type[h.CommandCustomHeader]) -> st.SearchStrategy[Any]:
    return st.builds(cls, **{spec.attr: _value_strategy(spec) for spec in h.header_fields(cls)})


_any_header = st.sampled_from(ALL_CLASSES).flatmap(_header_strategy)


@settings(max_examples=150, deadline=None)
@given(_any_header)
def test_ext_fields_round_trip(header: h.CommandCustomHeader) -> None:
    ext = h.to_ext_fields(header)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in ext.items())
    assert h.from_ext_fields(type(header), ext) == header
    assert h.from_ext_fields(type(header), ext, strict=False) == header


def test_wire_values_are_java_string_value_of() -> None:
    header = h.RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr="10.0.0.5:10911",
        cluster_name="DefaultCluster",
        ha_server_addr="10.0.0.5:10912",
        broker_id=0,
        compressed=False,
        body_crc32=-5,
        enable_acting_master=True,
        zone_name="z1",
    )
    assert h.to_ext_fields(header) == {
        "brokerName": "broker-a",
        "brokerAddr": "10.0.0.5:10911",
        "clusterName": "DefaultCluster",
        "haServerAddr": "10.0.0.5:10912",
        "brokerId": "0",
        "compressed": "false",
        "bodyCrc32": "-5",
        "enableActingMaster": "true",
        "__ZONE_NAME": "z1",
    }


def test_irregular_wire_names() -> None:
    assert h.to_ext_fields(h.UnregisterClientRequestHeader(client_id="c", consumer_group="g")) == {
        "clientID": "c",
        "consumerGroup": "g",
    }
    response = h.SendMessageResponseHeader(
        msg_id="AC", queue_id=1, queue_offset=2, msg_region="DefaultRegion", trace_on=True
    )
    assert h.to_ext_fields(response) == {
        "msgId": "AC",
        "queueId": "1",
        "queueOffset": "2",
        "MSG_REGION": "DefaultRegion",
        "TRACE_ON": "true",
    }
    query = h.QueryMessageRequestHeader(
        topic="t", key="k", max_num=32, begin_timestamp=0, end_timestamp=1, unique_key_query=True
    )
    assert h.to_ext_fields(query)["_UNIQUE_KEY_QUERY"] == "true"
    pull = h.from_ext_fields(h.PullMessageRequestHeader, {**_PULL, "proxyFrowardClientId": "p", "lo": "true"})
    assert pull.proxy_froward_client_id == "p" and pull.lo is True


_PULL = {
    "consumerGroup": "cg",
    "topic": "TopicTest",
    "queueId": "3",
    "queueOffset": "128",
    "maxMsgNums": "32",
    "sysFlag": "3",
    "commitOffset": "120",
    "suspendTimeoutMillis": "15000",
    "subVersion": "1700000000000",
    "expressionType": "TAG",
    "bname": "broker-a",
}


def test_pull_request_as_the_java_push_consumer_sends_it() -> None:
    pull = h.from_ext_fields(h.PullMessageRequestHeader, _PULL)
    assert (pull.queue_id, pull.queue_offset, pull.sys_flag, pull.sub_version) == (3, 128, 3, 1700000000000)
    assert pull.subscription is None and pull.bname == "broker-a"
    assert h.to_ext_fields(pull) == _PULL


def test_missing_required_field_names_it_and_carries_the_brokers_answer() -> None:
    ext = dict(_PULL)
    del ext["queueOffset"]
    with pytest.raises(h.HeaderFieldError) as info:
        h.from_ext_fields(h.PullMessageRequestHeader, ext)
    err = info.value
    assert isinstance(err, HeaderError)
    assert err.field == "queueOffset"
    assert "queueOffset" in str(err)
    assert err.response_code == ResponseCode.SYSTEM_ERROR
    assert err.remark.startswith("java.lang.NullPointerException")
    with pytest.raises(h.HeaderFieldError) as info:
        h.from_ext_fields(h.GetRouteInfoRequestHeader, None)
    assert info.value.field == "topic"


@pytest.mark.parametrize(
    ("cls", "ext", "field"),
    [
        (h.GetMaxOffsetRequestHeader, {"topic": "t", "queueId": "x"}, "queueId"),
        (h.GetMaxOffsetRequestHeader, {"topic": "t", "queueId": "2147483648"}, "queueId"),
        (h.GetMaxOffsetRequestHeader, {"topic": "t", "queueId": " 1"}, "queueId"),
        (h.GetMaxOffsetRequestHeader, {"topic": "t", "queueId": ""}, "queueId"),
        (h.ViewMessageRequestHeader, {"offset": "9223372036854775808"}, "offset"),
        (h.ViewMessageRequestHeader, {"offset": "1_000"}, "offset"),
    ],
)
def test_unparsable_numbers_name_the_field(
    cls: type[h.CommandCustomHeader], ext: dict[str, str], field: str
) -> None:
    with pytest.raises(h.HeaderFieldError) as info:
        h.from_ext_fields(cls, ext)
    assert info.value.field == field
    assert info.value.remark == f'java.lang.NumberFormatException: For input string: "{ext[field]}"'
    lenient = h.from_ext_fields(cls, ext, strict=False)
    assert getattr(lenient, field.replace("queueId", "queue_id")) is None


def test_java_number_syntax_accepted() -> None:
    header = h.from_ext_fields(h.GetMaxOffsetRequestHeader, {"topic": "t", "queueId": "+007"})
    assert header.queue_id == 7
    view = h.from_ext_fields(h.ViewMessageRequestHeader, {"offset": "-9223372036854775808"})
    assert view.offset == -(2**63)


def test_lenient_decoding_behaves_like_java() -> None:
    header = h.from_ext_fields(h.SendMessageRequestHeader, {"topic": "t", "unitMode": "TRUE"}, strict=False)
    assert header.topic == "t" and header.producer_group is None and header.queue_id is None
    assert header.unit_mode is True  # Boolean.parseBoolean is case-insensitive
    assert header.batch is False  # primitive default kept
    assert h.from_ext_fields(h.SendMessageRequestHeader, {"batch": "yes"}, strict=False).batch is False


def test_unknown_ext_fields_are_ignored() -> None:
    ext = {"topic": "T", "AccessKey": "ak", "Signature": "sig", "acceptStandardJsonOnly": "true"}
    route = h.from_ext_fields(h.GetRouteInfoRequestHeader, ext)
    assert route == h.GetRouteInfoRequestHeader(topic="T", accept_standard_json_only=True)


# ------------------------------------------------------------------------------------------------ V1 / V2

# protocol.md §3.2: the single letters of SEND_MESSAGE_V2
_LETTERS = {
    "a": "producerGroup",
    "b": "topic",
    "c": "defaultTopic",
    "d": "defaultTopicQueueNums",
    "e": "queueId",
    "f": "sysFlag",
    "g": "bornTimestamp",
    "h": "flag",
    "i": "properties",
    "j": "reconsumeTimes",
    "k": "unitMode",
    "l": "maxReconsumeTimes",
    "m": "batch",
    "n": "bname",
}


@settings(max_examples=200, deadline=None)
@given(_header_strategy(h.SendMessageRequestHeader))
def test_send_v1_v2_mapping(v1: h.SendMessageRequestHeader) -> None:
    v2 = h.send_v1_to_v2(v1)
    assert h.send_v2_to_v1(v2) == v1
    ext1, ext2 = h.to_ext_fields(v1), h.to_ext_fields(v2)
    for letter, name in _LETTERS.items():
        assert ext2.get(letter) == ext1.get(name), letter
    for name in ("ns", "nsd", "oway", "lo"):
        assert ext2.get(name) == ext1.get(name)


def test_send_v2_as_the_java_producer_sends_it() -> None:
    ext = {
        "a": "pg",
        "b": "TopicTest",
        "c": "TBW102",
        "d": "4",
        "e": "1",
        "f": "0",
        "g": "1700000000000",
        "h": "0",
        "i": "UNIQ_KEY\x01AC11\x02WAIT\x01true\x02TAGS\x01TagA",
        "j": "0",
        "k": "false",
        "m": "false",
        "n": "broker-a",
    }
    v2 = h.from_ext_fields(h.SendMessageRequestHeaderV2, ext)
    v1 = h.send_v2_to_v1(v2)
    assert (v1.topic, v1.queue_id, v1.born_timestamp, v1.bname, v1.batch) == (
        "TopicTest",
        1,
        1700000000000,
        "broker-a",
        False,
    )
    batch = h.send_v2_to_v1(h.from_ext_fields(h.SendMessageRequestHeaderV2, {**ext, "m": "true"}))
    assert batch.batch is True
    assert h.to_ext_fields(v2) == ext


def _v2_then_v1(ext: dict[str, str], strict: bool) -> object:
    try:
        return h.send_v2_to_v1(h.from_ext_fields(h.SendMessageRequestHeaderV2, ext, strict=strict))
    except HeaderFieldError as exc:
        return ("error", str(exc))


def _v2_as_v1(ext: dict[str, str], strict: bool) -> object:
    try:
        return h.send_v2_as_v1(ext, strict=strict)
    except HeaderFieldError as exc:
        return ("error", str(exc))


_V2_TEXT = st.one_of(
    st.sampled_from(["0", "1", "-3", "true", "FALSE", "x", "", "99999999999", "1700000000000", " 1"]),
    st.text(max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*_LETTERS, "bname", "ns", "nsd", "oway", "lo", "zz"]), _V2_TEXT, max_size=20
    ),
    st.booleans(),
)
def test_send_v2_as_v1_equals_decoding_v2_then_converting(ext: dict[str, str], strict: bool) -> None:
    """The send path's one-step conversion gives the same V1 header, or the same error, as the two steps."""
    assert _v2_as_v1(ext, strict) == _v2_then_v1(ext, strict)


def test_send_v2_as_v1_on_the_java_producers_header() -> None:
    ext = {"a": "pg", "b": "T", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000", "h": "0"}
    for extra in ({}, {"n": "broker-a", "bname": "other", "ns": "n1", "oway": "true", "lo": "false"}):
        assert _v2_as_v1({**ext, **extra}, True) == _v2_then_v1({**ext, **extra}, True)
    assert h.send_v2_as_v1({**ext, "n": "broker-a", "bname": "other"}).bname == "broker-a"


# ------------------------------------------------------------------------------------------------ registries


def test_registries_cover_the_session_codes() -> None:
    # protocol.md §12 plus the "next in line" list and the broker-side requests
    with_request_header = {
        RequestCode.GET_ROUTEINFO_BY_TOPIC,
        RequestCode.SEND_MESSAGE,
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.SEND_BATCH_MESSAGE,
        RequestCode.PULL_MESSAGE,
        RequestCode.LITE_PULL_MESSAGE,
        RequestCode.UPDATE_CONSUMER_OFFSET,
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.GET_CONSUMER_LIST_BY_GROUP,
        RequestCode.GET_MAX_OFFSET,
        RequestCode.GET_MIN_OFFSET,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        RequestCode.UNREGISTER_CLIENT,
        RequestCode.CONSUMER_SEND_MSG_BACK,
        RequestCode.UPDATE_AND_CREATE_TOPIC,
        RequestCode.GET_TOPIC_STATS_INFO,
        RequestCode.GET_CONSUME_STATS,
        RequestCode.GET_CONSUMER_CONNECTION_LIST,
        RequestCode.GET_PRODUCER_CONNECTION_LIST,
        RequestCode.END_TRANSACTION,
        RequestCode.CHECK_TRANSACTION_STATE,
        RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,
        RequestCode.VIEW_MESSAGE_BY_ID,
        RequestCode.QUERY_MESSAGE,
        RequestCode.DELETE_TOPIC_IN_BROKER,
        RequestCode.DELETE_TOPIC_IN_NAMESRV,
        RequestCode.REGISTER_BROKER,
        RequestCode.UNREGISTER_BROKER,
        RequestCode.GET_KV_CONFIG,
        RequestCode.PUT_KV_CONFIG,
        RequestCode.GET_CONSUMER_RUNNING_INFO,
        RequestCode.DELETE_SUBSCRIPTIONGROUP,
        RequestCode.QUERY_TOPIC_CONSUME_BY_WHO,
        RequestCode.INVOKE_BROKER_TO_RESET_OFFSET,
        RequestCode.RESET_CONSUMER_CLIENT_OFFSET,
        RequestCode.QUERY_CONSUME_TIME_SPAN,
        RequestCode.CONSUME_MESSAGE_DIRECTLY,
    }
    assert with_request_header <= set(h.REQUEST_HEADERS)
    with_response_header = {
        RequestCode.SEND_MESSAGE_V2,
        RequestCode.PULL_MESSAGE,
        RequestCode.QUERY_CONSUMER_OFFSET,
        RequestCode.GET_MAX_OFFSET,
        RequestCode.GET_MIN_OFFSET,
        RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,
        RequestCode.GET_EARLIEST_MSG_STORETIME,
        RequestCode.REGISTER_BROKER,
        RequestCode.QUERY_MESSAGE,
        RequestCode.GET_KV_CONFIG,
        RequestCode.GET_BROKER_CONFIG,
    }
    assert with_response_header <= set(h.RESPONSE_HEADERS)
    assert h.REQUEST_HEADERS[RequestCode.LITE_PULL_MESSAGE] is h.PullMessageRequestHeader
    assert h.REQUEST_HEADERS[RequestCode.SEND_BATCH_MESSAGE] is h.SendMessageRequestHeaderV2


def test_decode_by_code() -> None:
    pull = h.decode_request_header(RequestCode.PULL_MESSAGE, _PULL)
    assert isinstance(pull, h.PullMessageRequestHeader) and pull.queue_offset == 128
    assert h.decode_request_header(RequestCode.GET_BROKER_CLUSTER_INFO, {}) is None
    with pytest.raises(h.HeaderFieldError):
        h.decode_request_header(RequestCode.GET_MAX_OFFSET, {"topic": "t"})
    error_reply = h.decode_response_header(RequestCode.GET_MAX_OFFSET, None)
    assert isinstance(error_reply, h.GetMaxOffsetResponseHeader) and error_reply.offset is None
    found = h.decode_response_header(RequestCode.GET_MAX_OFFSET, {"offset": "42"})
    assert isinstance(found, h.GetMaxOffsetResponseHeader) and found.offset == 42


def test_every_header_class_is_a_keyword_dataclass_with_known_field_types() -> None:
    for cls in ALL_CLASSES:
        assert dataclasses.is_dataclass(cls)
        wires = [spec.wire for spec in h.header_fields(cls)]
        assert len(wires) == len(set(wires)), cls


# -------------------------------------------------------------------------------------------- real classes

# Ext fields the broker or client adds beside the header class (not Java fields)
_EXTRA_WIRES = {
    "MSG_REGION",
    "TRACE_ON",
    "_UNIQUE_KEY_QUERY",
    "__ZONE_NAME",
    "IS_SUPPORT_HEART_BEAT_V2",
    "IS_SUB_CHANGE",
}
# Java-required fields we keep optional because only one line has them, or Java defaults them
_OPTIONAL_HERE = {
    ("CreateTopicRequestHeader", "order"),  # Java initialises it to false, so it is never null
    # 5.5 paging of GET_ALL_*: older peers send no header at all (Java then skips every check)
    ("GetAllTopicConfigRequestHeader", "topicSeq"),
    ("GetAllTopicConfigRequestHeader", "maxTopicNum"),
    ("GetAllTopicConfigRequestHeader", "dataVersion"),
    ("GetAllSubscriptionGroupRequestHeader", "groupSeq"),
    ("GetAllSubscriptionGroupRequestHeader", "maxGroupNum"),
    ("GetAllSubscriptionGroupRequestHeader", "dataVersion"),
    ("GetAllSubscriptionGroupResponseHeader", "totalGroupNum"),  # absent from 4.9 brokers' responses
    ("RecallMessageResponseHeader", "msgId"),  # a refused recall leaves it null (the answer has no msgId)
}


def _read_java_header_fields(line: str) -> dict[str, dict[str, tuple[str, bool]] | None]:
    """Our header classes' namesakes in the line (golden ``headers`` command): field -> (kind, @CFNotNull)."""
    rows = run_golden(line, "headers", stdin="".join(f"{cls.__name__}\n" for cls in ALL_CLASSES))
    found: dict[str, dict[str, tuple[str, bool]] | None] = {}
    for name, flag, *fields in rows:
        if flag == "-":
            found[name] = None
            continue
        table = {}
        for item in fields:
            fname, ftype, req = item.split(":")
            table[fname] = (JAVA_HEADER_KINDS.get(ftype, ftype), req == "required")
        found[name] = table
    return found


JavaFields = dict[str, dict[str, dict[str, tuple[str, bool]] | None]]


@pytest.fixture(scope="module")
def java_headers() -> JavaFields:
    """Field tables of our header classes' namesakes in rocketmq-common 4.9.8 / rocketmq-remoting 5.5.0."""
    return {line: _read_java_header_fields(line) for line in ("v4", "v5")}


@pytest.mark.java
@pytest.mark.parametrize("line", ["v4", "v5"])
def test_header_classes_match_java(java_headers: JavaFields, line: str) -> None:
    found = java_headers[line]
    problems = []
    present = 0
    for cls in ALL_CLASSES:
        java = found[cls.__name__]
        if java is None:
            continue  # no such class in this line (e.g. 5.x-only or our response ext-field holders)
        present += 1
        ours = {spec.wire: spec for spec in h.header_fields(cls)}
        for name, (kind, required) in java.items():
            spec = ours.get(name)
            if spec is None:
                problems.append(f"{cls.__name__}.{name}: missing")
                continue
            if _kind(spec) != kind:
                problems.append(f"{cls.__name__}.{name}: {_kind(spec)} here, {kind} in Java")
            if required and not spec.required and (cls.__name__, name) not in _OPTIONAL_HERE:
                problems.append(f"{cls.__name__}.{name}: @CFNotNull in Java, optional here")
            if spec.required and not required:
                problems.append(f"{cls.__name__}.{name}: required here, nullable in Java")
    assert problems == []
    assert present >= 55, f"only {present} header classes found in {line}"


@pytest.mark.java
def test_no_invented_header_fields(java_headers: JavaFields) -> None:
    """Every field here exists in the 4.9.8 or the 5.5.0 class, or is a documented extra ext field."""
    invented = []
    for cls in ALL_CLASSES:
        java_names = set(java_headers["v4"][cls.__name__] or ()) | set(java_headers["v5"][cls.__name__] or ())
        if not java_names:
            continue
        for spec in h.header_fields(cls):
            if spec.wire not in java_names and spec.wire not in _EXTRA_WIRES:
                invented.append(f"{cls.__name__}.{spec.wire}")
    assert invented == []
