"""Request-code dispatch shared by the name server and the broker.

Each server owns one :class:`Dispatcher`: a table from request code to handler. A handler gets the
:class:`Channel` the request came in on and the request, and returns the response, ``None`` (no
answer now: oneway, or parked like a long-polling pull that answers later through
``channel.send_response``), or a Deferred of either. Unknown codes and handler exceptions are
answered the way Apache RocketMQ's ``NettyRemotingAbstract`` answers them.
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeAlias, TypeVar

from twisted.internet.defer import Deferred
from twisted.logger import Logger
from twisted.python.failure import Failure

from rmqtwin.codec.codes import ResponseCode
from rmqtwin.codec.command import RemotingCommand
from rmqtwin.codec.errors import HeaderFieldError
from rmqtwin.codec.headers import (
    CommandCustomHeader,
    from_ext_fields,
    header_fields,
    to_ext_fields,
)

HandlerResult: TypeAlias = "RemotingCommand | Deferred[RemotingCommand | None] | None"


class Channel(Protocol):
    """What a handler may do with the connection a request arrived on."""

    @property
    def remote_addr(self) -> str: ...

    @property
    def local_addr(self) -> str: ...

    @property
    def is_active(self) -> bool: ...

    def send_response(self, request: RemotingCommand, response: RemotingCommand) -> None: ...

    def send_oneway(self, request: RemotingCommand) -> None: ...

    def invoke(self, request: RemotingCommand, timeout: float) -> Deferred[RemotingCommand]: ...

    def close(self) -> None: ...


class RequestHandler(Protocol):
    """Anything that answers requests: a :class:`Dispatcher`, or a proxy to one."""

    def dispatch(self, channel: Channel, request: RemotingCommand) -> Any: ...


H = TypeVar("H", bound=CommandCustomHeader)
T = TypeVar("T")
Handler: TypeAlias = Callable[["Channel", "RemotingCommand"], Any]
BeforeDispatch: TypeAlias = Callable[["Channel", "RemotingCommand"], HandlerResult]

log = Logger(namespace="rmqtwin.fakes")


NOT_SET_REMARK = "not set any response code"
"""The remark of Java's ``RemotingCommand.createResponseCommand(null)``: a handler that only sets the
code afterwards (``updateAndCreateTopic`` on 4.9.7 and 5.5.0) answers SUCCESS with this remark."""


def response(
    code: int = ResponseCode.SUCCESS,
    remark: str | None = None,
    ext_fields: CommandCustomHeader | Mapping[str, Any] | None = None,
    body: bytes | None = None,
) -> RemotingCommand:
    """A response command; the transport fills opaque, flag and serialize type from the request.

    ``ext_fields`` is a typed response header (written by ``to_ext_fields``) or a mapping whose values
    are stringified the way ``makeCustomHeaderToNet`` does (booleans as ``true``/``false``, None dropped).
    """
    return RemotingCommand(code=int(code), remark=remark, ext_fields=_ext_map(ext_fields), body=body, flag=1)


def _ext_map(ext_fields: CommandCustomHeader | Mapping[str, Any] | None) -> dict[str, str] | None:
    if ext_fields is None:
        return None
    if isinstance(ext_fields, CommandCustomHeader):
        return to_ext_fields(ext_fields)
    return {k: _ext_str(v) for k, v in ext_fields.items() if v is not None}


def decode_header(request: RemotingCommand, cls: type[H], *, strict: bool = True) -> H:
    """The request's typed header; a missing or unparsable field raises ``HeaderFieldError``, which
    the dispatcher answers as the real broker does. ``strict=False`` leaves such fields ``None``, for
    a processor whose own checks meet the null first."""
    return from_ext_fields(cls, request.ext_fields, strict=strict)


def decode_header_fast(request: RemotingCommand, cls: type[H]) -> H:
    """Decode like a Java ``FastCodesHeader``: a number that does not parse fails at once
    (``NumberFormatException``), a missing field is left ``None`` for the processor to meet
    (``require``), so the processor's own checks that come first still answer first."""
    header = from_ext_fields(cls, request.ext_fields, strict=False)
    ext = request.ext_fields or {}
    for spec in header_fields(cls):
        text = ext.get(spec.wire)
        if text is not None and getattr(header, spec.attr) is None:
            raise HeaderFieldError.unparsable(spec.wire, text)
    return header


def require(value: T | None, wire: str) -> T:
    """A required header field at the point the Java processor unboxes or looks it up (an NPE if null)."""
    if value is None:
        raise HeaderFieldError.missing(wire)
    return value


NULL_KEY_NPE = (
    'java.lang.NullPointerException: Cannot invoke "Object.hashCode()" because "key" is null, '
    "java.base/java.util.concurrent.ConcurrentHashMap.get(ConcurrentHashMap.java:936)"
)
"""What both real lines (JDK 17) answer when a missing header field is first used as a table key."""


def require_key(value: T | None, wire: str) -> T:
    """A required header field the Java processor first looks up in a ``ConcurrentHashMap`` (an NPE
    with the JDK's message, as real 4.9.7 and 5.5.0 answer a request without it)."""
    if value is None:
        raise HeaderFieldError(f"the custom field <{wire}> is null", wire, NULL_KEY_NPE)
    return value


def request_command(
    code: int,
    ext_fields: CommandCustomHeader | Mapping[str, Any] | None = None,
    body: bytes | None = None,
    *,
    oneway: bool = False,
) -> RemotingCommand:
    """A request the server sends itself (broker → client, broker → name server)."""
    from rmqtwin.codec.command import RemotingCommand

    return RemotingCommand(
        code=int(code), ext_fields=_ext_map(ext_fields), body=body, flag=2 if oneway else 0
    )


FAQ_URL_4 = "http://rocketmq.apache.org/docs/faq/"
FAQ_URL_5 = "https://rocketmq.apache.org/docs/bestPractice/06FAQ"
"""``FAQUrl``'s links (every constant of a line is the same page): 4.9.x's and 5.x's."""


REJECT_REQUEST_REMARK = "[REJECTREQUEST]system busy, start flow control for a while"
"""What NettyRemotingAbstract answers (SYSTEM_BUSY) when a processor's ``rejectRequest`` is true."""


def host_tuple(addr: str | tuple[str, int]) -> tuple[str, int]:
    """A channel's ``host:port`` (or a decoded message's host) as the (host, port) a message stores."""
    if isinstance(addr, tuple):
        return (str(addr[0]), int(addr[1]))
    host, _, port = str(addr).rpartition(":")
    return (host.strip("[]") or "127.0.0.1", int(port or 0))


def suggest_todo(five: bool) -> str:
    """``FAQUrl.suggestTodo``: the hint the Java servers append to some remarks, linking the emulated
    line's FAQ."""
    return f"\nSee {FAQ_URL_5 if five else FAQ_URL_4} for further details."


def _ext_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class Dispatcher:
    """One server's table from request code to handler."""

    def __init__(self, name: str, *, unknown_code_answer: bool = True) -> None:
        self.name = name
        self.table: dict[int, Handler] = {}
        self.unknown_code_answer = unknown_code_answer
        self.before_dispatch: list[BeforeDispatch] = []
        self.observers: list[Callable[[RemotingCommand, RemotingCommand | None, float], None]] = []
        """Told of each request, its answer (None: no answer) and when dispatching began
        (``time.perf_counter``): metrics."""

    def register(self, code: int, handler: Handler) -> None:
        self.table[int(code)] = handler

    def add_before_dispatch(self, hook: BeforeDispatch) -> None:
        """A check every request passes before its handler, whatever its code (Java's server RPC
        hooks, such as the broker's ACL): a hook returns None, or what answers instead (a response, or
        a Deferred of one or of None for no answer)."""
        self.before_dispatch.append(hook)

    def dispatch(self, channel: Channel, request: RemotingCommand) -> HandlerResult:
        if not self.observers:
            return self._dispatch(channel, request)
        started = time.perf_counter()
        result = self._dispatch(channel, request)
        if isinstance(result, Deferred):
            return result.addCallback(self._observed, request, started)
        return self._observed(result, request, started)

    def _observed(
        self, answer: RemotingCommand | None, request: RemotingCommand, started: float
    ) -> RemotingCommand | None:
        for observer in self.observers:
            observer(request, answer, started)
        return answer

    def _dispatch(self, channel: Channel, request: RemotingCommand) -> HandlerResult:
        try:
            for hook in self.before_dispatch:
                refused = hook(channel, request)
                if refused is not None:
                    return refused
        except Exception as exc:
            return self._system_error(request, exc)
        return self.run_handler(channel, request)

    def run_handler(self, channel: Channel, request: RemotingCommand) -> HandlerResult:
        """The request's handler alone, without the before-dispatch hooks (a hook delaying it calls this)."""
        handler = self.table.get(request.code)
        if handler is None:
            if not self.unknown_code_answer:
                return None
            return response(
                ResponseCode.REQUEST_CODE_NOT_SUPPORTED, f" request type {request.code} not supported"
            )
        try:
            result = handler(channel, request)
        except Exception as exc:
            return self._system_error(request, exc)
        if isinstance(result, Deferred):

            def failed(failure: Failure) -> RemotingCommand:
                return self._system_error(request, failure.value or Exception(str(failure)))

            result.addErrback(failed)
        return result

    def _system_error(self, request: RemotingCommand, exc: BaseException) -> RemotingCommand:
        if isinstance(exc, HeaderFieldError):
            # Java leaves the field null and the processor fails on it: SYSTEM_ERROR, exception text.
            return response(exc.response_code, exc.remark)
        log.failure("{server} handler for code {code} failed", server=self.name, code=request.code)
        frame = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
        where = f"\n{frame[0].filename}:{frame[0].lineno}" if frame else ""
        return response(ResponseCode.SYSTEM_ERROR, f"{type(exc).__name__}: {exc}{where}")
