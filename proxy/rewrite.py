"""Broker-address rewriting in namesrv answers, so clients dial the proxy instead of the brokers.

Rewriting is textual and local: only the address strings change, everything else in the body keeps
its exact bytes, so the body's dialect survives (fastjson's unquoted integer keys ``{0:"ip:port"}`` in
ClusterInfo and old-client route data, quoted ``{"0":…}`` in standard-JSON route data, key order,
spacing). Addresses live in these places of namesrv answers:

* ``"brokerAddrs":{id:"ip:port",…}`` in TopicRouteData.brokerDatas (GET_ROUTEINFO_BY_TOPIC),
  ClusterInfo.brokerAddrTable (GET_BROKER_CLUSTER_INFO), BrokerMemberGroup (5.x GET_BROKER_MEMBER_GROUP);
* ``"brokerAddr":"ip:port"`` in TopicList (GET_SYSTEM_TOPIC_LIST_FROM_NS);
* the keys of ``"filterServerTable":{"ip:port":[…]}`` in TopicRouteData;
* the response header fields ``brokerAddr``, ``masterAddr`` and ``haServerAddr`` (REGISTER_BROKER answers
  to a slave; ``haServerAddr`` is the HA port, which is not the remoting protocol).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Callable

__all__ = ["ADDRESS_HEADER_FIELDS", "AddressRewriter"]

ADDRESS_HEADER_FIELDS = {"brokerAddr": "broker", "masterAddr": "broker", "haServerAddr": "ha"}
"""Response ext fields holding an address, with the kind of listener each needs."""

Resolver = Callable[[str, str], str | None]
"""``resolve(upstream_addr, kind)`` -> the advertised ``host:port`` to write instead, or ``None``."""

_BROKER_ADDRS = re.compile(rb'"brokerAddrs"\s*:\s*\{([^{}]*)\}')
_MAP_STRING_VALUE = re.compile(rb'((?:"(?:[^"\\]|\\.)*"|-?\d+)\s*:\s*")([^"\\]*)(")')
_BROKER_ADDR = re.compile(rb'("brokerAddr"\s*:\s*")([^"\\]*)(")')
_FILTER_TABLE = re.compile(rb'"filterServerTable"\s*:\s*\{([^{}]*)\}')
_MAP_KEY = re.compile(rb'(")([^"\\]+)("\s*:\s*\[)')
_HEADER_FIELD = re.compile(rb'("(brokerAddr|masterAddr|haServerAddr)"\s*:\s*")([^"\\]*)(")')

_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class AddressRewriter:
    """Rewrites broker addresses in response frames through ``resolve``; counts what it changed."""

    def __init__(self, resolve: Resolver) -> None:
        self._resolve = resolve
        self.rewritten_frames = 0

    def _swap(self, addr: bytes, kind: str) -> bytes:
        text = addr.decode("utf-8", "replace")
        if ":" not in text:
            return addr
        new = self._resolve(text, kind)
        return addr if new is None else new.encode()

    def rewrite_body(self, body: bytes) -> bytes:
        """The body with every broker address replaced (the same object if nothing matched)."""
        if b"brokerAddr" not in body and b"filterServerTable" not in body:
            return body

        def value_in_map(m: re.Match[bytes]) -> bytes:
            return m.group(1) + self._swap(m.group(2), "broker") + m.group(3)

        def addrs_object(m: re.Match[bytes]) -> bytes:
            inner = _MAP_STRING_VALUE.sub(value_in_map, m.group(1))
            start, end = m.span(1)
            whole = m.group(0)
            base = m.start(0)
            return whole[: start - base] + inner + whole[end - base :]

        def filter_object(m: re.Match[bytes]) -> bytes:
            inner = _MAP_KEY.sub(
                lambda k: k.group(1) + self._swap(k.group(2), "broker") + k.group(3), m.group(1)
            )
            start, end = m.span(1)
            whole = m.group(0)
            base = m.start(0)
            return whole[: start - base] + inner + whole[end - base :]

        out = _BROKER_ADDRS.sub(addrs_object, body)
        out = _BROKER_ADDR.sub(value_in_map, out)
        out = _FILTER_TABLE.sub(filter_object, out)
        return body if out == body else out

    def rewrite_frame(self, frame: bytes) -> bytes | None:
        """A rewritten copy of a whole response frame (length word included), or ``None`` if unchanged.

        The header is re-encoded only when one of its address fields changed; the body's bytes are
        kept apart from the addresses; the length words are recomputed.
        """
        if len(frame) < 8:
            return None
        length, mark = struct.unpack_from(">II", frame, 0)
        serialize_type = mark >> 24
        header_len = mark & 0xFFFFFF
        if length + 4 != len(frame) or header_len > length - 4:
            return None
        header = frame[8 : 8 + header_len]
        body = frame[8 + header_len :]
        new_header = header
        if b"Addr" in header:
            if serialize_type == 0:
                new_header = self._rewrite_json_header(header)
            elif serialize_type == 1:
                new_header = self._rewrite_binary_header(header)
        new_body = self.rewrite_body(body) if body else body
        if new_header is header and new_body is body:
            return None
        self.rewritten_frames += 1
        out = bytearray()
        out += _U32.pack(4 + len(new_header) + len(new_body))
        out += _U32.pack((serialize_type << 24) | len(new_header))
        out += new_header
        out += new_body
        return bytes(out)

    def _rewrite_json_header(self, header: bytes) -> bytes:
        fields = ADDRESS_HEADER_FIELDS

        def field(m: re.Match[bytes]) -> bytes:
            kind = fields[m.group(2).decode()]
            return m.group(1) + self._swap(m.group(3), kind) + m.group(4)

        out = _HEADER_FIELD.sub(field, header)
        return header if out == header else out

    def _rewrite_binary_header(self, header: bytes) -> bytes:
        try:
            pos = 17 + max(_I32.unpack_from(header, 13)[0], 0)
            ext_len = _I32.unpack_from(header, pos)[0]
            start = pos + 4
            end = start + ext_len
            entries: list[tuple[bytes, bytes]] = []
            p = start
            changed = False
            while p < end:
                key_len = _I16.unpack_from(header, p)[0]
                key = header[p + 2 : p + 2 + key_len]
                p += 2 + key_len
                value_len = _I32.unpack_from(header, p)[0]
                value = header[p + 4 : p + 4 + value_len]
                p += 4 + value_len
                kind = ADDRESS_HEADER_FIELDS.get(key.decode("utf-8", "replace"))
                if kind is not None:
                    new = self._swap(value, kind)
                    changed |= new != value
                    value = new
                entries.append((key, value))
        except struct.error:
            return header
        if not changed:
            return header
        section = b"".join(_I16.pack(len(k)) + k + _I32.pack(len(v)) + v for k, v in entries)
        return header[:pos] + _I32.pack(len(section)) + section + header[end:]
