"""The HTTP JSON API over a :class:`FaultEngine`, in Toxiproxy's manner, on loopback by default.

    GET    /rules              every rule, with its hits
    POST   /rules              add one (a JSON rule object); 201 with the rule, 400 with the reason
    GET    /rules/NAME         one rule
    POST   /rules/NAME         {"enabled": true|false}: toggle it
    DELETE /rules/NAME         remove it
    POST   /reset              remove every rule

Whatever a request holds, the answer is JSON and the proxy keeps running: a bad rule is a 400, an
unknown one a 404, and an unexpected failure a 500 for that request only.
"""

from __future__ import annotations

from typing import Any

import orjson
from twisted.web.resource import Resource
from twisted.web.server import Request, Site

from rmqtwin.proxy.faults import FaultEngine, RuleError

__all__ = ["FaultApi", "fault_site"]


def _reply(request: Request, status: int, payload: object) -> bytes:
    request.setResponseCode(status)
    request.setHeader(b"content-type", b"application/json")
    return orjson.dumps(payload)


class FaultApi(Resource):
    """The whole API as one resource: paths are few, and one place catches every failure."""

    isLeaf = True

    def __init__(self, engine: FaultEngine) -> None:
        super().__init__()
        self.engine = engine

    def render(self, request: Request) -> bytes:
        try:
            return self._route(request)
        except RuleError as exc:
            return _reply(request, 400, {"error": str(exc)})
        except Exception as exc:  # the API must never take the proxy down
            return _reply(request, 500, {"error": f"{type(exc).__name__}: {exc}"})

    def _body(self, request: Request) -> Any:
        raw = request.content.read() if request.content is not None else b""
        try:
            return orjson.loads(raw or b"{}")
        except orjson.JSONDecodeError as exc:
            raise RuleError(f"the body is not JSON: {exc}") from None

    def _route(self, request: Request) -> bytes:
        method = request.method
        parts = [p.decode("utf-8", "replace") for p in request.postpath or () if p]
        engine = self.engine
        if parts == ["rules"]:
            if method == b"GET":
                return _reply(request, 200, [r.to_json() for r in engine.rules.values()])
            if method == b"POST":
                return _reply(request, 201, engine.add(self._body(request)).to_json())
        elif parts == ["reset"] and method == b"POST":
            engine.reset()
            return _reply(request, 200, {"rules": 0})
        elif len(parts) == 2 and parts[0] == "rules":
            name = parts[1]
            if name not in engine.rules:
                return _reply(request, 404, {"error": f"no rule named {name!r}"})
            if method == b"GET":
                return _reply(request, 200, engine.rules[name].to_json())
            if method == b"DELETE":
                return _reply(request, 200, engine.remove(name).to_json())
            if method == b"POST":
                body = self._body(request)
                enabled = body.get("enabled") if isinstance(body, dict) else None
                if not isinstance(enabled, bool):
                    raise RuleError('a toggle is {"enabled": true} or {"enabled": false}')
                return _reply(request, 200, engine.set_enabled(name, enabled).to_json())
        return _reply(request, 404, {"error": f"no such endpoint: {method.decode()} {request.path.decode()}"})


def fault_site(engine: FaultEngine) -> Site:
    """A Site serving the API at its root (the resource is a leaf: it sees every path segment)."""
    site = Site(FaultApi(engine))
    site.noisy = False
    return site
