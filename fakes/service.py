"""``TwinServer``: a name server and a broker listening in one Twisted process.

Binding happens before the broker is built, so a broker asked for port 0 knows the port it
advertises (and its VIP channel, port - 2, is bound next to it). The broker registers with the
name server over TCP like a real broker, also when both run in this process.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import socket
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import Deferred, succeed
from twisted.internet.interfaces import IListeningPort
from twisted.internet.protocol import ServerFactory
from twisted.logger import Logger

from rmqtwin.fakes.config import BrokerConfig
from rmqtwin.fakes.faults import install_faults
from rmqtwin.fakes.server import RemotingProtocol, RemotingServerFactory
from rmqtwin.fakes.tls import HandshakeSniffingFactory, TlsMode, TlsSettings
from rmqtwin.listen import LISTEN_BACKLOG, listen_vip_pair
from rmqtwin.proxy.faults import FaultEngine

if TYPE_CHECKING:
    # Imported by the command line only with --metrics-port: prometheus_client and twisted.web are a
    # good part of the twin's start-up otherwise.
    from rmqtwin.fakes.metrics import TwinMetrics

log = Logger()

ROLES = ("both", "namesrv", "broker")


def advertised_host(bind_host: str, advertise: str | None) -> str:
    """The address the broker registers: never a wildcard a client cannot connect to."""
    if advertise:
        return advertise
    if bind_host in ("", "0.0.0.0", "::"):
        return machine_address()
    return bind_host


def machine_address() -> str:
    """This machine's outbound IPv4 address (no packet is sent), else loopback."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("10.255.255.255", 1))
        address = str(sock.getsockname()[0])
        if not address.startswith("0."):
            return address
    return "127.0.0.1"


@dataclass
class ServeOptions:
    host: str = "0.0.0.0"
    namesrv_port: int = 9876
    broker_port: int = 10911
    store: str = "./rmqtwin-store"
    advertise: str | None = None
    role: str = "both"
    namesrv_addr: str | None = None
    config: BrokerConfig = field(default_factory=BrokerConfig)
    tls: TlsSettings = field(default_factory=TlsSettings)
    faults: FaultEngine | None = None
    metrics: TwinMetrics | None = None
    """Prometheus metrics of both servers and the store (:mod:`rmqtwin.fakes.metrics`)."""
    """Fault rules applied by the name server and the broker (:mod:`rmqtwin.fakes.faults`)."""


class TwinServer:
    def __init__(self, options: ServeOptions, reactor: Any) -> None:
        self.options = options
        self.reactor = reactor
        self.ports: list[IListeningPort] = []
        self.namesrv: Any = None
        self.broker: Any = None
        self.namesrv_address: str | None = None
        self.broker_address: str | None = None
        self.faults_url: str | None = None
        self.metrics_url: str | None = None
        """Where the fault API listens, for the ready line (set by whoever started it)."""

    def start(self) -> Deferred[Any]:
        """Listen and start; fires once the broker is registered (when there is one)."""
        opts = self.options
        host_for_clients = advertised_host(opts.host, opts.advertise)
        if opts.role in ("both", "namesrv"):
            from rmqtwin.fakes.namesrv.controller import NamesrvController

            self.namesrv = NamesrvController(self.reactor, five=opts.config.five)
            factory = RemotingServerFactory(
                self.namesrv.dispatcher,
                self.reactor,
                version=opts.config.server_version,
                on_close=self.namesrv.channel_closed,
                proxy_protocol=opts.config.five,  # 5.x servers read an HAProxy preamble
            )
            port = self.reactor.listenTCP(
                opts.namesrv_port, self._with_tls(factory), backlog=LISTEN_BACKLOG, interface=opts.host
            )
            self.ports.append(port)
            self.namesrv.start()
            self.namesrv_address = f"{host_for_clients}:{_port_of(port)}"
            self.namesrv.processor.config["listenPort"] = str(_port_of(port))  # GET_NAMESRV_CONFIG
            if opts.faults is not None:
                install_faults(opts.faults, self.namesrv.dispatcher, self.reactor, self.namesrv_address)
            if opts.metrics is not None:
                opts.metrics.watch(self.namesrv.dispatcher)
                opts.metrics.watch_server("namesrv", factory)
        if opts.role not in ("both", "broker"):
            return succeed(None)
        return self._start_broker(host_for_clients)

    def _start_broker(self, advertise: str) -> Deferred[Any]:
        from rmqtwin.fakes.broker.controller import BrokerController

        opts = self.options
        config = opts.config
        holder: dict[str, Any] = {}

        def on_close(proto: RemotingProtocol) -> None:
            if "broker" in holder:
                holder["broker"].channel_closed(proto)

        factory = RemotingServerFactory(
            _LateDispatcher(holder),
            self.reactor,
            version=config.server_version,
            on_close=on_close,
            max_idle_seconds=config.server_channel_max_idle_time_seconds,
            proxy_protocol=config.five,  # 5.x servers read an HAProxy preamble
        )
        error = config.check_role()
        if error is not None:
            raise RuntimeError(error)
        # The HA port (listenPort + 1, or 5.x's haListenPort) is served by the broker's HAService.
        ha_factory = _LateHAFactory(holder)
        explicit_ha = config.five and config.ha_listen_port > 0
        ports = self._listen_pair(opts.broker_port, factory, None if explicit_ha else ha_factory)
        main_port = ports[0]
        if explicit_ha:
            self.ports.append(
                self.reactor.listenTCP(
                    config.ha_listen_port, ha_factory, backlog=LISTEN_BACKLOG, interface=opts.host
                )
            )
        config.listen_port = _port_of(main_port)
        config.broker_ip1 = advertise
        if opts.namesrv_addr:
            config.namesrv_addr = opts.namesrv_addr
        elif self.namesrv_address is not None and not config.namesrv_addr:
            local = "127.0.0.1" if opts.host in ("", "0.0.0.0", "127.0.0.1") else opts.host
            config.namesrv_addr = f"{local}:{self.namesrv_address.rpartition(':')[2]}"
        store_dir = os.path.abspath(opts.store)
        os.makedirs(store_dir, exist_ok=True)
        broker = BrokerController(config, store_dir, self.reactor, reactor=self.reactor)
        if not broker.load():
            raise RuntimeError(f"the store in {store_dir} could not be loaded")
        holder["broker"] = broker
        if opts.faults is not None:
            install_faults(opts.faults, broker.dispatcher, self.reactor, config.broker_addr)
        if opts.metrics is not None:
            opts.metrics.watch(broker.dispatcher)
            opts.metrics.watch_server("broker", factory)
        if broker.namesrv is not None:
            broker.namesrv.use_tls = opts.tls.client_enabled
        self.broker = broker
        self.broker_address = config.broker_addr
        return broker.start()

    def _with_tls(self, factory: RemotingServerFactory) -> ServerFactory:
        """``factory`` behind the TLS handshake check, unless TLS is disabled (``tls.server.mode``)."""
        if self.options.tls.mode is TlsMode.DISABLED:
            return factory
        return HandshakeSniffingFactory(factory, self.options.tls)

    def _listen_pair(
        self, port: int, factory: RemotingServerFactory, ha_factory: ServerFactory | None
    ) -> tuple[IListeningPort, ...]:
        """The main port, its VIP channel (port - 2) and the HA port (port + 1); with port 0, free ones."""
        listening = self._with_tls(factory)
        ports = listen_vip_pair(
            self.reactor, port, listening, listening, interface=self.options.host, ha_factory=ha_factory
        )
        self.ports.extend(ports)
        return ports

    def stop(self) -> Deferred[Any]:
        """Unregister, persist, flush the store (removing ``abort``), then close the listeners."""
        d: Deferred[Any] = self.broker.shutdown() if self.broker is not None else succeed(None)

        def close(_: Any) -> Deferred[Any]:
            if self.namesrv is not None:
                self.namesrv.shutdown()
            stops = [p.stopListening() for p in self.ports]
            self.ports = []
            from twisted.internet.defer import gatherResults

            return gatherResults([s for s in stops if isinstance(s, Deferred)])

        return d.addBoth(close)

    def ready_line(self) -> str:
        parts = ["rmqtwin ready:"]
        if self.namesrv_address:
            parts.append(f"namesrv={self.namesrv_address}")
        if self.broker_address:
            host, _, port = self.broker_address.rpartition(":")
            parts.append(f"broker={self.broker_address}")
            parts.append(f"vip={host}:{int(port) - 2}")
            parts.append(f"store={os.path.abspath(self.options.store)}")
            parts.append(f"name={self.options.config.broker_name}")
            parts.append(f"cluster={self.options.config.broker_cluster_name}")
        if self.faults_url:
            parts.append(f"faults={self.faults_url}")
        if self.metrics_url:
            parts.append(f"metrics={self.metrics_url}")
        return " ".join(parts)


class _LateDispatcher:
    """The broker's dispatcher, looked up per request (the broker is built after binding)."""

    def __init__(self, holder: dict[str, Any]) -> None:
        self.holder = holder

    def dispatch(self, channel: Any, request: Any) -> Any:
        return self.holder["broker"].dispatcher.dispatch(channel, request)


def _start_next(_: object, server: TwinServer) -> Deferred[Any]:
    return server.start()


class _LateHAFactory(ServerFactory):
    """The HA port's connections go to the broker's HAService (the broker is built after binding)."""

    def __init__(self, holder: dict[str, Any]) -> None:
        self.holder = holder

    def buildProtocol(self, addr: Any) -> Any:
        broker = self.holder.get("broker")
        if broker is None:
            return None
        return broker.ha_service.factory().buildProtocol(addr)


def _port_of(port: IListeningPort) -> int:
    return int(getattr(port.getHost(), "port", 0))


CLUSTER_LAYOUTS: dict[str, list[tuple[str, int, str]]] = {
    "2m-2s-sync": [
        ("broker-a", 0, "SYNC_MASTER"),
        ("broker-b", 0, "SYNC_MASTER"),
        ("broker-a", 1, "SLAVE"),
        ("broker-b", 1, "SLAVE"),
    ],
    "2m-2s-async": [
        ("broker-a", 0, "ASYNC_MASTER"),
        ("broker-b", 0, "ASYNC_MASTER"),
        ("broker-a", 1, "SLAVE"),
        ("broker-b", 1, "SLAVE"),
    ],
    "2m-noslave": [("broker-a", 0, "ASYNC_MASTER"), ("broker-b", 0, "ASYNC_MASTER")],
}
"""RocketMQ's example clusters (distribution/conf/2m-2s-sync, 2m-2s-async, 2m-noslave): broker name,
broker id and role of each broker; masters first, so each slave finds its master when it registers."""


class ClusterServer:
    """A name server and the brokers of a ``CLUSTER_LAYOUTS`` layout in one process (``rmqtwin serve
    --cluster``): each broker a ``TwinServer`` of role broker with its own ports, store
    (``<store>/<name>-<id>``) and copy of the broker.conf, registered with the name server over TCP."""

    def __init__(self, options: ServeOptions, reactor: Any, layout: str) -> None:
        self.options = options
        self.reactor = reactor
        self.layout = CLUSTER_LAYOUTS[layout]
        self.namesrv = TwinServer(dataclasses.replace(options, role="namesrv"), reactor)
        self.brokers: list[TwinServer] = []

    def start(self) -> Deferred[Any]:
        d = self.namesrv.start()
        assert self.namesrv.namesrv_address is not None
        port = self.namesrv.namesrv_address.rpartition(":")[2]
        local = "127.0.0.1" if self.options.host in ("", "0.0.0.0", "127.0.0.1") else self.options.host
        namesrv_addr = f"{local}:{port}"
        for index, (name, broker_id, role) in enumerate(self.layout):
            config = copy.deepcopy(self.options.config)
            config.broker_name, config.broker_id, config.broker_role = name, broker_id, role
            base = self.options.broker_port
            server = TwinServer(
                dataclasses.replace(
                    self.options,
                    role="broker",
                    namesrv_addr=namesrv_addr,
                    broker_port=base + 4 * index if base else 0,
                    store=os.path.join(self.options.store, f"{name}-{broker_id}"),
                    config=config,
                ),
                self.reactor,
            )
            self.brokers.append(server)
            d.addCallback(_start_next, server)
        return d

    def stop(self) -> Deferred[Any]:
        from twisted.internet.defer import gatherResults

        stops = [broker.stop() for broker in reversed(self.brokers)]
        return gatherResults(stops).addBoth(lambda _: self.namesrv.stop())

    def ready_line(self) -> str:
        """The name server, the first master as ``broker`` (what single-broker readers look for) and
        every broker as ``name@id=address``."""
        first = self.brokers[0].broker_address if self.brokers else None
        members = ",".join(
            f"{s.options.config.broker_name}@{s.options.config.broker_id}={s.broker_address}"
            for s in self.brokers
        )
        parts = [
            "rmqtwin ready:",
            f"namesrv={self.namesrv.namesrv_address}",
            f"broker={first}",
            f"store={os.path.abspath(self.options.store)}",
            f"cluster={self.options.config.broker_cluster_name}",
            f"brokers={members}",
        ]
        return " ".join(parts)
