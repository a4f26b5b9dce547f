"""Helpers the tests of several areas share."""

from __future__ import annotations

from collections.abc import Container

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]
"""Scraped values by (sample name, sorted labels)."""


def scrape(registry: CollectorRegistry, families: Container[str] | None = None) -> Samples:
    """What a Prometheus scrape of ``registry`` shows, parsed back from the text format (of only the
    metric ``families`` named, if given); the ``_created`` samples, times no two registries share, are
    left out."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(generate_latest(registry).decode())
        if families is None or family.name in families
        for s in family.samples
        if not s.name.endswith("_created")
    }
