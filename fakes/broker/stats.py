"""Put/get counters behind GET_BROKER_RUNTIME_INFO and VIEW_BROKER_STATS_DATA (a small
``BrokerStatsManager``)."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable

from rmqtwin.codec.bodies import BrokerStatsData, BrokerStatsItem

TOPIC_PUT_NUMS = "TOPIC_PUT_NUMS"
GROUP_GET_NUMS = "GROUP_GET_NUMS"
BUCKET_SECONDS = 10
"""Java's StatsItem samples every 10 s for its minute figures."""
WINDOWS = (60, 3600, 86400)
"""The seconds of ``BrokerStatsData``'s minute, hour and day."""


class StatsItem:
    """One ``(statsName, statsKey)``: message counts and put/get calls in 10-second buckets, a day kept."""

    __slots__ = ("buckets",)

    def __init__(self) -> None:
        self.buckets: deque[list[int]] = deque()  # [bucket start (s), value, times]

    def add(self, now: float, value: int) -> None:
        start = int(now) // BUCKET_SECONDS * BUCKET_SECONDS
        buckets = self.buckets
        if buckets and buckets[-1][0] == start:
            buckets[-1][1] += value
            buckets[-1][2] += 1
            return
        buckets.append([start, value, 1])
        while buckets[0][0] <= start - 86400:
            buckets.popleft()

    def snapshot(self, now: float) -> BrokerStatsData:
        """``BrokerStatsData``: sum, tps (per second over the window) and avgpt (value per call) of the
        last minute, hour and day. Java samples the running totals (every 10 s, 10 min, 1 h), so its
        figures trail these by up to one sampling period."""
        items: list[BrokerStatsItem] = []
        for seconds in WINDOWS:
            total = times = 0
            for start, value, calls in self.buckets:
                if start > now - seconds:
                    total += value
                    times += calls
            items.append(
                BrokerStatsItem(sum=total, tps=total / seconds, avgpt=total / times if times else 0.0)
            )
        minute, hour, day = items
        return BrokerStatsData(stats_minute=minute, stats_hour=hour, stats_day=day)


class BrokerStats:
    """Totals since start plus a 60-second window for the TPS figures clusterList prints."""

    def __init__(self, now: Callable[[], float]) -> None:
        self.now = now
        self.boot = now()
        self.put_total = 0
        self.replicated_total = 0
        """Records a slave's reput dispatched (with put_total, the store's ``putMessageTimesTotal``)."""
        self.get_total = 0
        self.topic_put: dict[str, int] = defaultdict(int)
        self._put_window: deque[tuple[float, int]] = deque()
        self._get_window: deque[tuple[float, int]] = deque()
        self.items: dict[tuple[str, str], StatsItem] = {}

    def _item(self, name: str, key: str) -> StatsItem:
        item = self.items.get((name, key))
        if item is None:
            item = self.items[(name, key)] = StatsItem()
        return item

    def stats_data(self, name: str, key: str) -> BrokerStatsData | None:
        """VIEW_BROKER_STATS_DATA's body for an item, None when nothing was ever counted for it."""
        item = self.items.get((name, key))
        return None if item is None else item.snapshot(self.now())

    def on_put(self, topic: str, count: int) -> None:
        self.put_total += count
        self.topic_put[topic] += count
        self._record(self._put_window, count)
        self._item(TOPIC_PUT_NUMS, topic).add(self.now(), count)

    def on_replicated(self, topic: str, count: int) -> None:
        """A record a slave's reput dispatched: 5.x counts it only in putTps (its msgPutTotalTodayNow is
        the broker's own sends); 4.9.7 as a put (``on_put``)."""
        self.replicated_total += count
        self._record(self._put_window, count)

    def on_get(self, topic: str, count: int, group: str | None = None) -> None:
        self.get_total += count
        self._record(self._get_window, count)
        if group is not None:
            self._item(GROUP_GET_NUMS, f"{topic}@{group}").add(self.now(), count)

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
