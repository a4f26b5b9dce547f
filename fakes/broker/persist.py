"""The broker's config files under ``<store>/config`` (topics.json, consumerOffset.json, ...).

Written in the fastjson dialect (bare integer keys) with the Java ``.bak`` discipline: the previous
content is kept as ``<name>.bak`` and a file that cannot be read falls back to it.
"""

from __future__ import annotations

import os
from typing import Any

from rmqtwin.codec import fastjson


class ConfigFiles:
    def __init__(self, config_dir: str) -> None:
        self.config_dir = config_dir

    def path(self, name: str) -> str:
        return os.path.join(self.config_dir, name)

    def read(self, name: str) -> dict[str, Any] | None:
        for candidate in (self.path(name), self.path(name) + ".bak"):
            try:
                with open(candidate, "rb") as fh:
                    data = fh.read()
            except FileNotFoundError:
                continue
            if not data.strip():
                continue
            try:
                obj = fastjson.loads(data)
            except Exception:
                continue
            if isinstance(obj, dict):
                return obj
        return None

    def write(self, name: str, obj: Any) -> None:
        os.makedirs(self.config_dir, exist_ok=True)
        path = self.path(name)
        data = fastjson.dumps(obj, quote_int_keys=False)
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        if os.path.exists(path):
            os.replace(path, path + ".bak")
        os.replace(tmp, path)
