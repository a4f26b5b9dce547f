"""``rmqtwin serve``: a name server and a broker that unchanged RocketMQ clients use."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rmqtwin.logs import LEVELS


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="run a RocketMQ-compatible name server and broker",
        description="A name server and a broker in one process; Java clients and mqadmin use them unchanged.",
    )
    parser.add_argument("--host", default="0.0.0.0", help="interface to bind (default: all)")
    parser.add_argument(
        "--log-level", choices=LEVELS, default="warning", help="what reaches stderr (default: warning)"
    )
    parser.add_argument("--namesrv-port", type=int, default=9876, help="name server port (0 = any free port)")
    parser.add_argument(
        "--broker-port",
        type=int,
        default=10911,
        help="broker port; port-2 is its VIP channel (0 = any free pair)",
    )
    parser.add_argument(
        "--store", default="./rmqtwin-store", help="store directory (default ./rmqtwin-store)"
    )
    parser.add_argument(
        "--advertise", default=None, help="address the broker registers (default: the bound host)"
    )
    parser.add_argument("--config", default=None, help="RocketMQ broker.conf (Java properties)")
    parser.add_argument(
        "--acl-file",
        default=None,
        help="plain_acl.yml for aclEnable=true (default: $ROCKETMQ_HOME/conf/plain_acl.yml, conf/acl/)",
    )
    parser.add_argument(
        "--rocketmq-version",
        choices=("4.9", "5.5"),
        default="5.5",
        help="the real broker line to answer as, whatever the client's version (default: 5.5)",
    )
    parser.add_argument("--role", choices=("both", "namesrv", "broker"), default="both")
    parser.add_argument(
        "--cluster",
        choices=("2m-2s-sync", "2m-2s-async", "2m-noslave"),
        default=None,
        help="a name server and RocketMQ's example cluster in this process (broker-a/b, masters and slaves, "
        "stores under --store); --config applies to every broker",
    )
    parser.add_argument("--namesrv-addr", default=None, help="name server(s) the broker registers with (a;b)")
    parser.add_argument(
        "--broker-name", default=None, help="brokerName (default: broker.conf, else the host name)"
    )
    parser.add_argument(
        "--tls-mode",
        choices=("disabled", "permissive", "enforcing"),
        default="permissive",
        help="tls.server.mode: TLS refused, offered next to plain remoting (default), or required",
    )
    from rmqtwin.proxy.cli import add_fault_options

    add_fault_options(parser)
    parser.add_argument("--tls-cert", default=None, help="server certificate, PEM (default: self-signed)")
    parser.add_argument("--tls-key", default=None, help="its private key, PEM, if not in --tls-cert")
    parser.add_argument(
        "--tls-enable",
        action="store_true",
        help="tls.enable: the broker registers with name servers over TLS (implied by --tls-mode enforcing)",
    )
    parser.set_defaults(handler=serve)


def serve(args: argparse.Namespace) -> int:

    from twisted.internet import reactor
    from twisted.logger import Logger

    from rmqtwin.fakes.config import BrokerConfig
    from rmqtwin.fakes.service import ClusterServer, ServeOptions, TwinServer
    from rmqtwin.fakes.tls import TlsMode, TlsSettings
    from rmqtwin.logs import begin_logging

    begin_logging(args.log_level)
    log = Logger("rmqtwin.serve")

    config = BrokerConfig.load(args.config) if args.config else BrokerConfig()
    if args.broker_name:
        config.broker_name = args.broker_name
    config.acl_file = args.acl_file
    config.rocketmq_version = args.rocketmq_version
    if args.cluster and (args.metrics_port is not None or args.role != "both"):
        print(
            "rmqtwin serve: --cluster runs its own name server and brokers: no --role, no --metrics-port",
            file=sys.stderr,
        )
        return 2
    options = ServeOptions(
        host=args.host,
        namesrv_port=args.namesrv_port,
        broker_port=args.broker_port,
        store=args.store,
        advertise=args.advertise,
        role=args.role,
        namesrv_addr=args.namesrv_addr,
        config=config,
        tls=TlsSettings(TlsMode(args.tls_mode), args.tls_cert, args.tls_key, client=args.tls_enable),
    )
    from rmqtwin.proxy.cli import start_faults

    options.faults, faults_url = start_faults(args, reactor)
    server: TwinServer | ClusterServer
    if args.cluster:
        server = ClusterServer(options, reactor, args.cluster)
    else:
        server = TwinServer(options, reactor)
        server.faults_url = faults_url
    if args.metrics_port is not None and isinstance(server, TwinServer):  # --cluster has none (refused above)
        from rmqtwin.fakes.metrics import TwinMetrics
        from rmqtwin.proxy.cli import serve_metrics

        options.metrics = TwinMetrics(lambda: server.broker)
        if options.faults is not None:
            options.metrics.common.watch_faults(options.faults)
        server.metrics_url = serve_metrics(args, reactor, options.metrics.registry)
    status = {"code": 0}

    def started(_: object) -> None:
        print(server.ready_line(), flush=True)

    def failed(failure: Any) -> None:
        log.failure("rmqtwin serve failed to start", failure)
        status["code"] = 1
        reactor.stop()

    def begin() -> None:
        try:
            d = server.start()
        except Exception:
            from twisted.python.failure import Failure

            failed(Failure())
            return
        d.addCallbacks(started, failed)

    reactor.callWhenRunning(begin)
    reactor.addSystemEventTrigger("before", "shutdown", server.stop)
    reactor.run()
    return status["code"]
