"""Suite-wide fixtures: each area's pytest plugin is loaded when that area provides one."""

from __future__ import annotations

import importlib.util

from hypothesis import HealthCheck, settings

# No wall-clock limits in property tests (Hypothesis' 200 ms deadline, its slow-generation check): on a
# loaded 2-core machine they fail correct code. Speed is measured in benchmarks/, never in tests.
settings.register_profile("untimed", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("untimed")

_OPTIONAL_PLUGINS = ("rmqtwin.conformance.pytest_plugin",)

pytest_plugins = [name for name in _OPTIONAL_PLUGINS if importlib.util.find_spec(name) is not None]
