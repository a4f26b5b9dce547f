"""The one ``rmqtwin`` command line.

Each area contributes its own subcommands through a ``cli`` module with a
``register(subparsers)`` function, so this file never grows with the features. Those modules
must import cheaply: heavy imports (Twisted reactor, pyspark, scapy) belong inside handlers.
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from rmqtwin import __version__

SUBCOMMAND_MODULES = (
    "rmqtwin.fakes.cli",
    "rmqtwin.store_mirror.cli",
    "rmqtwin.proxy.cli",
    "rmqtwin.conformance.cli",
    "rmqtwin.spark.cli",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rmqtwin", description="A Python/Twisted twin of Apache RocketMQ.")
    parser.add_argument("--version", action="version", version=f"rmqtwin {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:  # that area has no commands yet
                continue
            raise
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    return int(handler(args) or 0)
