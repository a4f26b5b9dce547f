"""The target before any replay task starts: reachable, its brokers, the offsets translation starts from.

Runs on the driver with blocking sockets over the sans-IO codec. A target that does not answer, or a
recorded broker the target cannot stand in for, is a :class:`TargetError` before anything is replayed.
"""

from __future__ import annotations

from rmqtwin.codec import fastjson
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.command import create_request
from rmqtwin.codec.errors import CodecError
from rmqtwin.fakes.broker.acl import sign_request
from rmqtwin.probe import invoke_sync
from rmqtwin.spark.replay.plan import CapturePlan, QueueKey
from rmqtwin.spark.replay.translate import ReplayContext

__all__ = ["TargetError", "parse_broker_map", "prepare_context"]


class TargetError(RuntimeError):
    """The target cannot take this replay; the message says what to do."""


def parse_broker_map(entries: list[str]) -> dict[str, str]:
    """``NAME=HOST:PORT`` (or ``RECORDED_HOST:PORT=HOST:PORT``) entries as a dict."""
    mapping: dict[str, str] = {}
    for entry in entries:
        name, sep, addr = entry.rpartition("=")
        if not sep or not name or ":" not in addr:
            raise TargetError(f"--broker-map {entry!r}: expected NAME=HOST:PORT")
        mapping[name] = addr
    return mapping


def _cluster_brokers(namesrv: str) -> tuple[dict[str, str], list[str]]:
    """The target's broker names → master addresses, and its cluster names."""
    try:
        answer = invoke_sync(namesrv, create_request(RequestCode.GET_BROKER_CLUSTER_INFO))
    except (OSError, CodecError) as exc:
        raise TargetError(f"target namesrv {namesrv} does not answer: {exc}") from exc
    if answer.code != ResponseCode.SUCCESS or not answer.body:
        raise TargetError(f"target namesrv {namesrv} answered cluster info {answer.code}: {answer.remark}")
    info = fastjson.loads(answer.body)
    table = info.get("brokerAddrTable") or {}
    brokers: dict[str, str] = {}
    for name, data in table.items():
        addrs = data.get("brokerAddrs") or {}
        master = addrs.get(0, addrs.get("0"))
        if isinstance(master, str):
            brokers[str(name)] = master
    return brokers, [str(c) for c in info.get("clusterAddrTable") or {}]


def _max_offset(broker: str, topic: str, queue: int, ctx: ReplayContext) -> int:
    """The target queue's max offset (0 for a queue it does not have), asked with the replay's
    credentials when it has them: an ACL broker refuses an unsigned GET_MAX_OFFSET, and translating
    from 0 instead would point every replayed pull at old messages."""
    request = create_request(RequestCode.GET_MAX_OFFSET, {"topic": topic, "queueId": str(queue)})
    if ctx.access_key and ctx.secret_key:
        sign_request(request, ctx.access_key, ctx.secret_key)
    try:
        answer = invoke_sync(broker, request)
    except (OSError, CodecError) as exc:
        raise TargetError(f"target broker {broker} does not answer: {exc}") from exc
    if answer.code == ResponseCode.NO_PERMISSION or "AclException" in (answer.remark or ""):
        hint = "" if ctx.access_key else "; give its credentials with --access-key/--secret-key"
        raise TargetError(f"target broker {broker} refused GET_MAX_OFFSET of {topic}: {answer.remark}{hint}")
    offset = answer.ext("offset")
    return int(offset) if answer.code == ResponseCode.SUCCESS and offset is not None else 0


def prepare_context(plan: CapturePlan, ctx: ReplayContext, broker_map: dict[str, str]) -> None:
    """Fill ``ctx.brokers`` and the offset bases from the target; name unnamed recorded brokers that
    ``broker_map`` maps by address. Raises :class:`TargetError` naming what is missing."""
    for conn in plan.connections:
        if conn.kind == "broker" and conn.broker_name is None and conn.server in broker_map:
            conn.broker_name = conn.server
    missing = plan.unnamed_brokers()
    if missing:
        listed = ", ".join(f"{addr} (connection {', '.join(map(str, ids))})" for addr, ids in missing.items())
        raise TargetError(
            f"the capture has no route answer naming the recorded brokers {listed}; "
            "map each with --broker-map RECORDED_HOST:PORT=TARGET_HOST:PORT"
        )
    brokers, clusters = _cluster_brokers(ctx.namesrv)
    names_at = {addr: name for name, addr in brokers.items()}
    brokers.update(broker_map)
    named = {c.broker_name for c in plan.connections if c.broker_name}
    unknown = sorted(named - set(brokers))
    if unknown:
        raise TargetError(
            f"the target {ctx.namesrv} has no broker named {', '.join(unknown)} "
            f"(it has {', '.join(sorted(brokers)) or 'none'}); map each with --broker-map NAME=HOST:PORT"
        )
    ctx.brokers = brokers
    # a target broker standing in for a recorded one under another name, and the target's cluster when
    # the recorded one had a single other name: the comparison reads them as the recorded names
    renamed: dict[str, tuple[str, str]] = {}
    for name in set(plan.broker_names.values()):
        stand_in = names_at.get(brokers.get(name, ""), name)
        if stand_in != name:
            renamed[stand_in] = (name, "brokerName")
    if len(clusters) == 1 and len(plan.cluster_names) == 1 and clusters != plan.cluster_names:
        renamed[clusters[0]] = (plan.cluster_names[0], "clusterName")
    ctx.target_names = renamed
    ctx.recorded_bases = dict(plan.recorded_bases)
    ctx.shared_queues = set(plan.shared_queues)
    ctx.client_ids = list(plan.client_ids)
    bases: dict[QueueKey, int] = {}
    for name, topic, queue in plan.recorded_bases:
        for copy in range(max(1, ctx.scale) if ctx.suffix_topics else 1):
            target_topic = ctx.topic(topic, copy)
            bases[(name, target_topic, queue)] = _max_offset(brokers[name], target_topic, queue, ctx)
    ctx.target_bases = bases
