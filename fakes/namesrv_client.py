"""The broker's side of the name-server protocol: REGISTER_BROKER / UNREGISTER_BROKER (``BrokerOuterAPI``).

One connection per name-server address, reopened on demand, so the broker can register with the
in-process name server or with a real one (``--namesrv-addr``).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet import ssl
from twisted.internet.defer import Deferred, DeferredList, succeed
from twisted.internet.endpoints import SSL4ClientEndpoint, TCP4ClientEndpoint, connectProtocol
from twisted.internet.interfaces import IStreamClientEndpoint
from twisted.logger import Logger

from rmqtwin.codec.bodies import RegisterBrokerBody, TopicConfigSerializeWrapper
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.headers import (
    CommandCustomHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    UnRegisterBrokerRequestHeader,
    from_ext_fields,
)
from rmqtwin.fakes.dispatch import request_command
from rmqtwin.fakes.server import RemotingProtocol

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand
    from rmqtwin.fakes.config import BrokerConfig

log = Logger()


class NamesrvClient:
    """``BrokerOuterAPI``: registers the broker's ``topics()`` as ``config`` names it, and hands a
    slave's master addresses from REGISTER_BROKER's answer to ``on_register_result``."""

    def __init__(
        self,
        config: BrokerConfig,
        reactor: Any,
        topics: Callable[[], TopicConfigSerializeWrapper],
        on_register_result: Callable[[str | None, str | None], None],
    ) -> None:
        self.config = config
        self.reactor = reactor
        self.topics = topics
        self.on_register_result = on_register_result
        self.connections: dict[str, RemotingProtocol] = {}
        self.use_tls = False
        """Speak TLS to the name servers (the broker's ``tls.enable``), trusting any certificate as
        Java's ``tls.test.mode`` does."""

    def _connect(self, addr: str) -> Deferred[RemotingProtocol]:
        existing = self.connections.get(addr)
        if existing is not None and existing.is_active:
            return succeed(existing)
        host, _, port = addr.rpartition(":")
        endpoint: IStreamClientEndpoint
        if self.use_tls:
            options = ssl.CertificateOptions(verify=False)
            endpoint = SSL4ClientEndpoint(self.reactor, host, int(port), options, timeout=5)
        else:
            endpoint = TCP4ClientEndpoint(self.reactor, host, int(port), timeout=5)
        proto = RemotingProtocol(
            None,
            self.reactor,
            version=self.config.server_version,
            on_close=lambda p: self._closed(addr, p),
        )
        d: Deferred[RemotingProtocol] = connectProtocol(endpoint, proto)

        def connected(p: RemotingProtocol) -> RemotingProtocol:
            self.connections[addr] = p
            return p

        return d.addCallback(connected)

    def _closed(self, addr: str, proto: RemotingProtocol) -> None:
        if self.connections.get(addr) is proto:
            del self.connections[addr]

    def register_all(self) -> Deferred[Any]:
        """REGISTER_BROKER to every name server: the topic table as an uncompressed RegisterBrokerBody."""
        c = self.config
        addrs = c.namesrv_addrs
        if not addrs:
            return succeed(None)
        body = RegisterBrokerBody(topic_config_serialize_wrapper=self.topics()).encode(fastjson2=c.five)
        header = RegisterBrokerRequestHeader(
            broker_name=c.broker_name,
            broker_addr=c.broker_addr,
            cluster_name=c.broker_cluster_name,
            ha_server_addr=c.ha_server_addr,
            broker_id=c.broker_id,
            compressed=False,
            body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
        )
        calls = [
            self._call(addr, RequestCode.REGISTER_BROKER, header, body).addCallback(self._registered)
            for addr in addrs
        ]
        return DeferredList(calls)

    def _registered(self, resp: RemotingCommand | None) -> RemotingCommand | None:
        """``RegisterBrokerResult``: a slave's master HA and remoting addresses."""
        if resp is not None and resp.code == ResponseCode.SUCCESS:
            result = from_ext_fields(RegisterBrokerResponseHeader, resp.ext_fields, strict=False)
            self.on_register_result(result.ha_server_addr, result.master_addr)
        return resp

    def invoke_broker(self, addr: str, code: int) -> Deferred[RemotingCommand | None]:
        """A request without header to another broker (a slave asking its master for its tables);
        None when it failed (logged)."""
        return self._call(addr, code, None, None)

    def unregister_all(self) -> Deferred[Any]:
        c = self.config
        addrs = c.namesrv_addrs
        if not addrs:
            return succeed(None)
        header = UnRegisterBrokerRequestHeader(
            broker_name=c.broker_name,
            broker_addr=c.broker_addr,
            cluster_name=c.broker_cluster_name,
            broker_id=c.broker_id,
        )
        calls = [self._call(addr, RequestCode.UNREGISTER_BROKER, header, None) for addr in addrs]

        def close(result: Any) -> Any:
            for proto in list(self.connections.values()):
                proto.close()
            return result

        return DeferredList(calls).addBoth(close)

    def _call(
        self, addr: str, code: int, header: CommandCustomHeader | None, body: bytes | None
    ) -> Deferred[Any]:
        timeout = self.config.register_broker_timeout_mills / 1000.0

        def send(proto: RemotingProtocol) -> Deferred[Any]:
            return proto.invoke(request_command(code, header, body), timeout)

        def check(resp: Any) -> Any:
            if resp.code != ResponseCode.SUCCESS:
                log.warn(
                    "{code} to {addr} answered {answer}: {remark}",
                    code=code,
                    addr=addr,
                    answer=resp.code,
                    remark=resp.remark,
                )
            return resp

        def failed(failure: Any) -> None:
            log.warn(
                "{code} to {addr} failed: {error}", code=code, addr=addr, error=failure.getErrorMessage()
            )

        return self._connect(addr).addCallback(send).addCallback(check).addErrback(failed)
