"""Prometheus metrics of the proxy and the twin (``--metrics-port``), with ``prometheus_client``.

The proxy's :class:`MetricsHook` counts each frame as it passes (from its head, read once per frame),
pairs requests with their answers by opaque, and keeps the counts as plain numbers until Prometheus
scrapes (:class:`RequestMetrics`).

The HTTP endpoint is a Twisted resource rendered on the reactor thread, not ``start_http_server``
(a thread would race the reactor over the counts).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable, Iterable
from itertools import accumulate

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.frame import ONEWAY_FLAG, RESPONSE_FLAG
from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER
from rmqtwin.proxy.faults import SHORT_NAMED, FaultEngine, FaultRule
from rmqtwin.proxy.session import Command, Heads, Hook

__all__ = [
    "LATENCY_BUCKETS",
    "LabelSet",
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


class LabelSet:
    """One (request code, topic) label set: its requests, and its answers by response code, each
    ``[seconds, then the answers per latency bucket: one per bound of LATENCY_BUCKETS, then +Inf]``
    (their sum is the answers).

    A waiting request keeps its label set, so its answer is counted with no label key built; the
    requests per code are summed over the label sets when Prometheus scrapes."""

    __slots__ = ("answers", "code", "created", "requests", "topic")

    def __init__(self, code: int, topic: str | None, created: float) -> None:
        self.code = code
        self.topic = topic
        self.created = created
        self.requests = 0
        self.answers: dict[int, list[float]] = {}


class RequestMetrics(Collector):
    """Requests, answers by response code and latency per request code and topic, and fault hits: the
    part the proxy and the twin share (``prefix`` tells them apart).

    Kept as plain ints and per-label bucket lists (one dict look-up and a few adds per request and
    answer, no lock: everything runs on the reactor thread, the scrape included), made into metric
    families only when Prometheus scrapes. prometheus_client's ``Counter.inc`` and
    ``Histogram.observe`` each take a lock and walk the buckets in Python, several times the cost.
    """

    def __init__(
        self, registry: CollectorRegistry, prefix: str, wall: Callable[[], float] = time.time
    ) -> None:
        self.prefix = prefix
        self.wall = wall
        self.labels: dict[tuple[int, str | None], LabelSet] = {}
        """(request code, topic) -> its :class:`LabelSet`."""
        self.fault_hits: dict[tuple[str, str], int] = {}
        """(rule, effect) -> frames it applied to."""
        self.created: dict[object, float] = {}
        """When each answer's and fault hit's label set was first counted (``_created`` samples)."""
        registry.register(self)

    def request(self, code: int, topic: str | None) -> LabelSet:
        """Count a request of ``code`` naming ``topic``; its label set (made at its first request)."""
        key = (code, topic)
        labels = self.labels.get(key)
        if labels is None:
            labels = self.labels[key] = LabelSet(code, topic, self.wall())
        labels.requests += 1
        return labels

    def first_answer(self, labels: LabelSet, response_code: int) -> list[float]:
        """The new slot of a label set's first answer (zero; the caller counts the answer in it)."""
        slot = labels.answers[response_code] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        self.created[(labels.code, response_code, labels.topic)] = self.wall()
        return slot

    def answer(self, labels: LabelSet, response_code: int, seconds: float) -> None:
        slot = labels.answers.get(response_code)
        if slot is None:
            slot = self.first_answer(labels, response_code)
        slot[0] += seconds
        slot[1 + bisect_left(LATENCY_BUCKETS, seconds)] += 1  # the first bound >= seconds, as ``le``

    def watch_faults(self, engine: FaultEngine) -> None:
        def hit(rule: FaultRule) -> None:
            key = (rule.name, rule.effect)
            n = self.fault_hits.get(key)
            if n is None:
                self.created[key] = self.wall()
                n = 0
            self.fault_hits[key] = n + 1

        engine.on_hit.append(hit)

    def collect(self) -> Iterable[Metric]:
        prefix, created = self.prefix, self.created
        requests = CounterMetricFamily(f"{prefix}_requests", "Requests by request code", labels=["code"])
        by_code: dict[int, tuple[int, float]] = {}
        for label_set in self.labels.values():
            n, first = by_code.get(label_set.code, (0, label_set.created))
            by_code[label_set.code] = (n + label_set.requests, min(first, label_set.created))
        for code, (n, first) in by_code.items():
            requests.add_metric([code_name(code)], n, created=first)
        yield requests
        responses = CounterMetricFamily(
            f"{prefix}_responses", "Answers by request code and response code", labels=["code", "response"]
        )
        by_response: dict[tuple[int, int], tuple[float, float]] = {}
        by_topic: dict[tuple[int, str | None], tuple[list[float], float]] = {}
        for label_set in self.labels.values():
            code, topic = label_set.code, label_set.topic
            for response_code, slot in label_set.answers.items():
                when = created[(code, response_code, topic)]
                answered, first = by_response.get((code, response_code), (0.0, when))
                by_response[(code, response_code)] = (answered + sum(slot[1:]), min(first, when))
                merged = by_topic.get((code, topic))
                if merged is None:
                    by_topic[(code, topic)] = (list(slot), when)
                else:
                    into = merged[0]
                    for i, value in enumerate(slot):
                        into[i] += value
                    by_topic[(code, topic)] = (into, min(merged[1], when))
        for (code, response_code), (answered, first) in by_response.items():
            responses.add_metric([code_name(code), response_name(response_code)], answered, created=first)
        yield responses
        latency = HistogramMetricFamily(
            f"{prefix}_request_latency_seconds",
            "Time from a request to its answer, by request code and topic",
            labels=["code", "topic"],
        )
        for (code, topic), (slot, first) in by_topic.items():
            cumulative = list(accumulate(slot[1:]))
            labels = [code_name(code), topic or ""]
            latency.add_metric(labels, list(zip(_BUCKET_TEXT, cumulative, strict=True)), sum_value=slot[0])
            # HistogramMetricFamily takes no creation time; prometheus_client's Histogram exposes one
            latency.samples.append(
                Sample(f"{latency.name}_created", dict(zip(("code", "topic"), labels, strict=True)), first)
            )
        yield latency
        hits = CounterMetricFamily(
            f"{prefix}_fault_hits", "Frames a fault rule applied to", labels=["rule", "effect"]
        )
        for (rule, effect), n in self.fault_hits.items():
            hits.add_metric([rule, effect], n, created=created[(rule, effect)])
        yield hits


_BUCKET_TEXT = [*(floatToGoString(b) for b in LATENCY_BUCKETS), "+Inf"]


class ProxyMetrics(Collector):
    """The proxy's metrics. ``connections()`` returns (kind, open) pairs; ``capture()`` the recorder's
    (records, bytes, early writes, errors) or None without a capture."""

    def __init__(
        self,
        connections: Callable[[], Iterable[tuple[str, int]]],
        opened: Callable[[], int],
        capture: Callable[[], tuple[int, int, int, int] | None],
        *,
        mono_ns: Callable[[], int] = time.monotonic_ns,
    ) -> None:
        self.registry = CollectorRegistry()
        self.common = RequestMetrics(self.registry, "rocketmq_proxy")
        self.registry.register(self)
        self.bytes = [0, 0]
        """Bytes forwarded, indexed by direction (DIR_TO_SERVER, DIR_TO_CLIENT)."""
        self.started = time.time()
        self.connections = connections
        self.opened = opened
        self.capture = capture
        self.mono_ns = mono_ns

    def collect(self) -> Iterable[Metric]:
        carried = CounterMetricFamily(
            "rocketmq_proxy_bytes", "Bytes forwarded, by direction", labels=["direction"]
        )
        carried.add_metric(["to_server"], self.bytes[DIR_TO_SERVER], created=self.started)
        carried.add_metric(["to_client"], self.bytes[DIR_TO_CLIENT], created=self.started)
        yield carried
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
    """One connection's metrics, counted as its frames pass (after they were forwarded).

    It reads each frame's :class:`~rmqtwin.proxy.wire.FrameHead`, which the session reads once per
    frame for every hook that asks (on a broker connection the msgId rewriting has read each answer's
    already). A waiting request keeps its :class:`LabelSet`, so its answer is counted with one dict
    look-up and no label key built. This runs for every frame; its cost is the heads and the dict and
    tuple work, not the interpreter (the same loop compiled with Cython was measured only 7% cheaper).
    """

    __slots__ = ("bytes", "clock", "common", "labels", "waiting")

    reads_heads = True

    def __init__(self, metrics: ProxyMetrics) -> None:
        # what observe reads for every frame, held here (one attribute load each, not a chain)
        self.common = metrics.common
        self.labels = metrics.common.labels
        self.bytes = metrics.bytes
        self.clock = metrics.mono_ns
        self.waiting: tuple[dict[int, tuple[LabelSet, int]], dict[int, tuple[LabelSet, int]]] = ({}, {})
        """By the direction of the request (DIR_TO_SERVER, DIR_TO_CLIENT: a broker's check-back), the
        requests waiting for their answer: opaque -> their label set and when they passed (ns)."""

    def observe(
        self, direction: int, frames: list[bytes], heads: Heads | None, flags: int, out: list[Command]
    ) -> None:
        self.bytes[direction] += len(frames[0]) if len(frames) == 1 else sum(map(len, frames))
        if heads is None:  # unframed chunks
            return
        stamp = self.clock()
        for head in heads:
            if head is None:
                continue
            code, flag = head.code, head.flag
            if flag & RESPONSE_FLAG:
                asked = self.waiting[direction ^ 1].pop(head.opaque, None)
                if asked is not None:
                    of, then = asked
                    seconds = (stamp - then) / 1e9
                    slot = of.answers.get(code)
                    if slot is None:
                        slot = self.common.first_answer(of, code)
                    slot[0] += seconds  # as RequestMetrics.answer
                    slot[1 + bisect_left(LATENCY_BUCKETS, seconds)] += 1
                continue
            ext = head.extFields
            if ext is None:
                topic = None
            else:
                topic = ext.topic  # as faults.topic_of
                if topic is None and code in SHORT_NAMED:
                    topic = ext.b
            label_set = self.labels.get((code, topic))  # as RequestMetrics.request
            if label_set is None:
                label_set = self.common.request(code, topic)
            else:
                label_set.requests += 1
            if not flag & ONEWAY_FLAG:
                waiting = self.waiting[direction]
                waiting[head.opaque] = (label_set, stamp)
                if len(waiting) > 65536:  # answers that never came
                    del waiting[next(iter(waiting))]


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
