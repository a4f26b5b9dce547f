"""``rmqtwin capture synth``: a capture of realistic synthetic traffic, encoded by the codec.

Producers (route queries, heartbeats, SEND_MESSAGE_V2 with an occasional batch or a refused send),
push consumers (long-polling PULL_MESSAGE answered with the stored records, or PULL_NOT_FOUND after
the suspend time, and oneway offset commits), on namesrv and broker connections, in both header
serializations. Deterministic for a seed; for benchmarks and tests of the readers.
"""

from __future__ import annotations

import heapq
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from rmqtwin.codec.codes import RequestCode, ResponseCode, SerializeType
from rmqtwin.codec.command import RemotingCommand, create_request, create_response, encode_command
from rmqtwin.codec.message import (
    MessageConst,
    MessageExt,
    create_offset_msg_id,
    encode_batch,
    encode_message_record,
    properties_to_string,
)
from rmqtwin.proxy.capture import (
    DIR_TO_CLIENT,
    DIR_TO_SERVER,
    REC_OPEN,
    CaptureWriter,
    Endpoint,
    event_record,
    pack_frame_records,
)

__all__ = ["SynthStats", "synthesize"]

BROKER = Endpoint("10.0.0.2", 10911)
NAMESRV = Endpoint("10.0.0.1", 9876)
WALL_BASE_NS = 1_764_000_000_000_000_000


@dataclass(slots=True)
class SynthStats:
    frames: int = 0
    connections: int = 0
    messages_sent: int = 0
    messages_delivered: int = 0


@dataclass(slots=True)
class _Conn:
    conn_id: int
    client: Endpoint
    server: Endpoint
    serialize: SerializeType
    opaque: int = 0


@dataclass(slots=True)
class _Queue:
    records: list[tuple[bytes, int]] = field(default_factory=list)  # (stored record, commitlog offset)


class _Synth:
    def __init__(self, writer: CaptureWriter, seed: int) -> None:
        self.writer = writer
        self.rng = random.Random(seed)
        self.stats = SynthStats()
        self.commitlog = 0
        self.queues: dict[tuple[str, int], _Queue] = {}
        self.events: list[tuple[int, int, object]] = []  # (mono ns, tie, action)
        self.tie = 0
        self.pool = self.rng.randbytes(1 << 16)

    def body(self, size: int) -> bytes:
        """``size`` bytes cut at a random place of a random pool: cheap, and deterministic per seed."""
        start = self.rng.randrange(len(self.pool) - size)
        return self.pool[start : start + size]

    def at(self, when: int, action: object) -> None:
        self.tie += 1
        heapq.heappush(self.events, (when, self.tie, action))

    def open(self, client_n: int, server: Endpoint, serialize: SerializeType, now: int) -> _Conn:
        self.stats.connections += 1
        conn = _Conn(
            self.stats.connections,
            Endpoint(f"10.0.1.{client_n % 250 + 1}", 40000 + client_n),
            server,
            serialize,
        )
        kind = "namesrv" if server is NAMESRV else "broker"
        self.writer.write(
            event_record(
                REC_OPEN,
                mono_ns=now,
                wall_ns=WALL_BASE_NS + now,
                conn_id=conn.conn_id,
                client=conn.client,
                server=server,
                data=f'{{"kind":"{kind}","upstream":"{server}"}}'.encode(),
            )
        )
        return conn

    def frame(self, conn: _Conn, direction: int, cmd: RemotingCommand, now: int) -> None:
        head, data = pack_frame_records(
            direction, now, WALL_BASE_NS + now, conn.conn_id, conn.client, conn.server, [encode_command(cmd)]
        )
        self.writer.write_packed(head, data)
        self.stats.frames += 1

    def request(
        self,
        conn: _Conn,
        code: int,
        ext: dict[str, str],
        body: bytes | None,
        now: int,
        *,
        oneway: bool = False,
    ) -> RemotingCommand:
        conn.opaque += 1
        req = create_request(
            code, ext, body, opaque=conn.opaque, oneway=oneway, serialize_type=conn.serialize
        )
        self.frame(conn, DIR_TO_SERVER, req, now)
        return req

    def respond(
        self,
        conn: _Conn,
        req: RemotingCommand,
        code: int,
        now: int,
        *,
        remark: str | None = None,
        ext: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> None:
        resp = create_response(req, code, remark, ext, body)
        resp.serialize_type = conn.serialize
        self.frame(conn, DIR_TO_CLIENT, resp, now)

    # ---- clients

    def route_queries(self, ns: _Conn, topic: str) -> Callable[[int], None]:
        """A client's GET_ROUTEINFO_BY_TOPIC every 30 s on its namesrv connection."""

        def route(now: int) -> None:
            req = self.request(ns, RequestCode.GET_ROUTEINFO_BY_TOPIC, {"topic": topic}, None, now)
            self.respond(
                ns,
                req,
                ResponseCode.SUCCESS,
                now + self.rng.randint(80_000, 400_000),
                body=b'{"brokerDatas":[],"queueDatas":[]}',
            )
            self.at(now + 30_000_000_000, route)

        return route

    def producer(self, n: int, topic: str, group: str, start: int) -> None:
        ser = SerializeType.ROCKETMQ if n % 3 == 0 else SerializeType.JSON
        ns = self.open(n, NAMESRV, ser, start)
        broker = self.open(n, BROKER, ser, start + 1000)
        rng = self.rng

        def heartbeat(now: int) -> None:
            body = f'{{"clientID":"10.0.1.{n}@{n}","producerDataSet":[{{"groupName":"{group}"}}]}}'.encode()
            req = self.request(broker, RequestCode.HEART_BEAT, {}, body, now)
            self.respond(broker, req, ResponseCode.SUCCESS, now + rng.randint(100_000, 600_000))
            self.at(now + 30_000_000_000, heartbeat)

        def send(now: int) -> None:
            queue_id = rng.randrange(4)
            batch = rng.random() < 0.05
            msgs = []
            for _ in range(rng.randint(2, 5) if batch else 1):
                self.stats.messages_sent += 1
                msgs.append(
                    MessageExt(
                        topic=topic,
                        body=self.body(rng.choice((64, 200, 1024, 4096))),
                        properties={
                            MessageConst.PROPERTY_TAGS: rng.choice(("TagA", "TagB")),
                            MessageConst.PROPERTY_KEYS: f"k{self.stats.messages_sent}",
                            MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX: (
                                f"0A000101{n:08X}{self.stats.messages_sent:016X}"
                            ),
                        },
                    )
                )
            ext = {
                "a": group,
                "b": topic,
                "c": "TBW102",
                "d": "4",
                "e": str(queue_id),
                "f": "0",
                "g": str(WALL_BASE_NS // 1_000_000 + now // 1_000_000),
                "h": "0",
                "j": "0",
                "k": "false",
                "m": "true" if batch else "false",
            }
            if batch:
                body = encode_batch(msgs)
                code = RequestCode.SEND_BATCH_MESSAGE
            else:
                ext["i"] = properties_to_string(msgs[0].properties, trailing_separator=False)
                body = msgs[0].body
                code = RequestCode.SEND_MESSAGE_V2
            req = self.request(broker, code, ext, body, now)
            done = now + int(rng.lognormvariate(14, 0.6))
            if rng.random() < 0.01:
                self.respond(
                    broker,
                    req,
                    ResponseCode.TOPIC_NOT_EXIST,
                    done,
                    remark=f"topic[{topic}] not exist, apply first please!",
                )
            else:
                q = self.queues.setdefault((topic, queue_id), _Queue())
                first = len(q.records)
                ids = []
                for m in msgs:
                    m.queue_id = queue_id
                    m.queue_offset = len(q.records)
                    m.commitlog_offset = self.commitlog
                    m.store_host = ("10.0.0.2", 10911)
                    m.born_host = (broker.client.host, broker.client.port)
                    m.born_timestamp = m.store_timestamp = WALL_BASE_NS // 1_000_000 + now // 1_000_000
                    record = encode_message_record(m)
                    q.records.append((record, self.commitlog))
                    ids.append(create_offset_msg_id(m.store_host, self.commitlog))
                    self.commitlog += len(record)
                self.respond(
                    broker,
                    req,
                    ResponseCode.SUCCESS,
                    done,
                    ext={"msgId": ",".join(ids), "queueId": str(queue_id), "queueOffset": str(first)},
                )
            self.at(now + rng.randint(2_000_000, 20_000_000), send)

        self.at(start + 2000, self.route_queries(ns, topic))
        self.at(start + 3000, heartbeat)
        self.at(start + 5_000_000, send)

    def consumer(self, n: int, topic: str, group: str, start: int) -> None:
        ser = SerializeType.ROCKETMQ if n % 2 == 0 else SerializeType.JSON
        ns = self.open(n, NAMESRV, ser, start)
        broker = self.open(n, BROKER, ser, start + 1000)
        rng = self.rng
        offsets = dict.fromkeys(range(4), 0)

        def pull(queue_id: int) -> object:
            def run(now: int) -> None:
                q = self.queues.setdefault((topic, queue_id), _Queue())
                offset = offsets[queue_id]
                ext = {
                    "consumerGroup": group,
                    "topic": topic,
                    "queueId": str(queue_id),
                    "queueOffset": str(offset),
                    "maxMsgNums": "32",
                    "sysFlag": "2",
                    "commitOffset": "0",
                    "suspendTimeoutMillis": "15000",
                    "subVersion": "0",
                    "expressionType": "TAG",
                }
                req = self.request(broker, RequestCode.PULL_MESSAGE, ext, None, now)
                available = q.records[offset : offset + 32]
                if available:
                    done = now + int(rng.lognormvariate(13.5, 0.5))
                    offsets[queue_id] = offset + len(available)
                    self.stats.messages_delivered += len(available)
                    self.respond(
                        broker,
                        req,
                        ResponseCode.SUCCESS,
                        done,
                        ext={
                            "suggestWhichBrokerId": "0",
                            "nextBeginOffset": str(offsets[queue_id]),
                            "minOffset": "0",
                            "maxOffset": str(len(q.records)),
                        },
                        body=b"".join(r for r, _ in available),
                    )
                    self.at(done + 1000, run)
                    if rng.random() < 0.2:
                        self.request(
                            broker,
                            RequestCode.UPDATE_CONSUMER_OFFSET,
                            {
                                "consumerGroup": group,
                                "topic": topic,
                                "queueId": str(queue_id),
                                "commitOffset": str(offsets[queue_id]),
                            },
                            None,
                            done + 2000,
                            oneway=True,
                        )
                else:
                    done = now + rng.randint(50_000_000, 500_000_000)  # a long poll, held by the broker
                    self.respond(
                        broker,
                        req,
                        ResponseCode.PULL_NOT_FOUND,
                        done,
                        remark="no new message",
                        ext={
                            "suggestWhichBrokerId": "0",
                            "nextBeginOffset": str(offset),
                            "minOffset": "0",
                            "maxOffset": str(len(q.records)),
                        },
                    )
                    self.at(done + 1000, run)

            return run

        self.at(start + 2000, self.route_queries(ns, topic))
        for queue_id in range(4):
            self.at(start + 10_000_000 + queue_id, pull(queue_id))

    def run(self, frames: int, progress: Callable[[int], None] | None = None, every: int = 100_000) -> None:
        due = every
        while self.events and self.stats.frames < frames:
            now, _, action = heapq.heappop(self.events)
            action(now)  # type: ignore[operator]
            if progress is not None and self.stats.frames >= due:
                progress(self.stats.frames)
                due += every


def synthesize(
    out: str | os.PathLike[str],
    *,
    frames: int = 100_000,
    seed: int = 1,
    producers: int = 8,
    consumers: int = 4,
    rotate_bytes: int = 256 * 1024 * 1024,
    progress: Callable[[int], None] | None = None,
) -> SynthStats:
    """Write about ``frames`` frames of synthetic traffic to the capture ``out`` (responses still due
    at the cut are not written: those requests end unanswered, as in a capture stopped mid-flight);
    ``progress`` is called with the frame count every 100,000 frames."""
    with CaptureWriter(
        out,
        rotate_bytes=rotate_bytes,
        metadata={"tool": "rmqtwin capture synth", "seed": seed},
        wall_ns=WALL_BASE_NS,
    ) as writer:
        synth = _Synth(writer, seed)
        for i in range(producers):
            synth.producer(i + 1, f"Topic{i % 3}", f"ProducerGroup{i % 2}", i * 1_000_000)
        for i in range(consumers):
            synth.consumer(100 + i, f"Topic{i % 3}", f"ConsumerGroup{i % 2}", i * 1_000_000)
        synth.run(frames, progress)
    return synth.stats
