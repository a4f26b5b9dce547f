"""The properties string (``messageProperties2String``) and the Java hashes of tags and bodies."""

from __future__ import annotations

import zlib
from collections.abc import Mapping

from rmqtwin.codec.java import java_string_hash

__all__ = ["body_crc32", "properties_to_string", "string_to_properties", "tags_code"]

# --------------------------------------------------------------------------------------------------
# Properties string


def properties_to_string(props: Mapping[str, str | None] | None, *, trailing_separator: bool) -> str:
    """``MessageDecoder.messageProperties2String``: ``name\\x01value`` pairs joined by ``\\x02``.

    Pairs whose value is ``None`` are skipped. 4.9.1-5.1.x drop the separator after the last pair
    (``trailing_separator=False``); 5.2.0+ keep it (``True``). Order is the mapping's iteration order (Java
    writes HashMap order; see :func:`in_java_hash_map_order`).
    """
    if not props:
        return ""
    out = "\x02".join([f"{k}\x01{v}" for k, v in props.items() if v is not None])  # a list joins faster
    if trailing_separator and out:
        out += "\x02"
    return out


def string_to_properties(s: str | None) -> dict[str, str]:
    """``MessageDecoder.string2messageProperties``: tolerant of a trailing separator and of junk chunks.

    A chunk between ``\\x02`` separators is kept only when it has at least 3 chars and its first ``\\x01``
    is neither its first nor its last char; later duplicates overwrite earlier ones.
    """
    result: dict[str, str] = {}
    if not s:
        return result
    for chunk in s.split("\x02"):
        # Non-empty name and value around the first 0x01 is the same as Java's index checks.
        name, _, value = chunk.partition("\x01")
        if name and value:
            result[name] = value
    return result


# --------------------------------------------------------------------------------------------------
# Java hashes


def tags_code(tags: str | None) -> int:
    """``MessageExtBrokerInner.tagsString2tagsCode``: the consume queue's tagsCode (0 without tags).

    The Java long is the int hash sign-extended, which is the same Python int.
    """
    if not tags:
        return 0
    return java_string_hash(tags)


def body_crc32(body: bytes | bytearray | memoryview) -> int:
    """``UtilAll.crc32``: java.util.zip.CRC32 masked to 31 bits (never negative)."""
    return zlib.crc32(body) & 0x7FFFFFFF
