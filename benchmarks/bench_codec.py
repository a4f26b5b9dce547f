"""Codec speed: the hand-written hot path against the construct spec, per operation.

Run: ``.venv/bin/python benchmarks/bench_codec.py [--quick]``. Prints µs/op (and MB/s for bodies) for
the hot path and for the construct declarations (``rmqtwin.codec.layouts``) side by side, with the
ratio. The construct column for JSON headers is construct's frame plus the stdlib json module (construct
has no JSON), which is the obvious straightforward implementation.

Header rows also show a fixed reference operation timed in the same rounds, and the hot path's cost as a
multiple of it: ``orjson.loads`` of the same JSON header bytes for JSON rows, ``struct.unpack_from`` of the
fixed 21-byte part for binary rows. On a shared, loaded machine the µs figures drift from run to run; the
multiples barely move, so compare those. Operations are timed in interleaved rounds (each round times
every operation once) and the best round counts, so a burst of load hits all of them alike.

Targets (issue 17): JSON and binary header decode <= 2 µs, pull bodies >= 300 MB/s.
"""

from __future__ import annotations

import argparse
import json
import struct
import sys
import timeit
from collections.abc import Callable
from functools import partial
from typing import Any

import orjson
from common import Figures, load_note, write_figures

from rmqtwin.codec.codes import RequestCode, ResponseCode, SerializeType
from rmqtwin.codec.command import (
    RemotingCommand,
    create_request,
    create_response,
    decode_command,
    encode_command,
    ext_fields_in_wire_order,
)
from rmqtwin.codec.frame import FrameDecoder
from rmqtwin.codec.layouts.remoting import FRAME, ROCKETMQ_HEADER

SEND_V2_EXT = {
    "a": "please_rename_unique_group_name",
    "b": "TopicTest",
    "c": "TBW102",
    "d": "4",
    "e": "3",
    "f": "0",
    "g": "1700000000000",
    "h": "0",
    "i": (
        "TAGS\x01TagA\x02KEYS\x01order-1\x02UNIQ_KEY\x017F00000100002A9F0000000000000001\x02WAIT\x01true\x02"
    ),
    "j": "0",
    "k": "false",
    "m": "false",
    "n": "broker-a",
}
SEND_RESPONSE_EXT = {
    "msgId": "7F00000100002A9F0000000000000000",
    "queueId": "3",
    "queueOffset": "42",
    "transactionId": "7F00000100002A9F0000000000000001",
    "MSG_REGION": "DefaultRegion",
    "TRACE_ON": "true",
}


def _best_us(fn: Callable[[], Any], number: int, repeat: int) -> float:
    """Best of many short batches: robust against other processes sharing the CPU."""
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def _interleaved_best_us(fns: dict[str, tuple[Callable[[], Any], int]], rounds: int) -> dict[str, float]:
    """Best batch of each operation (``fn, number``) over ``rounds`` rounds that each time every one once."""
    timers = {name: (timeit.Timer(fn), number) for name, (fn, number) in fns.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(rounds):
        for name, (timer, number) in timers.items():
            best[name] = min(best[name], timer.timeit(number) / number)
    return {name: t * 1e6 for name, t in best.items()}


# --- construct path ---------------------------------------------------------------------------------


def construct_decode(raw: bytes) -> dict[str, Any]:
    frame = FRAME.parse(raw)
    if frame.serialize_type == SerializeType.ROCKETMQ:
        header = ROCKETMQ_HEADER.parse(frame.header)
        fields = {e.key: e.value for e in header.ext_fields}
        return {"header": header, "ext": fields, "body": frame.body}
    return {"header": json.loads(frame.header), "body": frame.body}


def construct_encode(cmd: RemotingCommand) -> bytes:
    if cmd.serialize_type == SerializeType.ROCKETMQ:
        header = ROCKETMQ_HEADER.build(
            {
                "code": cmd.code,
                "language": cmd.language,
                "version": cmd.version,
                "opaque": cmd.opaque,
                "flag": cmd.flag,
                "remark": cmd.remark or "",
                "ext_fields": [{"key": k, "value": v} for k, v in ext_fields_in_wire_order(cmd)],
            }
        )
    else:
        obj: dict[str, Any] = {
            "code": cmd.code,
            "flag": cmd.flag,
            "language": "JAVA",
            "opaque": cmd.opaque,
            "serializeTypeCurrentRPC": "JSON",
            "version": cmd.version,
        }
        if cmd.ext_fields is not None:
            obj["extFields"] = dict(ext_fields_in_wire_order(cmd))
        if cmd.remark is not None:
            obj["remark"] = cmd.remark
        header = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True).encode()
    return FRAME.build({"serialize_type": cmd.serialize_type, "header": header, "body": cmd.body or b""})


# --- rows ---------------------------------------------------------------------------------------------


def _row(name: str, hot_us: float, con_us: float | None, size: int | None = None) -> None:
    con = f"{con_us:11.2f}" if con_us is not None else f"{'-':>11}"
    ratio = f"{con_us / hot_us:7.1f}x" if con_us is not None else f"{'-':>8}"
    rate = ""
    if size:
        rate = f"   hot {size / hot_us:8.1f} MB/s"
        if con_us is not None:
            rate += f"   construct {size / con_us:7.1f} MB/s"
    print(f"{name:<46}{hot_us:10.2f}{con}{ratio}{rate}")


_FIXED_PART = struct.Struct(">hBhiiii")  # code, language, version, opaque, flag, remark len, map len


def _header_rows(number: int, rounds: int) -> dict[str, float]:
    """Header decode and encode: hot path, the same-round reference and construct, per command."""
    request = create_request(RequestCode.SEND_MESSAGE_V2, dict(SEND_V2_EXT), b"x" * 256, opaque=12345)
    response = create_response(request, ResponseCode.SUCCESS, ext_fields=dict(SEND_RESPONSE_EXT))
    slow_number = max(number // 20, 5)
    figures: dict[str, float] = {}
    print(f"{'header operation':<46}{'hot µs':>10}{'ref µs':>9}{'hot/ref':>9}{'constr. µs':>12}{'ratio':>8}")
    for label, st in (("JSON", SerializeType.JSON), ("binary", SerializeType.ROCKETMQ)):
        request.serialize_type = st
        response.serialize_type = st
        for what, cmd in (("SEND_MESSAGE_V2 request", request), ("SEND_MESSAGE_V2 response", response)):
            raw = encode_command(cmd)
            frame = raw[4:]
            assert decode_command(frame) == cmd
            header = frame[4 : len(frame) - len(cmd.body or b"")]
            if st == SerializeType.JSON:
                reference: Callable[[], Any] = partial(orjson.loads, header)
            else:
                reference = partial(_FIXED_PART.unpack_from, header)
            t = _interleaved_best_us(
                {
                    "ref": (reference, number),
                    "decode": (partial(decode_command, frame), number),
                    "encode": (partial(encode_command, cmd), number),
                    "construct decode": (partial(construct_decode, raw), slow_number),
                    "construct encode": (partial(construct_encode, cmd), slow_number),
                },
                rounds,
            )
            figures[f"decode {what} ({label}) us"] = t["decode"]
            for op in ("decode", "encode"):
                hot, con = t[op], t[f"construct {op}"]
                print(
                    f"{f'{op} {what} ({label})':<46}{hot:10.2f}{t['ref']:9.2f}{hot / t['ref']:8.1f}x"
                    f"{con:12.2f}{con / hot:7.1f}x"
                )
    ref_names = "orjson.loads(header) for JSON, struct.unpack_from(fixed 21 bytes) for binary"
    print(f"  ref = {ref_names}; ratio = construct / hot")
    return figures


def _typed_header_rows(number: int, rounds: int) -> dict[str, float]:
    """The typed header classes, which every request and answer passes through after the command: the
    send request's ext fields into the V1 header the broker works with, and the send answer's header
    into ext fields."""
    from rmqtwin.codec.headers import SendMessageResponseHeader, send_v2_as_v1, to_ext_fields

    answer = SendMessageResponseHeader(
        msg_id="7F00000100002A9F0000000000000000",
        queue_id=3,
        queue_offset=42,
        msg_region="DefaultRegion",
        trace_on=True,
    )
    t = _interleaved_best_us(
        {
            "typed": (partial(send_v2_as_v1, SEND_V2_EXT), number),
            "ext": (partial(to_ext_fields, answer), number),
        },
        rounds,
    )
    print(f"{'typed SEND_MESSAGE_V2 request header (from ext)':<46}{t['typed']:10.2f}")
    print(f"{'typed send answer header (to ext)':<46}{t['ext']:10.2f}")
    return {"typed send header us": t["typed"], "typed send answer to ext us": t["ext"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer iterations (smoke run)")
    parser.add_argument("--json", help="write the figures here (for run_all.py)")
    args = parser.parse_args(argv)
    number, repeat = (100, 5) if args.quick else (200, 100)

    print(f"python {sys.version.split()[0]}; best of {repeat} batches; µs per operation")
    # machine speed reference: about 0.6 µs on an idle modern x86 core
    print(f"machine reference: sum(range(100)) {_best_us(lambda: sum(range(100)), number, repeat):.2f} µs")
    print(load_note())
    figures: Figures = dict(_header_rows(number, repeat))
    figures.update(_typed_header_rows(number, repeat))
    print()
    print(f"{'operation':<46}{'hot µs':>10}{'constr. µs':>11}{'ratio':>8}")
    request = create_request(RequestCode.SEND_MESSAGE_V2, dict(SEND_V2_EXT), b"x" * 256, opaque=12345)

    # splitting a stream of such frames (64 KiB reads)
    request.serialize_type = SerializeType.JSON
    one = encode_command(request)
    stream = one * (1_048_576 // len(one))
    chunks = [stream[i : i + 65536] for i in range(0, len(stream), 65536)]

    def split() -> None:
        decoder = FrameDecoder()
        for chunk in chunks:
            decoder.feed(chunk)

    split_us = _best_us(split, 1, max(repeat // 5, 3))
    _row("FrameDecoder.feed, 1 MiB of requests", split_us, None, len(stream))

    try:
        from rmqtwin.codec.layouts.message import MESSAGE_RECORDS
        from rmqtwin.codec.message import MessageExt, decode_message_records, encode_message_record
    except ImportError as exc:  # the message module is developed separately
        print(f"pull body decode: skipped ({exc})")
        return 0
    records = []
    for i in range(32):
        msg = MessageExt(
            topic="TopicTest",
            body=bytes(range(256)) * 4,
            properties={"TAGS": "TagA", "KEYS": f"order-{i}", "UNIQ_KEY": f"7F00000100002A9F{i:016X}"},
            queue_id=3,
            queue_offset=1000 + i,
            born_timestamp=1_700_000_000_000 + i,
            store_timestamp=1_700_000_000_005 + i,
            born_host=("127.0.0.1", 50000),
            store_host=("127.0.0.1", 10911),
            commitlog_offset=1_000_000 + i * 1300,
        )
        records.append(encode_message_record(msg))
    body = b"".join(records)
    assert len(decode_message_records(body)) == 32
    pull_us = _best_us(lambda: decode_message_records(body), 5, max(repeat // 2, 3))
    _row(
        f"decode pull body, 32 msgs ({len(body)} B)",
        pull_us,
        _best_us(lambda: MESSAGE_RECORDS.parse(body), 1, max(repeat // 10, 3)),
        len(body),
    )
    figures["pull body MB/s"] = len(body) / pull_us
    write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
