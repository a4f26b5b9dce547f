"""Which request codes a broker and a name server serve: every known code sent once, without a header.

Apache RocketMQ answers a code it has no processor for with REQUEST_CODE_NOT_SUPPORTED (3) and the
remark `` request type N not supported`` (the broker's ``AdminBrokerProcessor`` default, 4.9.7 and
5.5.0; the 5.5.0 name server's ``DefaultRequestProcessor``), except the 4.9.7 name server, which
answers nothing at all. Any other answer (an NPE over the missing header, an error of its own,
SUCCESS) means a processor took the request. :func:`probe` sends every ``RequestCode`` on a fresh
connection each and records the answer; ``python -m rmqtwin.conformance.request_codes real-4.9`` (or
``real-5``, or ``NAMESRV:PORT BROKER:PORT``) probes a fresh real cluster and writes the table that
``docs/coverage.md`` is generated from (``conformance/data/request-codes-<line>.json``).

Probe only a cluster of its own: without a header most admin requests fail, but some act
(TRIGGER_DELETE_FILES, WIPE_WRITE_PERM_OF_BROKER of a null name, CLEAN_BROKER_DATA ...).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from rmqtwin.codec.codes import CURRENT_VERSION_4, CURRENT_VERSION_5, RequestCode
from rmqtwin.codec.command import create_request
from rmqtwin.probe import invoke_sync

__all__ = [
    "DATA_DIR",
    "CodeAnswer",
    "load_real",
    "not_supported_remark",
    "probe",
    "probe_code",
]

DATA_DIR = Path(__file__).resolve().parent / "data"
ANSWER_TIMEOUT = 4.0


def not_supported_remark(code: int) -> str:
    """The remark of Java's ``getUnknownCmdResponse`` / ``NettyRemotingAbstract`` for code ``code``."""
    return f" request type {code} not supported"


@dataclass(frozen=True, slots=True)
class CodeAnswer:
    """What one code got: the answer's code and remark, or ``None`` (no answer before the timeout)."""

    code: int | None
    remark: str | None

    @property
    def verdict(self) -> str:
        """``handled``, ``not supported`` or ``no answer``."""
        if self.code is None:
            return "no answer"
        return "not supported" if self.code == 3 else "handled"

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "remark": self.remark}


def probe_code(addr: str, code: int, *, version: int, timeout: float = ANSWER_TIMEOUT) -> CodeAnswer:
    """Send ``code`` without header or body on a fresh connection and wait for its answer."""
    try:
        answer = invoke_sync(addr, create_request(code, version=version), timeout)
    except OSError:  # timed out (no answer), closed or reset
        return CodeAnswer(None, None)
    return CodeAnswer(int(answer.code), answer.remark)


def probe(
    addr: str, codes: Iterable[int] | None = None, *, version: int = CURRENT_VERSION_4, workers: int = 16
) -> dict[int, CodeAnswer]:
    """Every code (default: every ``RequestCode``) against ``addr``, several at a time."""
    wanted = sorted(int(c) for c in (codes if codes is not None else RequestCode))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        answers = list(pool.map(lambda c: probe_code(addr, c, version=version), wanted))
    return dict(zip(wanted, answers, strict=True))


def load_real(line: str) -> dict[str, dict[int, CodeAnswer]]:
    """The checked-in probe of real ``line`` ("4.9" or "5"): ``{"broker": ..., "namesrv": ...}``."""
    data = json.loads((DATA_DIR / f"request-codes-{line}.json").read_text(encoding="utf-8"))
    return {
        server: {int(code): CodeAnswer(a["code"], a["remark"]) for code, a in data[server].items()}
        for server in ("broker", "namesrv")
    }


def _write(line: str, release: str, broker: dict[int, CodeAnswer], namesrv: dict[int, CodeAnswer]) -> Path:
    DATA_DIR.mkdir(exist_ok=True)
    out = DATA_DIR / f"request-codes-{line}.json"
    data = {
        "release": release,
        "how": "python -m rmqtwin.conformance.request_codes real-" + line,
        "broker": {str(c): a.to_json() for c, a in broker.items()},
        "namesrv": {str(c): a.to_json() for c, a in namesrv.items()},
    }
    out.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", help="real-4.9, real-5 (a fresh cluster is started) or NAMESRV:PORT")
    parser.add_argument("broker", nargs="?", help="BROKER:PORT with a NAMESRV:PORT target")
    parser.add_argument("--client", default="4", choices=("4", "5"), help="request version (409 / 513)")
    args = parser.parse_args(argv)
    version = CURRENT_VERSION_5 if args.client == "5" else CURRENT_VERSION_4
    if args.target.startswith("real-"):
        from rmqtwin.conformance.launcher import RealRocketMQ, resolve_version

        resolved = resolve_version(args.target.removeprefix("real-"))
        with RealRocketMQ(resolved) as rmq:
            print(f"probing real {resolved.server} ...", file=sys.stderr)
            broker = probe(rmq.broker_addr, version=version)
            namesrv = probe(rmq.namesrv_addr, version=version)
        print(f"wrote {_write(resolved.line, resolved.server, broker, namesrv)}", file=sys.stderr)
        return 0
    if args.broker is None:
        parser.error("NAMESRV:PORT needs BROKER:PORT too")
    table = {
        "broker": {c: a.to_json() for c, a in probe(args.broker, version=version).items()},
        "namesrv": {c: a.to_json() for c, a in probe(args.target, version=version).items()},
    }
    json.dump(table, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
