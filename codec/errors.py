"""Errors raised by the codec.

Every error derives from :class:`CodecError`, so the transport layer can catch one type and close only
the offending connection (as Netty's decoder failure closes only its channel).
"""

from __future__ import annotations

from rmqtwin.codec.codes import ResponseCode

__all__ = [
    "BodyDecompressError",
    "BodyError",
    "CodecError",
    "FastjsonError",
    "FrameError",
    "FrameTooLarge",
    "HeaderError",
    "HeaderFieldError",
    "MessageDecodeError",
    "MessageEncodeError",
    "MessageIdError",
]


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


class HeaderFieldError(HeaderError):
    """A required field is missing or a value does not parse.

    ``response_code`` (SYSTEM_ERROR) and ``remark`` are what the real broker answers in the common case
    (see ``rmqtwin.codec.headers`` for the exceptions).
    """

    def __init__(self, message: str, field: str, remark: str) -> None:
        super().__init__(message, field)
        self.response_code = ResponseCode.SYSTEM_ERROR
        self.remark = remark

    @classmethod
    def missing(cls, wire: str) -> HeaderFieldError:
        """A required field ``wire`` is absent: the processor meets a null (an NPE in Java)."""
        return cls(
            f"the custom field <{wire}> is null",
            wire,
            f"java.lang.NullPointerException, the custom field <{wire}> is null",
        )

    @classmethod
    def unparsable(cls, wire: str, text: str) -> HeaderFieldError:
        """``wire`` holds ``text``, which is not a number of the field's type."""
        return cls(
            f"the custom field <{wire}> cannot be parsed: {text!r}",
            wire,
            f'java.lang.NumberFormatException: For input string: "{text}"',
        )


class BodyDecompressError(MessageDecodeError):
    """A body flagged as compressed could not be decompressed (the Java client drops such a message)."""


class MessageEncodeError(CodecError, ValueError):
    """A message cannot be laid out as a record (topic or properties too long, host/flag mismatch)."""


class MessageIdError(CodecError, ValueError):
    """A msgId string is not valid hex of the expected length."""


class FastjsonError(CodecError):
    """The text is not even fastjson-dialect JSON (fastjson would throw ``JSONException``)."""


class BodyError(CodecError):
    """A body that even fastjson's lenient reader would reject (or a broken compressed register body)."""
