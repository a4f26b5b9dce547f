"""Message traces with the real client, side by side on rmqtwin (each line) and real 4.9.7 / 5.5.0: a
producer and a push consumer with ``enableMsgTrace`` write their trace records to a trace topic created
beforehand (``customizedTraceTopic``), and ``mqadmin queryMsgTraceById -t`` (QUERY_MESSAGE on the trace
topic by the message id) prints the Pub row and the consumer group's rows. Every assertion is a literal
the twin and the real broker must both meet.

Without ``traceTopicEnable`` on the broker nothing creates the default RMQ_SYS_TRACE_TOPIC: real 5.5.0 and
the twin as 5.5 both answer ``queryMsgTraceById`` "The topic[RMQ_SYS_TRACE_TOPIC] not matched route
info"; and a producer that shuts down at once loses its Pub record on real 4.9.7 and the twin alike
(the trace dispatcher sends asynchronously), hence ``settleMs``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest

from tests.fakes.test_java_admin import _ran, target  # noqa: F401 - the module's targets
from tests.fakes.test_java_conformance import Target

pytestmark = [pytest.mark.java, pytest.mark.slow, pytest.mark.timeout(600)]


def test_trace_records_land_and_query_msg_trace_by_id_shows_them(
    target: Target,  # noqa: F811 - the fixture imported above
    unique_name: Callable[[str], str],
) -> None:
    ns, client = target.namesrv_addr, target.client
    topic, producer_group, group = unique_name("Traced"), unique_name("TracedP"), unique_name("TracedG")
    trace_topic = unique_name("Traces")
    target.create_topic(topic, queues=2)
    target.create_topic(trace_topic, queues=1)
    traced = {"trace": True, "traceTopic": trace_topic, "settleMs": 3000}
    sent = (
        client.producer(
            ns, topic, group=producer_group, messages=[{"body": "traced", "keys": "tk"}], **traced
        )
        .check()
        .sent
    )
    msg_id = str(sent[0]["msgId"])
    consumed = client.push_consumer(ns, topic, group, expect=1, timeoutMs=60_000, **traced)
    assert consumed.check().summary["consumed"] == 1
    deadline = time.monotonic() + 60
    while True:
        shown = _ran(target.mqadmin("queryMsgTraceById", "-i", msg_id, "-t", trace_topic))
        found = [
            re.search(rf"^{kind}\s+{name}\s", shown, re.M)
            for kind, name in (("Pub", producer_group), ("Sub", group))
        ]
        if all(found) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert re.search(rf"^Pub\s+{producer_group}\s+\S+\s+[\d-]+ [\d:]+\s+\d+ms\s+success", shown, re.M), shown
    assert re.search(rf"^Sub\s+{group}\s+\S+\s+[\d-]+ [\d:]+\s+\d+ms\s+success", shown, re.M), shown
