"""Prometheus metrics of the twin (``rmqtwin serve --metrics-port``).

Requests, answers by response code and latency per request code and topic come from an observer on
the name server's and the broker's dispatchers (the same families as the proxy's, prefixed
``rocketmq_twin``). Everything else is read when Prometheus scrapes, from plain counters kept whether
or not anyone scrapes: connections open and opened and bytes received and sent per server (the
servers' :class:`~rmqtwin.fakes.server.Traffic`), the commitlog's flush latency (the store's
:class:`~rmqtwin.store_mirror.message_store.FlushLatency`), max offsets per topic and queue, messages
stored (their sum), and consumer lag per group, topic and queue (max offset minus the committed offset).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from rmqtwin.codec.command import RemotingCommand
from rmqtwin.fakes.dispatch import Dispatcher
from rmqtwin.proxy.faults import topic_of
from rmqtwin.proxy.metrics import RequestMetrics

if TYPE_CHECKING:
    from rmqtwin.fakes.broker.controller import BrokerController
    from rmqtwin.fakes.server import RemotingServerFactory

__all__ = ["TwinMetrics"]

TOPIC_GROUP_SEPARATOR = "@"


class TwinMetrics(Collector):
    """The twin's registry; :meth:`watch` a dispatcher to count what it answers."""

    def __init__(self, broker: Callable[[], BrokerController | None]) -> None:
        self.registry = CollectorRegistry()
        self.common = RequestMetrics(self.registry, "rocketmq_twin")
        self.registry.register(self)
        self.broker = broker
        self.servers: list[tuple[str, RemotingServerFactory]] = []

    def watch(self, dispatcher: Dispatcher) -> None:
        dispatcher.observers.append(self.answered)

    def watch_server(self, name: str, factory: RemotingServerFactory) -> None:
        """Expose the connections and bytes of ``factory`` under ``server=name``."""
        self.servers.append((name, factory))

    def answered(self, request: RemotingCommand, answer: RemotingCommand | None, started: float) -> None:
        # the codes as they are (an IntEnum member hashes and compares as its int): no int() per request
        common = self.common
        code = request.code
        label_set = common.request(code, topic_of(code, request.ext_fields))
        if answer is not None:
            common.answer(label_set, answer.code, time.perf_counter() - started)

    def collect(self) -> Iterable[Metric]:
        yield from self._traffic()
        broker = self.broker()
        if broker is None:
            return
        store = broker.store
        flushes = store.flush_latency
        yield HistogramMetricFamily(
            "rocketmq_twin_flush_latency_seconds",
            "Time each commitlog flush (fsync) took",
            buckets=[
                ("+Inf" if bound == float("inf") else repr(bound), n) for bound, n in flushes.cumulative()
            ],
            sum_value=flushes.total_seconds,
        )
        max_offsets = GaugeMetricFamily(
            "rocketmq_twin_max_offset", "Max offset of each consume queue", labels=["topic", "queue"]
        )
        highest: dict[tuple[str, int], int] = {}
        for topic in list(broker.topics.topic_config_table):
            for queue_id in store.get_queue_ids(topic):
                offset = store.get_max_offset_in_queue(topic, queue_id)
                highest[(topic, queue_id)] = offset
                max_offsets.add_metric([topic, str(queue_id)], offset)
        yield max_offsets
        yield GaugeMetricFamily(
            "rocketmq_twin_messages_stored", "Messages stored (sum of the max offsets)", sum(highest.values())
        )
        lag = GaugeMetricFamily(
            "rocketmq_twin_consumer_lag",
            "Max offset minus the committed consumer offset",
            labels=["group", "topic", "queue"],
        )
        for key, queues in list(broker.offsets.offset_table.items()):
            topic, _, group = key.rpartition(TOPIC_GROUP_SEPARATOR)
            for queue_id, committed in list(queues.items()):
                top = highest.get((topic, queue_id), 0)
                lag.add_metric([group, topic, str(queue_id)], max(0, top - committed))
        yield lag

    def _traffic(self) -> Iterable[Metric]:
        open_now = GaugeMetricFamily("rocketmq_twin_connections", "Open connections", labels=["server"])
        opened = CounterMetricFamily(
            "rocketmq_twin_connections_opened", "Connections accepted", labels=["server"]
        )
        carried = CounterMetricFamily(
            "rocketmq_twin_bytes", "Bytes received and sent", labels=["server", "direction"]
        )
        for name, factory in self.servers:
            traffic = factory.traffic
            open_now.add_metric([name], len(factory.channels))
            opened.add_metric([name], traffic.opened)
            carried.add_metric([name, "received"], traffic.received)
            carried.add_metric([name, "sent"], traffic.sent)
        yield open_now
        yield opened
        yield carried
