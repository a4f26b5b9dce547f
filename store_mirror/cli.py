"""``rmqtwin store dump DIR`` and ``rmqtwin store stats DIR``: read-only views of any store."""

from __future__ import annotations

import argparse
from typing import Any


def _dump(args: argparse.Namespace) -> int:
    import sys

    from rmqtwin.store_mirror.dump import dump

    try:
        return dump(args.dir, sys.stdout, as_json=args.json, topic=args.topic)
    except (FileNotFoundError, ValueError) as exc:
        print(f"rmqtwin store dump: {exc}", file=sys.stderr)
        return 1


def _stats(args: argparse.Namespace) -> int:
    import json
    import sys

    from rmqtwin.store_mirror.dump import stats

    try:
        result = stats(args.dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"rmqtwin store stats: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2, default=str))
    return 0


def register(subparsers: Any) -> None:
    store = subparsers.add_parser("store", help="inspect a commitlog store (read-only)")
    sub = store.add_subparsers(dest="store_command", metavar="STORE_COMMAND")
    dump = sub.add_parser("dump", help="topics, queues, offsets and every message of a store")
    dump.add_argument("dir", help="storePathRootDir (rmqtwin's or a real broker's)")
    dump.add_argument("--json", action="store_true", help="one JSON object per message")
    dump.add_argument("--topic", help="only this topic")
    dump.set_defaults(handler=_dump)
    stats = sub.add_parser("stats", help="file, queue, index, checkpoint and config summary as JSON")
    stats.add_argument("dir", help="storePathRootDir")
    stats.set_defaults(handler=_stats)
    store.set_defaults(handler=lambda _args: store.print_help() or 2)
