"""RemotingConnection: two connections wired back to back exchange requests and responses."""

from __future__ import annotations

import pytest

from rmqtwin.codec.codes import RequestCode, ResponseCode, SerializeType
from rmqtwin.codec.command import (
    JsonDialect,
    RemotingCommand,
    create_request,
    create_response,
    encode_command,
)
from rmqtwin.codec.connection import (
    Event,
    RemotingConnection,
    RequestFailed,
    RequestReceived,
    RequestTimedOut,
    ResponseReceived,
    events_before_error,
)
from rmqtwin.codec.errors import CodecError, FrameError, FrameTooLarge


class ConnectionPair:
    """A client and a server connection; ``deliver`` moves one side's output into the other."""

    def __init__(self, **kwargs: object) -> None:
        self.client = RemotingConnection(**kwargs)  # type: ignore[arg-type]
        self.server = RemotingConnection(**kwargs)  # type: ignore[arg-type]

    def to_server(self, split: int | None = None) -> list[Event]:
        return self._deliver(self.client, self.server, split)

    def to_client(self, split: int | None = None) -> list[Event]:
        return self._deliver(self.server, self.client, split)

    @staticmethod
    def _deliver(src: RemotingConnection, dst: RemotingConnection, split: int | None) -> list[Event]:
        data = src.data_to_send()
        if split is None:
            return dst.receive_data(data)
        events: list[Event] = []
        for i in range(0, len(data), split):
            events += dst.receive_data(data[i : i + split])
        return events


def test_request_response_round_trip() -> None:
    pair = ConnectionPair()
    request = create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "T"})
    opaque = pair.client.send_request(request, now=0.0, timeout=3.0)
    assert opaque == 0 and request.opaque == 0
    assert pair.client.pending_count == 1 and pair.client.pending_request(0) is request
    (event,) = pair.to_server(split=7)
    assert isinstance(event, RequestReceived)
    assert event.command == request
    response = create_response(event.command, ResponseCode.TOPIC_NOT_EXIST, remark="No topic route info")
    assert pair.server.send_response(event.command, response)
    (reply,) = pair.to_client()
    assert reply == ResponseReceived(response, request)
    assert reply.command.remark == "No topic route info"
    assert pair.client.pending_count == 0 and pair.client.next_deadline() is None


def test_opaques_increase_and_responses_match_out_of_order() -> None:
    pair = ConnectionPair(first_opaque=10)
    requests = [create_request(RequestCode.PULL_MESSAGE, {"queueId": str(i)}) for i in range(3)]
    assert [pair.client.send_request(r, now=0.0, timeout=30.0) for r in requests] == [10, 11, 12]
    received = pair.to_server(split=1)
    assert [e.command.ext_fields for e in received if isinstance(e, RequestReceived)] == [
        {"queueId": "0"},
        {"queueId": "1"},
        {"queueId": "2"},
    ]
    for event in reversed(received):
        assert isinstance(event, RequestReceived)
        pair.server.send_response(event.command, create_response(event.command, ResponseCode.PULL_NOT_FOUND))
    replies = pair.to_client()
    assert [r.request for r in replies if isinstance(r, ResponseReceived)] == requests[::-1]


def test_opaque_wraps_like_a_java_int() -> None:
    conn = RemotingConnection(first_opaque=2**31 - 1)
    assert conn.send_request(create_request(1), now=0, timeout=1) == 2**31 - 1
    assert conn.send_request(create_request(1), now=0, timeout=1) == -(2**31)


def test_oneway_requests_are_not_pending_and_never_answered() -> None:
    pair = ConnectionPair()
    oneway = create_request(RequestCode.UPDATE_CONSUMER_OFFSET, {"commitOffset": "5"}, oneway=True)
    pair.client.send_request(oneway, now=0.0, timeout=3.0)
    assert pair.client.pending_count == 0 and pair.client.next_deadline() is None
    (event,) = pair.to_server()
    assert isinstance(event, RequestReceived) and event.command.is_oneway
    assert not pair.server.send_response(event.command, create_response(event.command, ResponseCode.SUCCESS))
    assert pair.server.data_to_send() == b""


def test_response_in_the_request_serialization() -> None:
    pair = ConnectionPair()
    request = create_request(RequestCode.HEART_BEAT, body=b"{}", serialize_type=SerializeType.ROCKETMQ)
    pair.client.send_request(request, now=0, timeout=3)
    data = pair.client.data_to_send()
    assert data[4] == 1  # binary header
    (event,) = pair.server.receive_data(data)
    assert isinstance(event, RequestReceived)
    response = RemotingCommand(code=ResponseCode.SUCCESS)  # JSON by default ...
    pair.server.send_response(event.command, response)
    out = pair.server.data_to_send()
    assert out[4] == 1  # ... but answered in the request's serialization
    (reply,) = pair.client.receive_data(out)
    assert isinstance(reply, ResponseReceived) and reply.request is request and reply.command.is_response


def test_unmatched_response_has_no_request() -> None:
    pair = ConnectionPair()
    stray = create_request(RequestCode.HEART_BEAT, opaque=99)
    pair.server.send_response(stray, create_response(stray, ResponseCode.SUCCESS))
    (event,) = pair.to_client()
    assert isinstance(event, ResponseReceived) and event.request is None and event.command.opaque == 99


def test_server_to_client_requests_on_the_same_connection() -> None:
    pair = ConnectionPair()
    notify = create_request(RequestCode.NOTIFY_CONSUMER_IDS_CHANGED, {"consumerGroup": "g"}, oneway=True)
    pair.server.send_request(notify, now=0, timeout=3)
    (event,) = pair.to_client()
    assert (
        isinstance(event, RequestReceived) and event.command.code == RequestCode.NOTIFY_CONSUMER_IDS_CHANGED
    )


def test_timeouts_with_time_passed_in() -> None:
    conn = RemotingConnection()
    first = create_request(RequestCode.PULL_MESSAGE)
    second = create_request(RequestCode.HEART_BEAT)
    conn.send_request(first, now=100.0, timeout=20.0)
    conn.send_request(second, now=101.0, timeout=3.0)
    assert conn.next_deadline() == 104.0
    assert conn.expire(103.9) == []
    assert conn.expire(104.0) == [RequestTimedOut(second)]
    assert conn.next_deadline() == 120.0
    # a response that arrives after the timeout matches nothing
    peer = RemotingConnection()
    received = peer.receive_data(conn.data_to_send())
    assert [e.command.opaque for e in received] == [first.opaque, second.opaque]
    for event in received:
        peer.send_response(event.command, create_response(event.command, ResponseCode.SUCCESS))
    replies = conn.receive_data(peer.data_to_send())
    assert [r.request for r in replies if isinstance(r, ResponseReceived)] == [first, None]
    assert conn.next_deadline() is None and conn.expire(1e9) == []


def _encoded(cmd: RemotingCommand) -> bytes:
    return encode_command(cmd)


def test_connection_lost_fails_pending() -> None:
    conn = RemotingConnection()
    req = create_request(RequestCode.QUERY_CONSUMER_OFFSET)
    conn.send_request(req, now=0, timeout=5)
    conn.send_request(create_request(RequestCode.UPDATE_CONSUMER_OFFSET, oneway=True), now=0, timeout=5)
    assert conn.connection_lost() == [RequestFailed(req)]
    assert conn.pending_count == 0 and conn.next_deadline() is None and conn.data_to_send() == b""


def test_send_request_refuses_responses() -> None:
    conn = RemotingConnection()
    with pytest.raises(ValueError):
        conn.send_request(RemotingCommand(code=0, flag=1), now=0, timeout=1)


def test_codec_errors_propagate_and_poison() -> None:
    conn = RemotingConnection(max_frame_size=1024)
    with pytest.raises(FrameTooLarge):
        conn.receive_data(b"\x00\x10\x00\x00")
    with pytest.raises(CodecError):
        conn.receive_data(_encoded(create_request(1)))
    bad = RemotingConnection()
    with pytest.raises(CodecError):
        bad.receive_data(b"\x00\x00\x00\x06\x00\x00\x00\x02[]")


def test_fastjson2_dialect_is_used_for_output() -> None:
    conn = RemotingConnection(json_dialect=JsonDialect.FASTJSON2)
    conn.send_request(create_request(1, remark="\x0b"), now=0, timeout=1)
    assert b"\\u000b" in conn.data_to_send()
    conn1 = RemotingConnection()
    conn1.send_request(create_request(1, remark="\x0b"), now=0, timeout=1)
    assert b"\\u000B" in conn1.data_to_send()


def test_send_raw_passes_bytes_through() -> None:
    conn = RemotingConnection()
    frame = _encoded(create_request(RequestCode.HEART_BEAT, opaque=5))
    conn.send_raw(frame)
    assert conn.data_to_send() == frame


def test_events_before_a_bad_frame_are_kept_with_the_error() -> None:
    pair = ConnectionPair()
    pending = create_request(RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": "t"})
    pair.client.send_request(pending, now=0, timeout=3)
    assert len(pair.to_server()) == 1
    pair.server.send_response(pending, create_response(pending, ResponseCode.SUCCESS))
    check = create_request(RequestCode.CHECK_TRANSACTION_STATE, oneway=True)
    pair.server.send_request(check, now=0, timeout=1)
    bad_header = b"\x00\x00\x00\x06\x00\x00\x00\x02[]"  # a JSON header that is not an object
    chunk = pair.server.data_to_send() + bad_header + _encoded(create_request(RequestCode.HEART_BEAT))
    with pytest.raises(FrameError) as info:
        pair.client.receive_data(chunk)
    events = events_before_error(info.value)
    assert [type(e) for e in events] == [ResponseReceived, RequestReceived]
    response, request = events
    assert isinstance(response, ResponseReceived) and response.request is pending
    assert isinstance(request, RequestReceived) and request.command == check
    assert pair.client.pending_count == 0
    # poisoned: the same error again, without events (they were delivered with the first raise)
    with pytest.raises(FrameError) as again:
        pair.client.receive_data(_encoded(create_request(RequestCode.HEART_BEAT)))
    assert again.value is info.value and events_before_error(again.value) == []


def test_events_before_an_oversize_length_word_are_kept() -> None:
    conn = RemotingConnection(max_frame_size=1024)
    heartbeat = _encoded(create_request(RequestCode.HEART_BEAT, opaque=9))
    with pytest.raises(FrameTooLarge) as info:
        conn.receive_data(heartbeat + b"\x00\x10\x00\x00")
    [event] = events_before_error(info.value)
    assert isinstance(event, RequestReceived) and event.command.opaque == 9
    assert events_before_error(CodecError("raised elsewhere")) == []
