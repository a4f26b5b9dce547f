"""Put/get counters behind GET_BROKER_RUNTIME_INFO (a small ``BrokerStatsManager``)."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable


class BrokerStats:
    """Totals since start plus a 60-second window for the TPS figures clusterList prints."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.boot = now()
        self.put_total = 0
        self.get_total = 0
        self.topic_put: dict[str, int] = defaultdict(int)
        self._put_window: deque[tuple[float, int]] = deque()
        self._get_window: deque[tuple[float, int]] = deque()

    def on_put(self, topic: str, count: int) -> None:
        self.put_total += count
        self.topic_put[topic] += count
        self._record(self._put_window, count)

    def on_get(self, topic: str, count: int) -> None:
        self.get_total += count
        self._record(self._get_window, count)

    def _record(self, window: deque[tuple[float, int]], count: int) -> None:
        """Counts per whole second (cheap on the send path)."""
        second = float(int(self.now()))
        if window and window[-1][0] == second:
            window[-1] = (second, window[-1][1] + count)
            return
        window.append((second, count))
        while window and window[0][0] < second - 60:
            window.popleft()

    def _tps(self, window: deque[tuple[float, int]], seconds: float) -> float:
        now = float(int(self.now()))
        total = sum(c for t, c in window if now - seconds < t <= now)
        return total / seconds

    def put_tps(self) -> str:
        """``putTps`` as the Java broker formats it: 10 s, 60 s and 600 s rates."""
        return f"{self._tps(self._put_window, 10):.2f} {self._tps(self._put_window, 60):.2f} 0.00"

    def get_tps(self) -> str:
        return f"{self._tps(self._get_window, 10):.2f} {self._tps(self._get_window, 60):.2f} 0.00"
