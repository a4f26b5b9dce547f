"""TLS on the name server's and broker's ports, as Apache RocketMQ's ``NettyRemotingServer`` offers it.

The real server looks at the first byte of every connection (its ``HandshakeHandler``): ``0x16`` opens
a TLS handshake, anything else is plain remoting. What it does then depends on ``tls.server.mode``
(``TlsSystemConfig``, default ``permissive``):

========== ========================== ==========================
mode       TLS ClientHello            plain remoting
========== ========================== ==========================
disabled   closed                     served
permissive served over TLS            served
enforcing  served over TLS            closed
========== ========================== ==========================

Without a certificate of its own the real server (``tls.test.mode.enable``, default true) makes a
self-signed one, and Java clients in that test mode trust any certificate: ``-Dtls.enable=true`` on
the client is all a test needs. rmqtwin does the same, with an EC key made on the first handshake so
that start-up stays fast.
"""

from __future__ import annotations

import datetime
import enum
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import ssl
from twisted.internet.protocol import Protocol, ServerFactory
from twisted.logger import Logger
from twisted.protocols.tls import TLSMemoryBIOFactory
from twisted.python.failure import Failure

__all__ = ["HANDSHAKE_MAGIC_CODE", "HandshakeSniffingFactory", "TlsMode", "TlsSettings", "self_signed_pem"]

log = Logger(namespace="rmqtwin.fakes.tls")

HANDSHAKE_MAGIC_CODE = 0x16
"""``NettyRemotingServer.HANDSHAKE_MAGIC_CODE``: the first byte of a TLS record carrying a handshake."""


class TlsMode(enum.Enum):
    """``org.apache.rocketmq.remoting.common.TlsMode``."""

    DISABLED = "disabled"
    PERMISSIVE = "permissive"
    ENFORCING = "enforcing"


def self_signed_pem(common_name: str = "rmqtwin") -> bytes:
    """A fresh EC P-256 key and a self-signed certificate for it, both PEM, one after the other."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return key_pem + cert.public_bytes(serialization.Encoding.PEM)


@dataclass
class TlsSettings:
    """``tls.server.mode`` and the server's certificate (``tls.server.certPath`` / ``keyPath``, PEM)."""

    mode: TlsMode = TlsMode.PERMISSIVE
    cert_path: str | None = None
    key_path: str | None = None
    client: bool = False
    """``tls.enable``: the broker's own connections to name servers use TLS (implied by enforcing)."""
    _options: Any = field(default=None, repr=False)

    @property
    def client_enabled(self) -> bool:
        return self.client or self.mode is TlsMode.ENFORCING

    def context_factory(self) -> Any:
        """The server's TLS options, made once (a self-signed certificate when none was given)."""
        if self._options is None:
            if self.cert_path:
                with open(self.cert_path, "rb") as fh:
                    pem = fh.read()
                if self.key_path:
                    with open(self.key_path, "rb") as fh:
                        pem = fh.read() + b"\n" + pem
            else:
                pem = self_signed_pem()
            self._options = ssl.PrivateCertificate.loadPEM(pem).options()
        return self._options


# NettyRemotingServer's warnings when it closes such a connection
_REFUSED_TLS = (
    "Clients intend to establish an SSL connection while this server is running in SSL disabled mode ({peer})"
)
_REFUSED_PLAIN = (
    "Clients intend to establish an insecure connection while this server is running in SSL enforcing mode "
    "({peer})"
)


class _HandshakeSniffer(Protocol):
    """Waits for the first byte, then hands the connection to the plain or the TLS protocol."""

    def __init__(self, factory: HandshakeSniffingFactory, addr: Any) -> None:
        self.sniffing = factory
        self.addr = addr
        self.inner: Any = None

    def dataReceived(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.dataReceived(data)
            return
        if not data:
            return
        settings = self.sniffing.settings
        wrapped = self.sniffing.wrapped
        inner: Any = None
        if data[0] == HANDSHAKE_MAGIC_CODE:
            if settings.mode is TlsMode.DISABLED:
                log.warn(_REFUSED_TLS, peer=self.addr)
            else:
                inner = TLSMemoryBIOFactory(settings.context_factory(), False, wrapped).buildProtocol(
                    self.addr
                )
        elif settings.mode is TlsMode.ENFORCING:
            log.warn(_REFUSED_PLAIN, peer=self.addr)
        else:
            inner = wrapped.buildProtocol(self.addr)
        if inner is None:
            self.transport.loseConnection()  # type: ignore[union-attr]
            return
        self.inner = inner
        inner.makeConnection(self.transport)
        inner.dataReceived(data)

    def connectionLost(self, reason: Failure | None = None) -> None:
        if self.inner is not None:
            self.inner.connectionLost(reason)


class HandshakeSniffingFactory(ServerFactory):
    """Listens in front of ``wrapped``: plain remoting, TLS, or a close, per :class:`TlsSettings`."""

    noisy = False

    def __init__(self, wrapped: ServerFactory, settings: TlsSettings) -> None:
        self.wrapped = wrapped
        self.settings = settings

    def doStart(self) -> None:
        self.wrapped.doStart()

    def doStop(self) -> None:
        self.wrapped.doStop()

    def buildProtocol(self, addr: Any) -> _HandshakeSniffer:
        return _HandshakeSniffer(self, addr)
