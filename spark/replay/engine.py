"""Replays connections against a target: one non-blocking socket loop over the sans-IO codec.

No reactor (Spark reuses Python workers, a reactor cannot restart): :mod:`selectors` over plain sockets,
:class:`~rmqtwin.codec.connection.RemotingConnection` for framing, opaques and pending requests. Each
request goes at its recorded offset ÷ speed without waiting for answers that came after it in the capture
(pipelining as recorded), but never before an answer the capture shows arriving before it was sent, on any
connection of the task (a send waits for no other send: :class:`RecordedOrder`);
at ``max`` speed a window bounds what waits per connection. Broker-initiated requests are answered as the
client answered them in the capture.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import heapq
import os
import select
import selectors
import socket
import time
from bisect import bisect_right
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, field, replace

from rmqtwin.codec.codes import RequestCode, ResponseCode, request_code_name
from rmqtwin.codec.command import JsonDialect, RemotingCommand, SerializeType, decode_command, encode_command
from rmqtwin.codec.connection import (
    RemotingConnection,
    RequestReceived,
    ResponseReceived,
    events_before_error,
)
from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.message import store_host_spans
from rmqtwin.spark.replay.compare import compare_answers, pulled_messages
from rmqtwin.spark.replay.plan import PULL_CODES, ConnectionPlan, Step, answer_queue
from rmqtwin.spark.replay.translate import ConnectionTranslator, ReplayContext, request_queue, request_topic
from rmqtwin.spark.tables import SEND_CODES

__all__ = ["CheckBacks", "QueueResult", "RecordedOrder", "RequestResult", "replay_connections", "result_rows"]

_READ_SIZE = 256 * 1024
_OUT_LIMIT = 1 << 20
_GRACE_S = 10.0
_COMPARE_SLICE_NS = 2_000_000
_COMPARE_MARGIN_NS = 500_000
_PULL_AGAIN = frozenset(
    {ResponseCode.SUCCESS, ResponseCode.PULL_NOT_FOUND, ResponseCode.PULL_RETRY_IMMEDIATELY}
)
"""Pull answers after which a pull that has fewer messages than recorded pulls again for the rest."""
_COMPARE_BACKLOG = 20_000
"""Answers waiting to be compared beyond which they are compared even when requests are due."""


@dataclass(slots=True)
class RequestResult:
    """One replayed (or not replayed) request: the Parquet row."""

    conn_id: int
    copy: int
    seq: int
    code: int
    code_name: str
    topic: str | None
    queue_id: int | None
    group: str | None
    recorded_code: int | None
    recorded_remark: str | None
    recorded_latency_ms: float | None
    replayed_code: int | None = None
    replayed_remark: str | None = None
    replayed_latency_ms: float | None = None
    scheduled_ms: float | None = None
    """When the request was due, ms after the replay's start (None at ``max`` speed)."""
    actual_ms: float | None = None
    """When it was actually issued (encoded into the connection's output), ms after the replay's start."""
    held_ms: float | None = None
    """Of its lateness, how long the target held it back once due: the target had not read what was sent
    before (the output was full) or not answered what the request waits for (recorded order, the half
    message of an END_TRANSACTION). ``actual - scheduled - held`` is the replayer's own lateness."""
    written_ms: float | None = None
    """When its last byte went into the socket, ms after the replay's start (later than ``actual_ms``
    while the target does not read)."""
    cpu_ms: float | None = None
    """The replay loop's CPU time from its last step before the request was due until it was issued:
    the replayer busy (:class:`LoopClock`)."""
    runq_ms: float | None = None
    """The time the loop waited for a core then, runnable but not running (None where the kernel does
    not tell): the machine busy, not the replayer."""
    verdict: str = "not-replayed"
    detail: str = ""
    normalisers: str = ""


class LoopClock:
    """The replay loop thread's CPU time and the time it waited, runnable, for a core (the kernel's
    ``run_delay``, ``/proc/thread-self/schedstat``), noted at each step of the loop: a late request's
    lateness is then told apart as the replayer busy, no core free for it, or neither (the loop asleep
    past the request's time). A ``pread`` and a clock read a step, about 5 µs."""

    _KEEP = 4096

    def __init__(self) -> None:
        self._fd: int | None = None
        with contextlib.suppress(OSError):
            self._fd = os.open("/proc/thread-self/schedstat", os.O_RDONLY)
        self.walls: list[int] = []
        self.cpus: list[int] = []
        self.waits: list[int] = []

    def note(self, now: int) -> None:
        """A step of the loop at ``now`` (monotonic ns)."""
        # (schedstat's own CPU figure is as of the thread's last tick, milliseconds stale; its wait is
        # current: the thread reading it is running, so its last wait has ended)
        self.cpus.append(time.thread_time_ns())
        if self._fd is not None:
            self.waits.append(int(os.pread(self._fd, 64, 0).split(maxsplit=2)[1]))
        self.walls.append(now)
        if len(self.walls) > self._KEEP:
            half = self._KEEP // 2
            del self.walls[:half], self.cpus[:half], self.waits[:half]

    def spent(self, due: int) -> tuple[float, float | None]:
        """(CPU ms, ms waiting for a core) from the last step at or before ``due`` to the last step."""
        if not self.walls:
            return 0.0, None
        i = max(0, bisect_right(self.walls, due) - 1)
        cpu = (self.cpus[-1] - self.cpus[i]) / 1e6
        return cpu, (self.waits[-1] - self.waits[i]) / 1e6 if self.waits else None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@dataclass(slots=True)
class QueueResult:
    """What one replayed consumer pulled from one queue, against what it pulled when recorded."""

    conn_id: int
    copy: int
    group: str
    topic: str
    queue_id: int
    recorded_messages: int
    replayed_messages: int
    same_bodies_in_order: bool


@dataclass(slots=True)
class _InFlight:
    step: Step
    result: RequestResult
    issued_ns: int
    uniq: str | None
    answer_queue: tuple[str, int] | None
    """The queue whose offsets the answer reports (from the recorded request: before translation)."""
    pull: _Pull | None = None
    """A pull whose recorded answer found messages: what the replay pulled towards them so far."""


@dataclass(slots=True)
class _Pull:
    """A replayed pull that is to get the ``want`` messages its recorded answer got.

    Which messages a pull finds depends on when the broker serves it against the sends racing it: a
    long-polling pull is woken when a message arrives (the twin at once, on the first; a real broker on
    its own thread, after the sends that came meanwhile), and a pull sent right after sends finds what
    was dispatched by then. So the replayed pull asks for at most ``want`` messages (``maxMsgNums``),
    and while it found fewer it pulls again from where its answer ends, long-polling as the recorded
    one did, until it has them (or an answer finds nothing more), as the consumer would; the answers
    together are compared with the recorded one."""

    want: int
    request: RemotingCommand
    """The translated request, for the follow-up pulls."""
    timeout: float
    found: list[RemotingCommand] = field(default_factory=list)
    """Its answers that found messages, in order."""
    got: int = 0
    again: int = 0
    """Follow-up pulls sent."""


@dataclass(slots=True)
class _Pulls:
    recorded: list[bytes] = field(default_factory=list)
    replayed: list[bytes] = field(default_factory=list)


def _pull_towards(step: Step, request: RemotingCommand, timeout: float) -> _Pull | None:
    """For a pull whose recorded answer found messages: ``request`` (translated) asks for no more than
    it got, and the :class:`_Pull` that gets the rest if the target finds fewer at first."""
    answer = step.answer
    if answer is None or answer.code != ResponseCode.SUCCESS:
        return None
    try:
        recorded = decode_command(answer.frame[4:])
        want = len(store_host_spans(recorded.body or b""))
    except CodecError:
        return None
    if not want or request.ext_fields is None:
        return None
    asked = request.ext_fields.get("maxMsgNums")
    if asked is None or not asked.isdigit() or int(asked) > want:
        request.ext_fields["maxMsgNums"] = str(want)
    return _Pull(want, request, timeout)


def _dialect(steps: list[Step]) -> JsonDialect:
    """The fastjson the client wrote its JSON headers with: the one that re-encodes them byte for byte."""
    for step in steps[:20]:
        cmd = decode_command(step.frame[4:])
        if cmd.serialize_type != SerializeType.JSON:
            continue
        if encode_command(cmd, JsonDialect.FASTJSON1) != step.frame:
            return JsonDialect.FASTJSON2
    return JsonDialect.FASTJSON1


def _group(cmd: RemotingCommand) -> str | None:
    return cmd.ext("consumerGroup") or cmd.ext("producerGroup") or cmd.ext("a")


def selected(only: Iterable[str], cmd: RemotingCommand) -> bool:
    """``--only``: a request whose code name, topic or group is listed (everything when none is)."""
    wanted = set(only)
    if not wanted:
        return True
    return bool({request_code_name(cmd.code), str(int(cmd.code)), request_topic(cmd), _group(cmd)} & wanted)


class RecordedOrder:
    """Happens-before as recorded, across the connections one task replays.

    A request waits until every answer the capture shows arriving before that request was sent (on any
    of these connections) has been answered, or given up, in the replay: a consumer that pulled after the
    producer's sends were acknowledged does not pull before them, however the tasks and sockets are
    scheduled. Requests the client pipelined (sent before the earlier answers came) still go out at once.
    A send waits for no other send: appends of two connections to a queue race as they did when recorded
    (one connection's sends reach the target in their order anyway), and a producer whose earlier sends
    the target answers more slowly than recorded still sends on schedule, as a producer does."""

    def __init__(self) -> None:
        self._sends: list[tuple[int, int]] = []
        self._others: list[tuple[int, int]] = []
        self._open: set[int] = set()

    def expect(self, step: Step) -> None:
        heap = self._sends if step.code in SEND_CODES else self._others
        if step.answer is not None and not step.oneway:
            heapq.heappush(heap, (step.offset_ns + step.answer.latency_ns, id(step)))
            self._open.add(id(step))
        elif step.check_back is not None:  # what came after a check-back's commit waits for it too
            heapq.heappush(heap, (step.offset_ns, id(step)))
            self._open.add(id(step))

    def settle(self, step: Step) -> None:
        self._open.discard(id(step))

    def _first(self, heap: list[tuple[int, int]]) -> int | None:
        while heap and heap[0][1] not in self._open:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def allows(self, step: Step) -> bool:
        for heap in (self._others,) if step.code in SEND_CODES else (self._others, self._sends):
            first = self._first(heap)
            if first is not None and first < step.offset_ns:
                return False
        return True


class CheckBacks:
    """The client's END_TRANSACTIONs that answered CHECK_TRANSACTION_STATE, by recorded UNIQ_KEY, across
    the connections of one ``--scale`` copy: sent when the target checks the replayed half message (on
    the connection the check came on, as the client answers), whenever that is."""

    def __init__(self) -> None:
        self.waiting: dict[str, deque[tuple[_Replayed, Step]]] = defaultdict(deque)
        self.minted: dict[str, str] = {}
        """UNIQ_KEY minted by ``--new-ids`` → the recorded one."""

    def add(self, uniq: str, owner: _Replayed, step: Step) -> None:
        self.waiting[uniq].append((owner, step))

    def take(self, replayed_uniq: str) -> tuple[_Replayed, Step] | None:
        queue = self.waiting.get(self.minted.get(replayed_uniq, replayed_uniq))
        return queue.popleft() if queue else None

    def discard(self, step: Step) -> None:
        if step.check_back is not None:
            queue = self.waiting.get(step.check_back)
            if queue:
                self.waiting[step.check_back] = deque(e for e in queue if e[1] is not step)


class _Replayed:
    """One connection being replayed."""

    def __init__(
        self,
        plan: ConnectionPlan,
        ctx: ReplayContext,
        only: tuple[str, ...],
        order: RecordedOrder,
        checks: CheckBacks | None = None,
    ) -> None:
        self.plan = plan
        self.order = order
        self.checks = checks if checks is not None else CheckBacks()
        self.check_backs: dict[int, int | None] = {}
        """id of a check-back step not sent yet → since when it waits for the target's check (ns, None
        before its turn)."""
        for step in plan.steps:
            order.expect(step)
            if step.check_back is not None and selected(only, decode_command(step.frame[4:])):
                self.checks.add(step.check_back, self, step)
                self.check_backs[id(step)] = None
        self.ctx = ctx
        self.only = only
        self.translator = ConnectionTranslator(ctx, plan.broker_name, plan.copy)
        self.codec = RemotingConnection(json_dialect=_dialect(plan.steps), first_opaque=1)
        self.out = bytearray()
        self.queued = 0
        """Bytes put into ``out`` since the start; ``written`` of them went into the socket."""
        self.written = 0
        self.writing: deque[tuple[int, RequestResult]] = deque()
        """(``queued`` after its last byte, result) of the requests whose bytes are not all written yet."""
        self.stalled_since = 0
        """When the socket last took bytes of ``out`` (or ``out`` last filled from empty)."""
        self.stalls: list[list[int]] = []
        """[since, until] (until -1: still) of each time the target held the next request back (the
        output full, or an answer it waits for) since the schedule was last caught up with."""
        self.next = 0
        self.inflight: dict[int, _InFlight] = {}
        self.to_compare: deque[tuple[_InFlight, RemotingCommand]] = deque()
        """Answers not compared with their recordings yet (:meth:`compare_pending`)."""
        self.results: list[RequestResult] = []
        self.answer_index: dict[int, int] = defaultdict(int)
        self.broker_requests: dict[str, int] = defaultdict(int)
        self.pulls: dict[tuple[str, str, int], _Pulls] = defaultdict(_Pulls)
        self.checked: set[int] = set()
        """ids of check-back steps sent on a check before their turn came."""
        self.failed: str | None = None
        self.start = 0
        self.connected = False
        self.mask = 0
        """The selector events registered for the socket."""
        self.sock: socket.socket | None = None
        self.sel: selectors.BaseSelector | None = None
        self.clock: LoopClock | None = None

    def target(self) -> str:
        if self.plan.kind == "namesrv":
            return self.ctx.namesrv
        return self.ctx.brokers[self.plan.broker_name or ""]

    # --- schedule ----------------------------------------------------------------------------------

    def due_ns(self, step: Step) -> int | None:
        return None if self.ctx.speed is None else int(step.offset_ns / self.ctx.speed)

    def done(self) -> bool:
        """Failed, or every request issued, answered and written (the last oneway requests too)."""
        return self.failed is not None or (
            self.next >= len(self.plan.steps) and not self.inflight and not self.check_backs and not self.out
        )

    def next_wake(self) -> int | None:
        """Ns after the start when the next request is due (None: nothing waits on time)."""
        if self.failed is not None or self.next >= len(self.plan.steps):
            return None
        step = self.plan.steps[self.next]
        if not self.order.allows(step):
            return None  # it waits on an answer, which arrives as a socket event
        return self.due_ns(step)

    def issue_due(self, now: int, start: int) -> None:
        if now < start:  # at max speed too: every task begins at the common start
            return
        steps = self.plan.steps
        while self.next < len(steps) and self.failed is None:
            step = steps[self.next]
            if len(self.out) >= _OUT_LIMIT or not self.order.allows(step):
                self._stalled(now)  # noted before it is due too: the loop does not wake for a request
                return  # that waits on an answer
            if self.stalls and self.stalls[-1][1] < 0:
                self.stalls[-1][1] = now
            due = self.due_ns(step)
            if due is None:
                if len(self.inflight) >= self.ctx.window:
                    return
            elif start + due > now:
                self.stalls.clear()  # caught up with the schedule
                return
            if due is not None and self.ctx.duration_s is not None and due > self.ctx.duration_s * 1e9:
                self._skip_rest("beyond --duration")
                return
            if id(step) in self.checked:  # the target checked before its turn: sent then
                self.next += 1
                continue
            if id(step) in self.check_backs:  # its turn: from now on it waits for the target's check
                self.check_backs[id(step)] = now
                self.next += 1
                continue
            cmd = decode_command(step.frame[4:])
            if self.translator.waits(cmd):
                self._stalled(now)
                return
            self.next += 1
            result = self._result(step, cmd)
            if due is not None:
                result.scheduled_ms = due / 1e6
                result.held_ms = self._held(start + due, now) / 1e6
                if self.clock is not None:
                    result.cpu_ms, result.runq_ms = self.clock.spent(start + due)
            if not selected(self.only, cmd):
                result.verdict, result.detail = "skipped", "not selected by --only"
                self.results.append(result)
                self.order.settle(step)
                continue
            where = None
            if result.topic is not None and result.queue_id is not None:
                where = answer_queue(cmd, result.topic, result.queue_id)
            uniq = self.translator.expect_send(cmd)
            self.translator.request(cmd)
            if uniq is not None and self.ctx.new_ids:
                self.checks.minted[self.translator.replayed_uniq(uniq)] = uniq
            timeout = self.ctx.answer_timeout_s
            pull = None
            if step.code in PULL_CODES:
                suspend = cmd.ext("suspendTimeoutMillis")
                timeout += int(suspend) / 1000 if suspend and suspend.isdigit() else 0
                pull = _pull_towards(step, cmd, timeout)
            self.translator.sign(cmd)
            opaque = self.codec.send_request(cmd, now=now / 1e9, timeout=timeout)
            self.enqueue(self.codec.data_to_send(), result)
            result.actual_ms = (now - start) / 1e6
            if step.oneway:
                result.verdict = "sent"
                self.results.append(result)
                self.order.settle(step)
            else:
                self.inflight[opaque] = _InFlight(step, result, now, uniq, where, pull)

    def _stalled(self, now: int) -> None:
        if not self.stalls or self.stalls[-1][1] >= 0:
            self.stalls.append([now, -1])

    def _held(self, due: int, now: int) -> int:
        """Ns of ``due`` … ``now`` during which the target held the schedule back."""
        return sum(max(0, (now if until < 0 else until) - max(since, due)) for since, until in self.stalls)

    def enqueue(self, data: bytes, result: RequestResult | None = None) -> None:
        """``data`` goes out after what waits already; ``result``'s ``written_ms`` is noted when its
        last byte is in the socket."""
        if not self.out:
            self.stalled_since = time.monotonic_ns()
        self.out += data
        self.queued += len(data)
        if result is not None:
            self.writing.append((self.queued, result))

    def wrote(self, sent: int, now: int) -> None:
        """``sent`` bytes of ``out`` went into the socket at ``now``."""
        del self.out[:sent]
        self.written += sent
        if sent:
            self.stalled_since = now
        writing = self.writing
        while writing and writing[0][0] <= self.written:
            writing.popleft()[1].written_ms = (now - self.start) / 1e6

    def _result(self, step: Step, cmd: RemotingCommand) -> RequestResult:
        answer = step.answer
        return RequestResult(
            conn_id=self.plan.conn_id,
            copy=self.plan.copy,
            seq=step.seq,
            code=step.code,
            code_name=request_code_name(step.code),
            topic=request_topic(cmd),
            queue_id=request_queue(cmd),
            group=_group(cmd),
            recorded_code=None if answer is None else answer.code,
            recorded_remark=None if answer is None else answer.remark,
            recorded_latency_ms=None if answer is None else answer.latency_ns / 1e6,
        )

    def _skip_rest(self, why: str) -> None:
        for step in self.plan.steps[: self.next]:  # reached, still waiting for the target's check
            if self.check_backs.pop(id(step), None) is not None:
                self._not_replayed(step, why)
        for step in self.plan.steps[self.next :]:
            if id(step) in self.checked:
                continue
            self.check_backs.pop(id(step), None)
            self._not_replayed(step, why)
        self.next = len(self.plan.steps)

    def _not_replayed(self, step: Step, why: str) -> None:
        self.checks.discard(step)
        result = self._result(step, decode_command(step.frame[4:]))
        result.verdict, result.detail = "not-replayed", why
        self.results.append(result)
        self.order.settle(step)

    # --- events ------------------------------------------------------------------------------------

    def received(self, data: bytes, now: int) -> None:
        try:
            events = self.codec.receive_data(data)
        except CodecError as exc:
            for event in events_before_error(exc):
                self._event(event, now)
            self.fail(f"undecodable bytes from the target: {exc}")
            return
        for event in events:
            self._event(event, now)

    def _event(self, event: RequestReceived | ResponseReceived, now: int) -> None:
        if isinstance(event, RequestReceived):
            self._broker_request(event.command, now)
            return
        flight = self.inflight.pop(event.command.opaque, None)
        if flight is None:
            return
        replayed, result, step = event.command, flight.result, flight.step
        if flight.pull is not None:
            merged = self._pulled(flight, flight.pull, replayed, now)
            if merged is None:
                return  # pulling again for the rest
            replayed = merged
        self.order.settle(step)
        result.replayed_code = int(replayed.code)
        result.replayed_remark = replayed.remark
        result.replayed_latency_ms = (now - flight.issued_ns) / 1e6
        if flight.uniq is not None:  # a half message: its END_TRANSACTION may be waiting for this
            recorded = None if step.answer is None else decode_command(step.answer.frame[4:])
            self.translator.answered_send(flight.uniq, recorded, replayed)
        self.to_compare.append((flight, replayed))

    def _pulled(
        self, flight: _InFlight, pull: _Pull, answer: RemotingCommand, now: int
    ) -> RemotingCommand | None:
        """The answers of a pull (:class:`_Pull`) put together, once it has its messages or an answer
        found no more; ``None`` while it pulls again for the rest."""
        found = 0
        if answer.code == ResponseCode.SUCCESS and answer.body:
            try:
                found = len(store_host_spans(answer.body))
            except CodecError:
                found = 0
        if found:
            pull.found.append(answer)
            pull.got += found
        next_offset = answer.ext("nextBeginOffset")
        if (
            pull.got < pull.want
            and (found or not pull.again)  # a follow-up that found nothing: no more came in its time
            and answer.code in _PULL_AGAIN
            and next_offset is not None
            and next_offset.isdigit()
            and self.failed is None
        ):
            again = replace(pull.request, ext_fields=dict(pull.request.ext_fields or {}))
            assert again.ext_fields is not None
            again.ext_fields["queueOffset"] = next_offset
            again.ext_fields["maxMsgNums"] = str(pull.want - pull.got)
            self.translator.sign(again)
            pull.again += 1
            opaque = self.codec.send_request(again, now=now / 1e9, timeout=pull.timeout)
            self.enqueue(self.codec.data_to_send())
            self.inflight[opaque] = flight
            return None
        if not pull.found or (len(pull.found) == 1 and answer is pull.found[0]):
            return answer
        last = pull.found[-1]
        return replace(last, body=b"".join(a.body or b"" for a in pull.found))

    def compare_pending(self, until_ns: int | None = None) -> None:
        """Compare answered requests with their recordings, in the order they were answered, until
        ``until_ns`` (all when None). The loop calls it when no request is due soon: comparing is most
        of a request's CPU, and a request issued late because an answer was being compared is late for
        nothing."""
        pending = self.to_compare
        while pending:
            flight, replayed = pending.popleft()
            self._compare(flight, replayed)
            if until_ns is not None and time.monotonic_ns() >= until_ns:
                return

    def _compare(self, flight: _InFlight, replayed: RemotingCommand) -> None:
        result, step = flight.result, flight.step
        if step.answer is None:
            result.verdict, result.detail = "unrecorded", "the capture has no answer to compare with"
            self.results.append(result)
            return
        recorded = decode_command(step.answer.frame[4:])
        topic, queue = result.topic, result.queue_id
        shift = None if flight.answer_queue is None else self._offset_shift(*flight.answer_queue)
        interleaved = flight.answer_queue is not None and self.ctx.interleaved(
            (self.plan.broker_name or "", *flight.answer_queue)
        )
        comparison = compare_answers(
            step.code,
            recorded,
            replayed,
            offset_shift=shift,
            client_id_free=self.translator.client_id_free,
            target_names=self.ctx.target_names,
            interleaved=interleaved,
        )
        result.verdict, result.detail = comparison.verdict, comparison.detail
        result.normalisers = ",".join(comparison.normalisers)
        if step.code in PULL_CODES and topic is not None and queue is not None:
            pulls = self.pulls[(result.group or "", topic, queue)]
            pulls.recorded += [m.body for m in pulled_messages(recorded)]
            pulls.replayed += [m.body for m in pulled_messages(replayed)]
        self.results.append(result)

    def _offset_shift(self, topic: str, queue: int) -> Callable[[int], int] | None:
        rec = self.ctx.recorded_bases.get((self.plan.broker_name or "", topic, queue))
        if rec is None:
            return None
        tgt = self.ctx.target_base(self.plan.broker_name, topic, queue, self.plan.copy)
        return lambda replayed: replayed - tgt + rec

    def _broker_request(self, cmd: RemotingCommand, now: int) -> None:
        name = request_code_name(cmd.code)
        self.broker_requests[name] += 1
        if cmd.code == RequestCode.CHECK_TRANSACTION_STATE:
            found = self.checks.take(cmd.ext("msgId") or "")
            if found is None:
                self.broker_requests[f"{name} (no recorded answer)"] += 1
                return
            owner, step = found
            owner.answer_check(step, cmd, self, now)
            return
        if cmd.is_oneway:
            return
        answers = self.plan.client_answers.get(int(cmd.code), [])
        if not answers:
            self.broker_requests[f"{name} (no recorded answer)"] += 1
            return
        index = self.answer_index[int(cmd.code)]
        self.answer_index[int(cmd.code)] = index + 1
        response = decode_command(answers[min(index, len(answers) - 1)][4:])
        if response.body:
            response.body = self.translator.with_client_ids(response.body)
        self.codec.send_response(cmd, response)
        self.enqueue(self.codec.data_to_send())

    def answer_check(self, step: Step, check: RemotingCommand, via: _Replayed, now: int) -> None:
        """Send the recorded END_TRANSACTION of ``step`` for the target's ``check`` on ``via`` (the
        connection the check came on), pointing at what the check names: the replayed half message."""
        self.check_backs.pop(id(step), None)
        if self.next <= self.plan.steps.index(step):
            self.checked.add(id(step))
        end = decode_command(step.frame[4:])
        result = self._result(step, end)
        self.translator.request(end)
        assert end.ext_fields is not None
        for name in ("commitLogOffset", "tranStateTableOffset", "msgId", "transactionId"):
            value = check.ext(name)
            if value is not None:
                end.ext_fields[name] = value
        self.translator.sign(end)
        via.codec.send_request(end, now=now / 1e9, timeout=self.ctx.answer_timeout_s)
        via.enqueue(via.codec.data_to_send(), result)
        result.actual_ms = (now - self.start) / 1e6
        result.verdict, result.detail = "sent", "on the target's CHECK_TRANSACTION_STATE"
        self.results.append(result)
        self.order.settle(step)

    def expire(self, now: int) -> None:
        for timed_out in self.codec.expire(now / 1e9):
            self._lost(timed_out.request.opaque, "no-answer", "no answer before the timeout")
        limit = int(self.ctx.answer_timeout_s * 1e9)
        if self.out and self.connected and now - self.stalled_since > limit:
            self.fail(f"{self.target()} read nothing for {self.ctx.answer_timeout_s:g} s")
            return
        if not any(since is not None for since in self.check_backs.values()):
            return  # (the loop below walks every request issued: only when a check-back waits)
        for step in self.plan.steps[: self.next]:
            since = self.check_backs.get(id(step))
            if since is not None and now - since > limit:
                del self.check_backs[id(step)]
                self._not_replayed(step, "the target sent no CHECK_TRANSACTION_STATE for it in time")

    def _lost(self, opaque: int, verdict: str, detail: str) -> None:
        flight = self.inflight.pop(opaque, None)
        if flight is not None:
            self.order.settle(flight.step)
            flight.result.verdict, flight.result.detail = verdict, detail
            self.results.append(flight.result)

    def fail(self, why: str) -> None:
        """The connection is gone: what waits fails, what was not issued is reported as not replayed."""
        if self.failed is not None:
            return
        self.failed = why
        self.codec.connection_lost()
        for opaque in list(self.inflight):
            self._lost(opaque, "failed", why)
        self._skip_rest(why)
        if self.sock is not None:
            if self.sel is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self.sel.unregister(self.sock)
            self.sock.close()
            self.sock = None

    def pulled(self) -> Iterator[QueueResult]:
        for (group, topic, queue), pulls in self.pulls.items():
            yield QueueResult(
                self.plan.conn_id,
                self.plan.copy,
                group,
                topic,
                queue,
                len(pulls.recorded),
                len(pulls.replayed),
                pulls.recorded == pulls.replayed,
            )


def replay_connections(
    plans: Iterable[ConnectionPlan],
    ctx: ReplayContext,
    *,
    start_at: Callable[[], int] | None = None,
    only: tuple[str, ...] = (),
) -> tuple[list[RequestResult], list[QueueResult], dict[str, int]]:
    """Replay ``plans`` concurrently; every request's result, what each consumer pulled per queue, and the
    broker-initiated requests seen by code name. ``start_at`` is called once the connections are opening
    and gives the wall-clock ns at which the schedule begins (now when None): the tasks of one replay
    agree on it."""
    orders: dict[int, RecordedOrder] = defaultdict(RecordedOrder)  # one per --scale copy
    checks: dict[int, CheckBacks] = defaultdict(CheckBacks)
    conns = [_Replayed(plan, ctx, only, orders[plan.copy], checks[plan.copy]) for plan in plans]
    # The collector is off while the loop runs. A full collection over what exists before (the plan's
    # steps and frames, the worker's modules: 117k objects for a 12k-request capture) took 170-480 ms
    # on the loaded machine, and every request due meanwhile went that late; with those frozen out of
    # it, the collections during a 6,000-request replay still took up to 2.9 (young), 8 (middle) and
    # 77-103 ms (full) of CPU, over what the replay keeps (its rows) and finding nothing: the loop makes
    # no reference cycles (test_the_replay_loop_leaves_nothing_for_the_collector), so what it drops is
    # freed as it goes. The collector runs again afterwards.
    gc.collect()
    gc.freeze()
    collecting = gc.isenabled()
    gc.disable()
    sel = selectors.DefaultSelector()
    clock = None if ctx.speed is None else LoopClock()  # (at max speed nothing is late)
    for conn in conns:
        conn.clock = clock
        _connect(conn, sel)
    try:
        agreed = None if start_at is None else start_at()
        now = time.monotonic_ns()
        start = now if agreed is None else now + (agreed - time.time_ns())
        for conn in conns:
            conn.start = start
        deadline_ns: int | None = None
        if ctx.duration_s is not None:
            deadline_ns = start + int((ctx.duration_s + ctx.answer_timeout_s + _GRACE_S) * 1e9)
        _loop(conns, sel, start, deadline_ns, ctx, clock=clock)
        for conn in conns:
            conn.compare_pending()
    finally:
        if collecting:
            gc.enable()
        gc.unfreeze()
        if clock is not None:
            clock.close()
        for conn in conns:
            if conn.sock is not None:
                sel.unregister(conn.sock)
                conn.sock.close()
        sel.close()
    results = [r for c in conns for r in c.results]
    queues = [q for c in conns for q in c.pulled()]
    seen: dict[str, int] = defaultdict(int)
    for c in conns:
        for name, count in c.broker_requests.items():
            seen[name] += count
    return results, queues, dict(seen)


def _connect(conn: _Replayed, sel: selectors.BaseSelector) -> None:
    try:
        host, _, port = conn.target().rpartition(":")
    except KeyError:
        conn.fail(f"no target for recorded broker {conn.plan.server} ({conn.plan.broker_name})")
        return
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn.sock = sock
    err = sock.connect_ex((host.strip("[]"), int(port)))
    if err not in (0, errno.EINPROGRESS):
        conn.fail(f"connect to {conn.target()} failed: {errno.errorcode.get(err, err)}")
        conn.sock = None
        return
    sel.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)
    conn.mask = selectors.EVENT_READ | selectors.EVENT_WRITE
    conn.sel = sel


def _loop(
    conns: list[_Replayed],
    sel: selectors.BaseSelector,
    start: int,
    deadline_ns: int | None,
    ctx: ReplayContext,
    *,
    clock: LoopClock | None,
) -> None:
    while True:
        now = time.monotonic_ns()
        if clock is not None:
            clock.note(now)
        active = [c for c in conns if not c.done()]
        if not active:
            return
        if deadline_ns is not None and now > deadline_ns:
            for conn in active:
                conn.fail("replay ended: --duration reached")
            return
        wake: int | None = start if now < start else None
        for conn in active:
            if conn.connected:
                conn.issue_due(now, start)
                _flush(conn)  # now: not after the answers are compared and the selector says writable
            conn.expire(now)
            due = conn.next_wake()
            if due is not None and (wake is None or start + due < wake):
                wake = start + due
            deadline = conn.codec.next_deadline()
            if deadline is not None and (wake is None or deadline * 1e9 < wake):
                wake = int(deadline * 1e9)
            waiting = [since for since in conn.check_backs.values() if since is not None]
            if waiting:
                given_up = min(waiting) + int(ctx.answer_timeout_s * 1e9)
                wake = given_up if wake is None else min(wake, given_up)
            if conn.sock is not None and not conn.failed:
                mask = selectors.EVENT_READ | (selectors.EVENT_WRITE if conn.out or not conn.connected else 0)
                if mask != conn.mask:
                    sel.modify(conn.sock, mask, conn)
                    conn.mask = mask
        backlog = _compare_in_slack(conns, wake)
        timeout = None if wake is None else max(0.0, (wake - time.monotonic_ns()) / 1e9)
        if backlog:
            timeout = 0.0
        if clock is not None:  # a request that falls due while the loop sleeps is timed from here
            clock.note(time.monotonic_ns())
        for key, mask in _wait(sel, timeout if timeout is not None else 1.0):
            conn = key.data
            assert isinstance(conn, _Replayed) and conn.sock is not None
            _io(conn, mask)


def _wait(sel: selectors.BaseSelector, timeout: float) -> list[tuple[selectors.SelectorKey, int]]:
    """The selector's events within ``timeout`` s, waking on time to the microsecond: epoll waits whole
    milliseconds, rounded up (a request due in 0.1 ms went out 1 ms later), so the loop waits on the
    epoll descriptor itself with :func:`select.select`, whose timeout is in microseconds."""
    if timeout > 0 and isinstance(sel, selectors.EpollSelector) and sel.fileno() < 1024:  # FD_SETSIZE
        select.select([sel.fileno()], [], [], timeout)
        timeout = 0
    return sel.select(timeout)


def _compare_in_slack(conns: list[_Replayed], wake: int | None) -> bool:
    """Compare answers while nothing is due for a while (a slice at a time, ending a margin before the
    next request is due); regardless once too many wait. Whether answers still wait."""
    now = time.monotonic_ns()
    waiting = sum(len(c.to_compare) for c in conns)
    if not waiting:
        return False
    limit = now + _COMPARE_SLICE_NS
    if wake is not None and waiting < _COMPARE_BACKLOG:
        limit = min(limit, wake - _COMPARE_MARGIN_NS)
    for conn in conns:
        if conn.to_compare and time.monotonic_ns() < limit:
            conn.compare_pending(limit)
    return any(c.to_compare for c in conns) and (
        wake is None or time.monotonic_ns() < wake - _COMPARE_MARGIN_NS
    )


def _io(conn: _Replayed, mask: int) -> None:
    sock = conn.sock
    assert sock is not None
    if not conn.connected and mask & selectors.EVENT_WRITE:
        err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            conn.fail(f"connect to {conn.target()} failed: {errno.errorcode.get(err, err)}")
            return
        conn.connected = True
    if mask & selectors.EVENT_READ:
        try:
            data = sock.recv(_READ_SIZE)
        except BlockingIOError:
            data = None
        except OSError as exc:
            conn.fail(f"connection to {conn.target()} lost: {exc}")
            return
        if data == b"":
            conn.fail(f"{conn.target()} closed the connection")
            return
        if data:
            conn.received(data, time.monotonic_ns())
    _flush(conn)


def _flush(conn: _Replayed) -> None:
    """Write what waits in the connection's output, as much of it as the socket takes now."""
    if not conn.out or not conn.connected or conn.failed is not None or conn.sock is None:
        return
    try:
        sent = conn.sock.send(conn.out)
    except BlockingIOError:
        sent = 0
    except OSError as exc:
        conn.fail(f"connection to {conn.target()} lost: {exc}")
        return
    conn.wrote(sent, time.monotonic_ns())


def result_rows(results: Iterable[RequestResult]) -> list[dict[str, object]]:
    return [asdict(r) for r in results]
