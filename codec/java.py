"""Java behaviours the wire formats depend on: ``String.hashCode`` and ``HashMap`` iteration order.

Java writes ext fields and message properties from ``HashMap``s, so their order on the wire (and the
consume queue's tagsCode) can only be reproduced by modelling these two exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from operator import mul

DEFAULT_MAP_CAPACITY = 16
"""``new HashMap<>()``."""


def java_int(value: int) -> int:
    """``value`` as a Java ``int`` holds it: arithmetic wraps at 32 bits (``Integer.MAX_VALUE + 1`` is
    ``Integer.MIN_VALUE``), and the wire and the store write what Java computed."""
    value &= 0xFFFFFFFF
    return value - 0x100000000 if value & 0x80000000 else value


_POWERS_SPAN = 512
_POWERS_OF_31 = [pow(31, _POWERS_SPAN - 1 - i, 1 << 32) for i in range(_POWERS_SPAN)]
"""31^511 .. 31^0 mod 2^32: the weights of an ASCII string's characters in ``String.hashCode``."""


@lru_cache(maxsize=8192)
def java_string_hash(value: str) -> int:
    """``String.hashCode()`` (over UTF-16 code units) as a signed 32-bit int."""
    h = 0
    if value.isascii():
        data = value.encode("ascii")
        n = len(data)
        if n <= _POWERS_SPAN:
            # s[0]*31^(n-1) + ... + s[n-1] (mod 2^32), summed at C speed: the loop below, unrolled.
            h = sum(map(mul, data, _POWERS_OF_31[_POWERS_SPAN - n :])) & 0xFFFFFFFF
        else:
            for ch in data:
                h = (31 * h + ch) & 0xFFFFFFFF
    else:
        units = value.encode("utf-16-be", "surrogatepass")
        for i in range(0, len(units), 2):
            h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def _table_size(initial_capacity: int, size: int) -> int:
    n = 1
    while n < initial_capacity:  # HashMap.tableSizeFor
        n <<= 1
    while size > int(n * 0.75):  # resize() whenever ++size > threshold (load factor 0.75)
        n <<= 1
    return n


def _order_uncached(keys: tuple[str, ...], initial_capacity: int) -> tuple[str, ...]:
    mask = _table_size(initial_capacity, len(keys)) - 1

    def bucket(key: str) -> int:
        h = java_string_hash(key) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & mask

    # sorted() is stable: within a bucket entries keep insertion order, as Java's chained bins do.
    return tuple(sorted(keys, key=bucket))


_order_cached = lru_cache(maxsize=2048)(_order_uncached)


def java_hash_map_order(keys: Iterable[str], initial_capacity: int = DEFAULT_MAP_CAPACITY) -> tuple[str, ...]:
    """The iteration order of a ``HashMap<String, ?>`` filled with ``keys`` in this order.

    Models ``new HashMap<>(initial_capacity)`` growing at load factor 0.75, bucket index
    ``(h ^ (h >>> 16)) & (n - 1)``, and insertion order inside a bucket. Tree bins (8+ keys in one bucket
    of a 64+ table) are not modelled; ext fields and property maps never get there.
    """
    key_tuple = tuple(keys)
    if len(key_tuple) <= 64:
        return _order_cached(key_tuple, initial_capacity)
    return _order_uncached(key_tuple, initial_capacity)


def in_java_hash_map_order(
    mapping: Mapping[str, str], initial_capacity: int = DEFAULT_MAP_CAPACITY
) -> dict[str, str]:
    """``mapping`` reordered as a ``HashMap`` filled in the same order iterates (e.g. stored properties)."""
    return {key: mapping[key] for key in java_hash_map_order(mapping, initial_capacity)}
