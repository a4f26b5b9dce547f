"""Sans-IO implementation of the RocketMQ remoting protocol: bytes in, events out.

The main names are re-exported here; typed headers, bodies and message records live in their own
modules (``rmqtwin.codec.headers``, ``.bodies``, ``.message``) and are imported from there.
"""

from __future__ import annotations

from rmqtwin.codec import codes, errors
from rmqtwin.codec.codes import LanguageCode, RequestCode, ResponseCode, SerializeType
from rmqtwin.codec.command import (
    JsonDialect,
    RemotingCommand,
    create_request,
    create_response,
    decode_command,
    encode_command,
)
from rmqtwin.codec.connection import (
    RemotingConnection,
    RequestFailed,
    RequestReceived,
    RequestTimedOut,
    ResponseReceived,
)
from rmqtwin.codec.errors import CodecError, FrameError, FrameTooLarge, HeaderError, MessageDecodeError
from rmqtwin.codec.frame import DEFAULT_MAX_FRAME_SIZE, FrameDecoder, encode_frame

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "CodecError",
    "FrameDecoder",
    "FrameError",
    "FrameTooLarge",
    "HeaderError",
    "JsonDialect",
    "LanguageCode",
    "MessageDecodeError",
    "RemotingCommand",
    "RemotingConnection",
    "RequestCode",
    "RequestFailed",
    "RequestReceived",
    "RequestTimedOut",
    "ResponseCode",
    "ResponseReceived",
    "SerializeType",
    "codes",
    "create_request",
    "create_response",
    "decode_command",
    "encode_command",
    "encode_frame",
    "errors",
]
