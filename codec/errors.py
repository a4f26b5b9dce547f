"""Errors raised by the codec.

Every error derives from :class:`CodecError`, so the transport layer can catch one type and close only
the offending connection (as Netty's decoder failure closes only its channel).
"""

from __future__ import annotations

__all__ = ["CodecError", "FrameError", "FrameTooLarge", "HeaderError", "MessageDecodeError"]


class CodecError(Exception):
    """Base of every error the codec raises."""


class FrameError(CodecError):
    """A malformed frame or remoting header (bad length word, truncated or invalid header)."""


class FrameTooLarge(FrameError):  # noqa: N818 (the name other areas import)
    """The frame's length word exceeds the configured maximum (``frameMaxLength``, 16 MiB by default)."""

    def __init__(self, length: int, max_frame_size: int) -> None:
        super().__init__(f"frame length {length} exceeds the maximum {max_frame_size}")
        self.length = length
        self.max_frame_size = max_frame_size


class HeaderError(CodecError):
    """A custom-header (extFields) field is missing or cannot be converted."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class MessageDecodeError(CodecError):
    """A stored message record (commitlog layout, pull/query body) is malformed."""
