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

Brokers name themselves too, in what they send to clients (:meth:`AddressRewriter.rewrite_broker_frame`):

* offset msgIds (store host + port + commitlog offset, hex) in the ``msgId`` of send answers (a comma list
  for batches) and the ``offsetMsgId`` of CHECK_TRANSACTION_STATE: a tool that decodes one to dial the
  broker (mqadmin ``queryMsgById`` → VIEW_MESSAGE_BY_ID) must dial the proxy;
* the store host of every record in pull, query and view answers, from which clients compute the offset
  msgId of a received message. It is patched in place (same address family, same length).

Only addresses of brokers the proxy already stands in for are changed; anything else (a UNIQ_KEY in a
``msgId`` field, a store host of an unknown broker) is left as it is.
"""

from __future__ import annotations

import re
import socket
import struct
from collections.abc import Callable, Iterable
from typing import NamedTuple

from rmqtwin.codec.errors import CodecError
from rmqtwin.codec.frame import PREFIX_SIZE, encode_frame, split_whole_frame, whole_frame_prefix
from rmqtwin.codec.message import MESSAGE_MAGIC_CODE, MESSAGE_MAGIC_CODE_V2, store_host_spans
from rmqtwin.proxy.wire import FrameHead, binary_entries

__all__ = ["ADDRESS_HEADER_FIELDS", "MSG_ID_HEADER_FIELDS", "AddressRewriter"]

ADDRESS_HEADER_FIELDS = {"brokerAddr": "broker", "masterAddr": "broker", "haServerAddr": "ha"}
"""Response ext fields holding an address, with the kind of listener each needs."""

MSG_ID_HEADER_FIELDS = ("msgId", "offsetMsgId")
"""Ext fields of broker-to-client frames that may hold offset msgIds."""

Resolver = Callable[[str, str], str | None]
"""``resolve(upstream_addr, kind)`` -> the advertised ``host:port`` to write instead, or ``None``."""

Lookup = Callable[[str], str | None]
"""``lookup(upstream_broker_addr)`` -> its listener's advertised ``host:port``, never opening one."""

_BROKER_ADDRS = re.compile(rb'"brokerAddrs"\s*:\s*\{([^{}]*)\}')
_MAP_STRING_VALUE = re.compile(rb'((?:"(?:[^"\\]|\\.)*"|-?\d+)\s*:\s*")([^"\\]*)(")')
_BROKER_ADDR = re.compile(rb'("brokerAddr"\s*:\s*")([^"\\]*)(")')
_FILTER_TABLE = re.compile(rb'"filterServerTable"\s*:\s*\{([^{}]*)\}')
_MAP_KEY = re.compile(rb'(")([^"\\]+)("\s*:\s*\[)')
_MSG_ID_HOST_HEX = {32: 16, 56: 40}
"""Offset msgId length -> hex chars of its IP + port part (IPv4, IPv6)."""
_RECORD_MAGICS = {struct.pack(">i", MESSAGE_MAGIC_CODE), struct.pack(">i", MESSAGE_MAGIC_CODE_V2)}


class _Fields(NamedTuple):
    """Ext field names to rewrite, and the regex finding them in a JSON header."""

    names: frozenset[bytes]
    json: re.Pattern[bytes]


def _fields(names: Iterable[str]) -> _Fields:
    encoded = frozenset(n.encode() for n in names)
    alternatives = b"|".join(re.escape(n) for n in sorted(encoded))
    return _Fields(encoded, re.compile(rb'("(' + alternatives + rb')"\s*:\s*")([^"\\]*)(")'))


_ADDRESS_FIELDS = _fields(ADDRESS_HEADER_FIELDS)
_MSG_ID_FIELDS = _fields(MSG_ID_HEADER_FIELDS)

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class AddressRewriter:
    """Rewrites broker addresses in response frames through ``resolve``; counts what it changed."""

    def __init__(self, resolve: Resolver, lookup: Lookup | None = None) -> None:
        self._resolve = resolve
        self._lookup: Lookup = lookup if lookup is not None else (lambda addr: None)
        self.rewritten_frames = 0
        self._host_cache: dict[bytes, bytes] = {}
        self._hex_cache: dict[bytes, bytes] = {}
        """Hex IP + port of a broker in offset msgIds -> its listener's, as in ``_host_cache``."""

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
        """A rewritten copy of a whole namesrv answer (length word included), or ``None`` if unchanged.

        The header is re-encoded only when one of its address fields changed; the body's bytes are
        kept apart from the addresses; the length words are recomputed.
        """
        parts = split_whole_frame(frame)
        if parts is None:
            return None
        serialize_type, header, body = parts
        new_header = header
        if b"Addr" in header:
            new_header = _rewrite_header(header, serialize_type, _ADDRESS_FIELDS, self._swap_address_field)
        new_body = self.rewrite_body(body) if body else body
        return self._joined(serialize_type, header, new_header, body, new_body)

    def rewrite_broker_frame(self, frame: bytes, head: FrameHead | None = None) -> bytes | None:
        """A rewritten copy of a whole broker-to-client frame, or ``None`` if unchanged: offset msgIds
        in its header and the store hosts of the records in its body name the proxy's listeners.

        Both keep their length (an address is replaced by one of the same family), so the copy is
        patched in place: no length word changes and nothing is re-encoded. ``head`` is the frame's
        head when the session read it already (it says which msgIds there are: a JSON header's are
        then found with one search each); without one the header is searched.
        """
        prefix = whole_frame_prefix(frame)
        if prefix is None:
            return None
        serialize_type, header_length = prefix
        header_end = PREFIX_SIZE + header_length
        patches: list[tuple[int, bytes]] = []
        if head is None or serialize_type != 0 or not self._head_patches(frame, head, header_end, patches):
            patches = self._searched_patches(frame, serialize_type, header_end)
        if frame[header_end + 4 : header_end + 8] in _RECORD_MAGICS:
            self._store_host_patches(frame, header_end, patches)
        if not patches:
            return None
        self.rewritten_frames += 1
        if len(patches) == 1:  # a send answer's msgId: two slices are cheaper than a bytearray
            start, new = patches[0]
            return frame[:start] + new + frame[start + len(new) :]
        out = bytearray(frame)
        for start, new in patches:
            out[start : start + len(new)] = new
        return bytes(out)

    def _searched_patches(
        self, frame: bytes, serialize_type: int, header_end: int
    ) -> list[tuple[int, bytes]]:
        """Patches for the offset msgIds of a header searched field by field (no head, a binary header,
        or a JSON one not written as Java writes it)."""
        patches = []
        if frame.find(b"sgId", PREFIX_SIZE, header_end) >= 0:
            for start, value in _field_values(frame, serialize_type, header_end, _MSG_ID_FIELDS):
                new = self._swap_msg_ids("", value)
                if new is not value:
                    patches.append((start, new))
        return patches

    def _head_patches(
        self, frame: bytes, head: FrameHead, header_end: int, patches: list[tuple[int, bytes]]
    ) -> bool:
        """Patches for the offset msgIds ``head`` names in a JSON header, appended to ``patches``; False
        when one is not where Java writes it (``{"`` or ``,"`` then the field, no spaces, no escapes):
        the caller then searches the header instead."""
        ext = head.extFields
        if ext is None:
            return True
        for name, value in ((b"msgId", ext.msgId), (b"offsetMsgId", ext.offsetMsgId)):
            if value is None:
                continue
            raw = value.encode()
            new = self._swap_msg_ids("", raw)
            if new is raw:
                continue
            at = frame.find(b'"%s":"%s"' % (name, raw), PREFIX_SIZE, header_end)
            if at < 0 or frame[at - 1] not in b"{,":
                return False
            patches.append((at + len(name) + 4, new))
        return True

    def _joined(
        self, serialize_type: int, header: bytes, new_header: bytes, body: bytes, new_body: bytes
    ) -> bytes | None:
        if new_header is header and new_body is body:
            return None
        self.rewritten_frames += 1
        return encode_frame(new_header, new_body, serialize_type)

    def _swap_address_field(self, name: str, value: bytes) -> bytes:
        return self._swap(value, ADDRESS_HEADER_FIELDS[name])

    def _listener_host(self, addr: str) -> tuple[str, int] | None:
        """The listener (IP literal, port) standing in for upstream broker ``addr``, if there is one."""
        listener = self._lookup(addr)
        if listener is None:
            return None
        host, _, port = listener.rpartition(":")
        return host.strip("[]"), int(port)

    def _host_replacement(self, raw: bytes) -> bytes | None:
        """For a broker's IP + port bytes (8 or 20) as records and offset msgIds hold them, those of its
        listener in the same family and length; ``None`` for an unknown broker or a named listener."""
        known = self._host_cache.get(raw)
        if known is not None:
            return known
        ip_len = len(raw) - 4
        family = socket.AF_INET if ip_len == 4 else socket.AF_INET6
        addr = f"{socket.inet_ntop(family, raw[:ip_len])}:{_I32.unpack_from(raw, ip_len)[0]}"
        listener = self._listener_host(addr)
        if listener is None:
            return None
        try:
            packed = socket.inet_pton(family, listener[0])
        except OSError:  # a name, or the other address family: the bytes must keep their length
            return None
        new = self._host_cache[raw] = packed + _I32.pack(listener[1])
        return new

    def _swap_msg_ids(self, name: str, value: bytes) -> bytes:
        """Offset msgIds (``MessageDecoder.createMessageId``: hex of IP, port, commitlog offset) whose
        IP and port are a broker's; anything else in the field (a UNIQ_KEY) stays. The result has the
        length of ``value``; it is ``value`` itself when nothing changed."""
        known = self._hex_cache
        host_hex = _MSG_ID_HOST_HEX.get(len(value))
        if host_hex is not None and b"," not in value:  # one msgId (a send answer's): no list made
            new_hex = known.get(value[:host_hex]) or self._hex_replacement(value[:host_hex])
            return value if new_hex is None else new_hex + value[host_hex:]
        ids = value.split(b",")
        changed = False
        for i, msg_id in enumerate(ids):
            host_hex = _MSG_ID_HOST_HEX.get(len(msg_id))
            if host_hex is None:
                continue
            new_hex = known.get(msg_id[:host_hex])
            if new_hex is None:
                new_hex = self._hex_replacement(msg_id[:host_hex])
                if new_hex is None:
                    continue
            ids[i] = new_hex + msg_id[host_hex:]
            changed = True
        return b",".join(ids) if changed else value

    def _hex_replacement(self, host_hex: bytes) -> bytes | None:
        """The hex IP + port of the listener standing in for the broker ``host_hex`` names (cached)."""
        try:
            raw = bytes.fromhex(host_hex.decode("ascii"))
        except (ValueError, UnicodeDecodeError):
            return None
        new = self._host_replacement(raw)
        if new is None:
            return None
        new_hex = self._hex_cache[host_hex] = new.hex().upper().encode()
        return new_hex

    def _store_host_patches(self, frame: bytes, body_start: int, patches: list[tuple[int, bytes]]) -> None:
        """(frame offset, new bytes) for each record of the body whose store host is a known broker."""
        try:
            spans = store_host_spans(memoryview(frame)[body_start:])
        except CodecError:
            return
        for start, length in spans:
            at = body_start + start
            new = self._host_replacement(frame[at : at + length])
            if new is not None:
                patches.append((at, new))


FieldRewrite = Callable[[str, bytes], bytes]


def _rewrite_header(header: bytes, serialize_type: int, fields: _Fields, swap: FieldRewrite) -> bytes:
    """``header`` with the values of ``fields`` passed through ``swap`` (the same object if none changed)."""
    if serialize_type == 0:

        def field(m: re.Match[bytes]) -> bytes:
            return m.group(1) + swap(m.group(2).decode(), m.group(3)) + m.group(4)

        out = fields.json.sub(field, header)
        return header if out == header else out
    if serialize_type == 1:
        return _rewrite_binary_header(header, fields, swap)
    return header


def _rewrite_binary_header(header: bytes, fields: _Fields, swap: FieldRewrite) -> bytes:
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
            if key in fields.names:
                new = swap(key.decode("utf-8", "replace"), value)
                changed |= new != value
                value = new
            entries.append((key, value))
    except struct.error:
        return header
    if not changed:
        return header
    section = b"".join(_I16.pack(len(k)) + k + _I32.pack(len(v)) + v for k, v in entries)
    return header[:pos] + _I32.pack(len(section)) + section + header[end:]


def _field_values(
    frame: bytes, serialize_type: int, header_end: int, fields: _Fields
) -> list[tuple[int, bytes]]:
    """(offset in ``frame``, value) of each ext field of ``fields`` in a whole frame's header."""
    if serialize_type == 0:
        return [(m.start(3), m.group(3)) for m in fields.json.finditer(frame, PREFIX_SIZE, header_end)]
    if serialize_type != 1:
        return []
    found = []
    try:
        pos = PREFIX_SIZE + 17 + max(_I32.unpack_from(frame, PREFIX_SIZE + 13)[0], 0)
        ext_len = _I32.unpack_from(frame, pos)[0]
        if pos + 4 + ext_len > header_end:
            return []
        for key_start, key_end, value_start, value_end in binary_entries(frame, pos + 4, pos + 4 + ext_len):
            if frame[key_start:key_end] in fields.names:
                found.append((value_start, frame[value_start:value_end]))
    except (struct.error, ValueError):
        return []
    return found
