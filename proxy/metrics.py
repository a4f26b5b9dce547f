"""Prometheus metrics of the proxy and the twin (``--metrics-port``), with ``prometheus_client``.

The proxy's :class:`MetricsHook` only queues each read's frames with a timestamp (one deque append per
read); headers are decoded, requests paired with their answers and counters moved when Prometheus
scrapes, or when the queue reaches ``max_pending``. The hot path stays a few hundred nanoseconds per
read, and a proxy nobody scrapes does the work in batches.

The HTTP endpoint is a Twisted resource rendered on the reactor thread, not ``start_http_server``
(a thread would race the reactor over the queued reads).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.frame import ONEWAY_FLAG, RESPONSE_FLAG
from rmqtwin.proxy.capture import DIR_TO_SERVER, FLAG_RAW
from rmqtwin.proxy.faults import FaultEngine, FaultRule, FrameFacts
from rmqtwin.proxy.session import Command, Hook
from rmqtwin.proxy.wire import peek_summary

__all__ = [
    "LATENCY_BUCKETS",
    "MetricsHook",
    "ProxyMetrics",
    "RequestMetrics",
    "code_name",
    "metrics_site",
    "response_name",
]

LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_REQUEST_NAMES = {int(c): c.name for c in RequestCode}
_RESPONSE_NAMES = {int(c): c.name for c in ResponseCode}


def code_name(code: int) -> str:
    return _REQUEST_NAMES.get(code, str(code))


def response_name(code: int) -> str:
    return _RESPONSE_NAMES.get(code, str(code))


class RequestMetrics:
    """Requests, answers by response code and latency per request code and topic: the part the proxy
    and the twin share (``prefix`` tells them apart)."""

    def __init__(self, registry: CollectorRegistry, prefix: str) -> None:
        self.requests = Counter(f"{prefix}_requests", "Requests by request code", ["code"], registry=registry)
        self.responses = Counter(
            f"{prefix}_responses",
            "Answers by request code and response code",
            ["code", "response"],
            registry=registry,
        )
        self.latency = Histogram(
            f"{prefix}_request_latency_seconds",
            "Time from a request to its answer, by request code and topic",
            ["code", "topic"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.fault_hits = Counter(
            f"{prefix}_fault_hits", "Frames a fault rule applied to", ["rule", "effect"], registry=registry
        )
        # Each label set's child, looked up once: ``labels()`` takes a lock and formats the values on
        # every call, several times the cost of the increment (these run once per request).
        self._requests: dict[int, Counter] = {}
        self._answers: dict[tuple[int, int, str | None], tuple[Counter, Histogram]] = {}

    def request(self, code: int) -> None:
        child = self._requests.get(code)
        if child is None:
            child = self._requests[code] = self.requests.labels(code_name(code))
        child.inc()

    def answer(self, facts: FrameFacts, response_code: int, seconds: float) -> None:
        key = (facts.code, response_code, facts.topic)
        children = self._answers.get(key)
        if children is None:
            name = code_name(facts.code)
            children = self._answers[key] = (
                self.responses.labels(name, response_name(response_code)),
                self.latency.labels(name, facts.topic or ""),
            )
        children[0].inc()
        children[1].observe(seconds)

    def watch_faults(self, engine: FaultEngine) -> None:
        def hit(rule: FaultRule) -> None:
            self.fault_hits.labels(rule.name, rule.effect).inc()

        engine.on_hit.append(hit)


_Read = tuple["MetricsHook", int, int, list[bytes]]


class ProxyMetrics(Collector):
    """The proxy's metrics. ``connections()`` returns (kind, open) pairs; ``capture()`` the recorder's
    (records, bytes, early writes, errors) or None without a capture."""

    def __init__(
        self,
        connections: Callable[[], Iterable[tuple[str, int]]],
        opened: Callable[[], int],
        capture: Callable[[], tuple[int, int, int, int] | None],
        *,
        max_pending: int = 8192,
        mono_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(self)  # first: drains the queue before the counters are read
        self.common = RequestMetrics(self.registry, "rocketmq_proxy")
        self.bytes = Counter(
            "rocketmq_proxy_bytes", "Bytes forwarded, by direction", ["direction"], registry=self.registry
        )
        self._to_server = self.bytes.labels("to_server")
        self._to_client = self.bytes.labels("to_client")
        self.connections = connections
        self.opened = opened
        self.capture = capture
        self.max_pending = max_pending
        self.mono_ns = mono_ns
        self.pending: deque[_Read] = deque()

    def queue(self, item: _Read) -> None:
        self.pending.append(item)
        if len(self.pending) >= self.max_pending:
            self.drain()

    def drain(self) -> None:
        """Decode what was queued and move the counters."""
        pending = self.pending
        while pending:
            hook, stamp, direction, frames = pending.popleft()
            hook.account(stamp, direction, frames)

    def collect(self) -> Iterable[Metric]:
        self.drain()
        open_now = GaugeMetricFamily(
            "rocketmq_proxy_connections", "Open client connections, by listener kind", labels=["kind"]
        )
        for kind, count in self.connections():
            open_now.add_metric([kind], count)
        yield open_now
        yield CounterMetricFamily(
            "rocketmq_proxy_connections_opened", "Client connections accepted", self.opened()
        )
        capture = self.capture()
        if capture is not None:
            records, size, early, errors = capture
            yield CounterMetricFamily(
                "rocketmq_proxy_capture_records", "Records written to the capture", records
            )
            yield CounterMetricFamily(
                "rocketmq_proxy_capture_bytes", "Frame bytes written to the capture", size
            )
            yield CounterMetricFamily(
                "rocketmq_proxy_capture_full_backlogs", "Backlogs written before their batch was due", early
            )
            yield GaugeMetricFamily(
                "rocketmq_proxy_capture_errors", "1 once writing the capture failed", errors
            )


class MetricsHook(Hook):
    """One connection's metrics: queues reads as they pass; :meth:`account` decodes them later."""

    def __init__(self, metrics: ProxyMetrics) -> None:
        self.metrics = metrics
        self.waiting: dict[tuple[int, int], tuple[FrameFacts, int]] = {}
        """(direction of the request, opaque) -> the request and when it passed."""

    def observe(self, direction: int, frames: list[bytes], flags: int, out: list[Command]) -> None:
        if flags & FLAG_RAW:
            size = sum(len(f) for f in frames)
            (self.metrics._to_server if direction == DIR_TO_SERVER else self.metrics._to_client).inc(size)
            return
        self.metrics.queue((self, self.metrics.mono_ns(), direction, frames))

    def account(self, stamp: int, direction: int, frames: list[bytes]) -> None:
        metrics = self.metrics
        common = metrics.common
        size = 0
        to_server = direction == DIR_TO_SERVER
        for frame in frames:
            size += len(frame)
            # One header parse per frame, no copy and no ext map: a request's facts (code, topic, group)
            # or a response's summary, guessing by direction (clients mostly send requests).
            request = FrameFacts.of_request(frame) if to_server else None
            if request is None:
                summary = peek_summary(frame)
                if summary is None:
                    continue
                _, code, opaque, flag = summary
                if not flag & RESPONSE_FLAG:  # a broker's request to the client (a check-back)
                    request = FrameFacts.of_request(frame)
                    if request is None:
                        continue
            if request is not None:
                facts, opaque, flag, _ = request
                common.request(facts.code)
                if not flag & ONEWAY_FLAG:
                    self.waiting[(direction, opaque)] = (facts, stamp)
                    if len(self.waiting) > 65536:  # answers that never came
                        del self.waiting[next(iter(self.waiting))]
            else:
                asked = self.waiting.pop((direction ^ 1, opaque), None)
                if asked is not None:
                    common.answer(asked[0], code, (stamp - asked[1]) / 1e9)
        (metrics._to_server if to_server else metrics._to_client).inc(size)


class _MetricsResource(Resource):
    isLeaf = True

    def __init__(self, registry: CollectorRegistry) -> None:
        super().__init__()
        self.registry = registry

    def render_GET(self, request: Request) -> bytes:
        request.setHeader(b"content-type", b"text/plain; version=0.0.4; charset=utf-8")
        return generate_latest(self.registry)


def metrics_site(registry: CollectorRegistry) -> Site:
    """Prometheus text exposition of ``registry`` at any path (``/metrics`` by convention)."""
    site = Site(_MetricsResource(registry))
    site.noisy = False
    return site
