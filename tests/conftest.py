"""Suite-wide fixtures: each area's pytest plugin is loaded when that area provides one."""

from __future__ import annotations

import importlib.util

_OPTIONAL_PLUGINS = ("rmqtwin.conformance.pytest_plugin",)

pytest_plugins = [name for name in _OPTIONAL_PLUGINS if importlib.util.find_spec(name) is not None]
