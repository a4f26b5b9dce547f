"""Per-connection bounds of the remoting server: idle reaping, the write-buffer high-water mark, a large
header decoded in slices between other work, a graceful close on an undecodable frame."""

from __future__ import annotations

import struct

from twisted.internet.address import IPv4Address
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport

from rmqtwin.codec.command import (
    STEP_BYTES,
    RemotingCommand,
    create_request,
    decode_command,
    decode_command_steps,
    encode_command,
)
from rmqtwin.codec.connection import DecodeInSteps, RemotingConnection, RequestReceived
from rmqtwin.fakes.dispatch import Dispatcher, response
from rmqtwin.fakes.server import (
    DEFAULT_MAX_IDLE_SECONDS,
    STEPPED_HEADER_BYTES,
    WRITE_BUFFER_HIGH_WATER_MARK,
    RemotingProtocol,
    RemotingServerFactory,
    stepped_decoding,
)

ECHO = 1234


def _dispatcher() -> Dispatcher:
    d = Dispatcher("test")
    d.register(ECHO, lambda channel, request: response(body=request.body))
    return d


def _connect(factory: RemotingServerFactory) -> tuple[RemotingProtocol, StringTransport]:
    proto = factory.buildProtocol(None)
    transport = StringTransport(
        hostAddress=IPv4Address("TCP", "127.0.0.1", 10911), peerAddress=IPv4Address("TCP", "127.0.0.1", 5555)
    )
    proto.makeConnection(transport)
    return proto, transport


def _binary_request(fields: int, opaque: int = 1) -> bytes:
    """A ROCKETMQ-serialized ECHO request whose header carries ``fields`` extFields."""
    entry = b"".join(
        struct.pack(">h", 6) + b"k%05d" % (i % 100_000) + struct.pack(">i", 1) + b"v" for i in range(fields)
    )
    fixed = struct.pack(">hbhiii", ECHO, 0, 409, opaque, 0, 0) + struct.pack(">i", len(entry)) + entry
    header_word = (1 << 24) | len(fixed)
    return struct.pack(">ii", 4 + len(fixed), header_word) + fixed


def _json_request(opaque: int, body: bytes = b"x") -> bytes:
    return encode_command(create_request(ECHO, {}, body, opaque=opaque))


def _answers(transport: StringTransport) -> list[RemotingCommand]:
    client = RemotingConnection()
    events = client.receive_data(transport.value())
    transport.clear()
    out = []
    for e in events:
        assert not isinstance(e, DecodeInSteps)
        out.append(e.command)
    return out


def test_an_idle_connection_is_closed_after_server_channel_max_idle_time() -> None:
    clock = Clock()
    factory = RemotingServerFactory(_dispatcher(), clock)
    proto, transport = _connect(factory)
    clock.advance(DEFAULT_MAX_IDLE_SECONDS - 1)
    proto.dataReceived(_json_request(1))  # activity restarts the count
    clock.advance(DEFAULT_MAX_IDLE_SECONDS - 1)
    assert not transport.disconnecting
    clock.advance(1)
    assert transport.disconnecting  # closed gracefully (loseConnection)


def test_a_half_frame_does_not_keep_a_connection_alive() -> None:
    clock = Clock()
    factory = RemotingServerFactory(_dispatcher(), clock, max_idle_seconds=30)
    proto, transport = _connect(factory)
    proto.dataReceived(_json_request(1)[:7])
    clock.advance(30)
    assert transport.disconnecting


def test_a_closing_connection_whose_peer_does_not_read_is_aborted_one_idle_period_later() -> None:
    clock = Clock()
    factory = RemotingServerFactory(_dispatcher(), clock, max_idle_seconds=10)
    _proto, transport = _connect(factory)
    aborted: list[bool] = []
    transport.abortConnection = lambda: aborted.append(True)  # type: ignore[method-assign]
    clock.advance(10)
    assert transport.disconnecting and not aborted
    clock.advance(10)
    assert aborted


def test_reading_stops_past_the_high_water_mark_and_resumes_when_drained() -> None:
    clock = Clock()
    proto, transport = _connect(RemotingServerFactory(_dispatcher(), clock))
    assert transport.producer is proto
    # StringTransport never calls pauseProducing itself: play the part of a full socket buffer.
    assert transport.bufferSize == WRITE_BUFFER_HIGH_WATER_MARK  # type: ignore[attr-defined]
    proto.pauseProducing()
    assert transport.producerState == "paused"
    proto.resumeProducing()
    assert transport.producerState == "producing"


def test_a_large_header_is_decoded_in_slices_and_keeps_request_order() -> None:
    clock = Clock()
    proto, transport = _connect(RemotingServerFactory(_dispatcher(), clock))
    big = _binary_request(STEPPED_HEADER_BYTES // 10, opaque=1)
    decoding = stepped_decoding(clock)
    proto.dataReceived(big + _json_request(2) + _json_request(3))
    assert transport.producerState == "paused"  # the connection stops reading meanwhile
    assert _answers(transport) == [] and decoding.pending == 1  # nothing decoded on this turn
    clock.advance(0)  # each turn is its own delayed call: the reactor serves others in between
    assert decoding.turns > 1
    assert [a.opaque for a in _answers(transport)] == [1, 2, 3]
    assert transport.producerState == "producing"


def _one_turn(clock: Clock) -> None:
    """Run the next delayed call only (``Clock.advance(0)`` would also run the ones it schedules)."""
    call = clock.calls[0]
    clock.calls.remove(call)
    call.func(*call.args, **call.kw)


def test_large_headers_of_all_connections_share_one_budget_per_turn_round_robin() -> None:
    clock = Clock()
    factory = RemotingServerFactory(_dispatcher(), clock)
    decoding = stepped_decoding(clock)
    ticks = iter(range(1_000_000))
    decoding.timer = lambda: next(ticks) / 1000  # every slice "takes" 1 ms
    decoding.seconds_per_turn = 0.0015  # two slices a turn, whatever the number of connections
    frame = _binary_request(STEPPED_HEADER_BYTES // 10, opaque=7)
    slices = sum(1 for _ in decode_command_steps(frame[4:], STEP_BYTES)) + 1
    hostile = [_connect(factory) for _ in range(2)]
    for proto, _transport in hostile:
        proto.dataReceived(frame)
    other, other_transport = _connect(factory)
    for turn in range(1, slices):
        _one_turn(clock)
        other.dataReceived(_json_request(turn))  # served on its own read, between the turns
        assert [a.opaque for a in _answers(other_transport)] == [turn]
        assert all(_answers(t) == [] for _p, t in hostile)
    _one_turn(clock)  # one slice each per turn: both finish on the same turn
    assert all([a.opaque for a in _answers(t)] == [7] for _p, t in hostile)
    assert decoding.pending == 0


def test_stepped_decoding_gives_what_decoding_at_once_gives() -> None:
    frame = _binary_request(50_000)[4:]
    conn = RemotingConnection()
    (event,) = conn.receive_data_stepped(_binary_request(50_000), 1024)
    assert isinstance(event, DecodeInSteps)
    command = None
    while command is None:
        command = event.step()
    (done,) = conn.frame_decoded(command)
    assert isinstance(done, RequestReceived)
    whole = decode_command(frame)
    assert done.command.ext_fields == whole.ext_fields and done.command.code == whole.code


def test_an_undecodable_frame_closes_gracefully_after_answering_the_frames_before_it() -> None:
    clock = Clock()
    proto, transport = _connect(RemotingServerFactory(_dispatcher(), clock))
    proto.dataReceived(_json_request(1) + struct.pack(">i", -1) + bytes(8))
    assert [a.opaque for a in _answers(transport)] == [1]
    assert transport.disconnecting  # loseConnection: FIN, not the RST of abortConnection


def _proxy_connect() -> tuple[RemotingProtocol, StringTransport]:
    return _connect(RemotingServerFactory(_dispatcher(), Clock(), proxy_protocol=True))


def test_a_5x_server_takes_the_client_address_from_a_proxy_preamble() -> None:
    proto, transport = _proxy_connect()
    proto.dataReceived(b"PROXY TCP4 10.1.2.3 10.1.2.4 5555 10911\r\n" + _json_request(1))
    assert [a.opaque for a in _answers(transport)] == [1]
    assert proto.remote_addr == "10.1.2.3:5555"
    plain, plain_transport = _proxy_connect()  # no preamble: frames as they come, the socket's address
    plain.dataReceived(_json_request(2))
    assert [a.opaque for a in _answers(plain_transport)] == [2] and plain.remote_addr == "127.0.0.1:5555"


def test_a_5x_server_drops_a_first_read_under_twelve_bytes_as_netty_does() -> None:
    proto, transport = _proxy_connect()
    proto.dataReceived(struct.pack(">i", 0))
    proto.dataReceived(_json_request(3))
    assert [a.opaque for a in _answers(transport)] == [3] and not transport.disconnecting


def test_a_bad_preamble_closes_the_connection() -> None:
    proto, transport = _proxy_connect()
    proto.dataReceived(b"PROXY TCP4 nonsense here\r\n" + _json_request(4))
    assert _answers(transport) == [] and transport.disconnecting
