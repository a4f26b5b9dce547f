"""Fault rules inside the twin: the proxy's rule engine (:mod:`rmqtwin.proxy.faults`) as a
before-dispatch hook of the name server's and the broker's dispatchers.

The same rules as on the proxy, applied where the twin answers: a request rule acts before the handler
(delays it, answers in its place, drops it, closes the connection), a response rule on what the handler
answered (delays, drops or replaces it, corrupts or duplicates the first message of a pull answer).
With no rule the hook costs one dictionary look-up per request.
"""

from __future__ import annotations

from typing import Any

from twisted.internet.defer import Deferred, maybeDeferred, succeed
from twisted.internet.task import deferLater

from rmqtwin.codec.command import RemotingCommand
from rmqtwin.fakes.dispatch import Channel, Dispatcher, HandlerResult, response
from rmqtwin.proxy.faults import BODY_EFFECTS, FaultEngine, FaultRule, FrameFacts

__all__ = ["TwinFaults", "install_faults"]


def _nothing() -> Deferred[RemotingCommand | None]:
    """No answer at all (the server sends nothing for a handler result of None)."""
    return succeed(None)


class TwinFaults:
    """One dispatcher's fault hook; ``address`` is what ``broker`` in a rule matches."""

    def __init__(self, engine: FaultEngine, dispatcher: Dispatcher, reactor: Any, address: str) -> None:
        self.engine = engine
        self.dispatcher = dispatcher
        self.reactor = reactor
        self.address = address

    def __call__(self, channel: Channel, request: RemotingCommand) -> HandlerResult:
        holding = self.engine.holding
        if not (holding["request"] or holding["response"]) or request.is_response:
            return None
        facts = FrameFacts.of(int(request.code), request.ext_fields)
        client = channel.remote_addr
        if holding["request"]:
            rule = self.engine.match("request", facts, client, self.address)
            if rule is not None:
                return self._before(rule, channel, request)
        if holding["response"] and not request.is_oneway:
            # matched against the handler's answer (its code decides whether a pull answer has a body)
            answer: Deferred[RemotingCommand | None] = maybeDeferred(self._handler, channel, request)
            return answer.addCallback(self._answered, channel, facts, client)
        return None

    def _answered(
        self, answer: RemotingCommand | None, channel: Channel, facts: FrameFacts, client: str
    ) -> Any:
        if answer is None:
            return None
        rule = self.engine.match("response", facts, client, self.address, answer_code=int(answer.code))
        return answer if rule is None else self._after(answer, rule, channel, facts)

    def _handler(self, channel: Channel, request: RemotingCommand) -> Any:
        """The request's own handler (a result or a Deferred of one: either chains into a Deferred)."""
        return self.dispatcher.run_handler(channel, request)

    def _before(self, rule: FaultRule, channel: Channel, request: RemotingCommand) -> HandlerResult:
        effect = rule.effect
        if effect in ("latency", "bandwidth"):
            if effect == "latency":
                seconds = rule.latency_seconds()
            else:
                seconds = (len(request.body or b"") + 200) * 8 / (rule.kbps * 1000)
            return deferLater(self.reactor, seconds, self._handler, channel, request)
        if effect == "answer" and not request.is_oneway:
            return response(rule.answer_code, self._remark(rule))
        if effect in ("close", "reset"):
            _close(channel, abort=effect == "reset")
        return _nothing()

    def _after(self, answer: RemotingCommand, rule: FaultRule, channel: Channel, facts: FrameFacts) -> Any:
        effect = rule.effect
        if effect == "latency":
            return deferLater(self.reactor, rule.latency_seconds(), lambda: answer)
        if effect == "bandwidth":
            seconds = (len(answer.body or b"") + 200) * 8 / (rule.kbps * 1000)
            return deferLater(self.reactor, seconds, lambda: answer)
        if effect == "drop":
            return None
        if effect == "answer":
            return response(rule.answer_code, self._remark(rule))
        if effect in ("close", "reset"):
            _close(channel, abort=effect == "reset")
            return None
        if answer.body:  # a successful pull answer (FaultEngine.match)
            changed = BODY_EFFECTS[effect](answer.body)
            if changed is not None:
                answer.body = changed
        return answer

    @staticmethod
    def _remark(rule: FaultRule) -> str:
        return rule.remark if rule.remark is not None else f"[fault {rule.name}]"


def _close(channel: Channel, *, abort: bool) -> None:
    transport = getattr(channel, "transport", None)
    if abort and transport is not None and hasattr(transport, "abortConnection"):
        transport.abortConnection()
    else:
        channel.close()


def install_faults(engine: FaultEngine, dispatcher: Dispatcher, reactor: Any, address: str) -> TwinFaults:
    """Put the fault hook first on ``dispatcher`` (before ACL: a fault stands for the network)."""
    hook = TwinFaults(engine, dispatcher, reactor, address)
    dispatcher.before_dispatch.insert(0, hook)
    return hook
