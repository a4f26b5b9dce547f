from __future__ import annotations

import struct

from rmqtwin.codec.fastjson import loads
from rmqtwin.codec.message import (
    MessageExt,
    create_offset_msg_id,
    decode_message_records,
    decode_offset_msg_id,
    encode_message_record,
)
from rmqtwin.proxy.rewrite import AddressRewriter
from rmqtwin.proxy.wire import peek_header, read_head
from tests.proxy.frames import CLUSTER_INFO, ROUTE_QUOTED, ROUTE_UNQUOTED, binary_frame, json_frame


class Ports:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.table: dict[tuple[str, str], str] = {}

    def __call__(self, addr: str, kind: str) -> str:
        self.calls.append((addr, kind))
        return self.table.setdefault((addr, kind), f"127.0.0.1:{40000 + len(self.table)}")


def body_of(frame: bytes) -> bytes:
    return frame[8 + (struct.unpack_from(">I", frame, 4)[0] & 0xFFFFFF) :]


def test_route_data_quoted_keys_keep_their_dialect() -> None:
    ports = Ports()
    frame = json_frame(0, 5, flag=1, body=ROUTE_QUOTED)
    out = AddressRewriter(ports).rewrite_frame(frame)
    assert out is not None
    body = body_of(out)
    assert body == (
        ROUTE_QUOTED.replace(b"10.0.0.5:10911", b"127.0.0.1:40000").replace(
            b"10.0.0.6:10911", b"127.0.0.1:40001"
        )
    )
    assert b'{"0":"127.0.0.1:40000","1":"127.0.0.1:40001"}' in body
    parsed = loads(body)
    assert parsed["queueDatas"] == loads(ROUTE_QUOTED)["queueDatas"]
    assert set(parsed["filterServerTable"]) == {"127.0.0.1:40000"}
    assert struct.unpack_from(">I", out)[0] == len(out) - 4
    # header bytes are untouched
    assert out[8 : len(out) - len(body)] == frame[8 : len(frame) - len(ROUTE_QUOTED)]


def test_route_data_unquoted_keys_stay_unquoted() -> None:
    ports = Ports()
    out = AddressRewriter(ports).rewrite_frame(json_frame(0, 5, flag=1, body=ROUTE_UNQUOTED))
    assert out is not None
    assert b'{0:"127.0.0.1:40000",1:"127.0.0.1:40001"}' in body_of(out)


def test_cluster_info_and_the_same_broker_maps_to_the_same_listener() -> None:
    ports = Ports()
    rewriter = AddressRewriter(ports)
    rewriter.rewrite_frame(json_frame(0, 5, flag=1, body=ROUTE_QUOTED))
    out = rewriter.rewrite_frame(json_frame(0, 6, flag=1, body=CLUSTER_INFO))
    assert out is not None
    assert body_of(out) == CLUSTER_INFO.replace(b"10.0.0.5:10911", b"127.0.0.1:40000")
    assert rewriter.rewritten_frames == 2


def test_topic_list_broker_addr() -> None:
    body = b'{"brokerAddr":"10.0.0.5:10911","topicList":["DefaultCluster","broker-a"]}'
    out = AddressRewriter(Ports()).rewrite_frame(json_frame(0, 1, flag=1, body=body))
    assert out is not None
    assert body_of(out) == b'{"brokerAddr":"127.0.0.1:40000","topicList":["DefaultCluster","broker-a"]}'


def test_frames_without_addresses_are_left_alone() -> None:
    ports = Ports()
    rewriter = AddressRewriter(ports)
    assert rewriter.rewrite_frame(json_frame(0, 1, flag=1, body=b'{"topicList":["a"]}')) is None
    assert rewriter.rewrite_frame(json_frame(17, 1, flag=1, remark="No topic route info")) is None
    assert rewriter.rewrite_frame(b"\x00\x00\x00\x09garbage") is None
    assert ports.calls == []


def test_register_broker_answer_header_fields_json_and_binary() -> None:
    ports = Ports()
    ext = {"haServerAddr": "10.0.0.5:10912", "masterAddr": "10.0.0.5:10911"}
    out = AddressRewriter(ports).rewrite_frame(json_frame(0, 9, flag=1, ext=ext))
    assert out is not None
    peek = peek_header(out)
    assert peek is not None
    assert peek.ext_fields == {"haServerAddr": "127.0.0.1:40000", "masterAddr": "127.0.0.1:40001"}
    assert ports.calls == [("10.0.0.5:10912", "ha"), ("10.0.0.5:10911", "broker")]

    out = AddressRewriter(ports).rewrite_frame(binary_frame(0, 9, flag=1, ext=ext, body=b"{}"))
    assert out is not None
    peek = peek_header(out)
    assert peek is not None and peek.serialize_type == 1 and peek.opaque == 9
    assert peek.ext_fields == {"haServerAddr": "127.0.0.1:40000", "masterAddr": "127.0.0.1:40001"}
    assert body_of(out) == b"{}"


# ---------------------------------------------------------------------------------- broker-to-client frames

BROKER = ("10.0.0.5", 10911)
LISTENERS = {"10.0.0.5:10911": "127.0.0.1:41000"}


def _record(store_host: tuple[str, int], offset: int, topic: str = "T") -> bytes:
    msg = MessageExt(
        topic=topic,
        body=b"hello",
        properties={"UNIQ_KEY": "7F0000010001AABBCCDD000000000001"},
        born_host=("10.0.0.9", 50000),
        store_host=store_host,
        commitlog_offset=offset,
    )
    return encode_message_record(msg)


def test_send_answer_offset_msg_ids_name_the_listener_json_and_binary() -> None:
    rewriter = AddressRewriter(Ports(), LISTENERS.get)
    single = create_offset_msg_id(BROKER, 4096)
    batch = ",".join(create_offset_msg_id(BROKER, o) for o in (0, 200, 400))
    for make in (json_frame, binary_frame):
        for value in (single, batch):
            frame = make(0, 7, flag=1, ext={"msgId": value, "queueId": "1", "queueOffset": "3"})
            out = rewriter.rewrite_broker_frame(frame)
            assert out is not None
            peek = peek_header(out)
            assert peek is not None and peek.opaque == 7 and peek.ext_fields["queueOffset"] == "3"
            new_ids = peek.ext_fields["msgId"].split(",")
            old_ids = value.split(",")
            assert [decode_offset_msg_id(i) for i in new_ids] == [
                ("127.0.0.1", 41000, decode_offset_msg_id(i)[2]) for i in old_ids
            ]


def test_broker_frames_naming_no_known_broker_pass_unchanged() -> None:
    rewriter = AddressRewriter(Ports(), LISTENERS.get)
    uniq_key = "7F0000010001AABBCCDD000000000001"  # a client's UNIQ_KEY, not an offset msgId
    unknown = create_offset_msg_id(("10.9.9.9", 10911), 1)
    for value in (uniq_key, unknown, "not-hex"):
        assert rewriter.rewrite_broker_frame(json_frame(0, 1, flag=1, ext={"msgId": value})) is None
    pull_elsewhere = json_frame(0, 2, flag=1, body=_record(("10.9.9.9", 10911), 0))
    assert rewriter.rewrite_broker_frame(pull_elsewhere) is None
    assert rewriter.rewrite_broker_frame(json_frame(0, 3, flag=1, body=b"\x00\x00\x00\x10" * 8)) is None
    assert rewriter.rewrite_broker_frame(json_frame(0, 3, flag=1, body=b"{}")) is None


def test_pull_answer_records_get_the_listener_as_store_host_in_place() -> None:
    rewriter = AddressRewriter(Ports(), LISTENERS.get)
    body = _record(BROKER, 0) + _record(("10.9.9.9", 10911), 100) + _record(BROKER, 200, topic="U")
    frame = json_frame(0, 5, flag=1, ext={"suggestWhichBrokerId": "0", "nextBeginOffset": "3"}, body=body)
    out = rewriter.rewrite_broker_frame(frame)
    assert out is not None and len(out) == len(frame)
    records = decode_message_records(body_of(out))
    assert [(m.store_host, m.commitlog_offset, m.body) for m in records] == [
        (("127.0.0.1", 41000), 0, b"hello"),
        (("10.9.9.9", 10911), 100, b"hello"),
        (("127.0.0.1", 41000), 200, b"hello"),
    ]
    assert records[0].msg_id == create_offset_msg_id(("127.0.0.1", 41000), 0)
    # a listener advertised by name cannot be written into a record: the record stays as it is
    named = AddressRewriter(Ports(), {"10.0.0.5:10911": "proxy.local:41000"}.get)
    assert named.rewrite_broker_frame(json_frame(0, 6, flag=1, body=_record(BROKER, 0))) is None


def test_in_place_msg_id_patch_equals_rewriting_the_header() -> None:
    """The broker-frame rewrite patches the frame in place; it must give exactly the frame that
    decoding the header's msgId fields, swapping them and re-encoding the frame gives."""
    from rmqtwin.codec.frame import encode_frame, split_whole_frame
    from rmqtwin.proxy.rewrite import _MSG_ID_FIELDS, _rewrite_header

    BROKER_HOST = bytes([10, 0, 0, 5]) + struct.pack(">i", 10911)  # noqa: N806
    LISTENER_HOST = bytes([127, 0, 0, 1]) + struct.pack(">i", 41000)  # noqa: N806
    ours = create_offset_msg_id(BROKER, 77)
    other = create_offset_msg_id(("10.9.9.9", 10911), 5)
    values = [ours, f"{ours},{other},{ours}", other, "7F0000010001AABBCCDD000000000001", ours.lower()]
    frames = []
    for value in values:
        ext = {"queueId": "1", "msgId": value, "offsetMsgId": ours, "note": '"msgId":"x"'}
        for make in (json_frame, binary_frame):
            frames.append(make(0, 3, flag=1, ext=ext, remark="sgId", body=_record(BROKER, 9)))
            frames.append(make(0, 3, flag=1, ext=ext, body=_record(BROKER, 9) + _record(("10.9.9.9", 1), 1)))
        spaced = split_whole_frame(json_frame(0, 3, flag=1, ext=ext))
        assert spaced is not None
        frames.append(encode_frame(spaced[1].replace(b'"msgId":"', b'"msgId" : "'), spaced[2]))
        # what the session's head says but a search of the bytes cannot find as Java writes it: a key
        # or a value with a JSON escape, a key after a space
        frames.append(encode_frame(spaced[1].replace(b'"msgId":"', b'"msg\\u0049d":"'), spaced[2]))
        frames.append(encode_frame(spaced[1].replace(b'"offsetMsgId":"0', b'"offsetMsgId":"\\u0030'), b""))
        frames.append(encode_frame(spaced[1].replace(b',"msgId":"', b', "msgId":"'), spaced[2]))
        # a key holding an escaped quote before the real one: the search alone would patch the wrong one
        frames.append(json_frame(0, 3, flag=1, ext={'x"msgId': value, "msgId": value}))
    for frame in frames:
        rewriter = AddressRewriter(Ports(), LISTENERS.get)
        parts = split_whole_frame(frame)
        assert parts is not None
        serialize_type, header, body = parts
        header = _rewrite_header(header, serialize_type, _MSG_ID_FIELDS, rewriter._swap_msg_ids)
        # the records of the body keep everything but the store host of the known broker
        body = body.replace(BROKER_HOST, LISTENER_HOST)
        expected = encode_frame(header, body, serialize_type)
        out = rewriter.rewrite_broker_frame(frame)
        assert (frame if out is None else out) == expected
        # the same with the head a session read: its msgIds found by one search each, or the slow way
        head = read_head(frame)
        assert head is not None
        out = rewriter.rewrite_broker_frame(frame, head)
        assert (frame if out is None else out) == expected
