"""A started real broker is ready for every request the suite makes, from its first moment.

Found in CI: 4.9.7 answered GET_BROKER_RUNTIME_INFO (mqadmin brokerStatus) with SYSTEM_ERROR
``java.util.NoSuchElementException`` right after registering, because its StoreStatsService had not
taken its first sample yet. The launcher now waits for that answer; this asks at once.
"""

from __future__ import annotations

import pytest

from rmqtwin.conformance.launcher import GET_BROKER_RUNTIME_INFO, RealRocketMQ, java_available, probe

pytestmark = [
    pytest.mark.java,
    pytest.mark.real,
    pytest.mark.skipif(java_available() is not None, reason=f"needs Java 17 and Maven: {java_available()}"),
]


@pytest.mark.parametrize("line", ["real-4.9", pytest.param("real-5", marks=pytest.mark.slow)])
def test_runtime_info_answers_success_right_after_start(line: str) -> None:
    rmq = RealRocketMQ(line.removeprefix("real-")).start()
    try:
        code, remark, body = probe(rmq.broker_addr, GET_BROKER_RUNTIME_INFO)
        assert (code, remark) == (0, None)
        assert b'"putTps"' in body
    finally:
        rmq.stop(graceful=False)
