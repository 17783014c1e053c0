"""What every response builder gets: the parsed reply and its accounting."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import msgspec

from polar_hpc.chat.parse import ParsedReply
from polar_hpc.providers.request import ReplyOptions

ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder()


class Reply(msgspec.Struct, kw_only=True):
    id: str
    """Completion id (the record's); providers prefix it (``chatcmpl-``, ``msg_``, ``resp_``)."""
    model: str
    created: int
    parsed: ParsedReply
    finish: str
    """Engine finish reason: ``stop`` | ``length`` | ``abort``."""
    stop_sequence: str | None = None
    prompt_tokens: int
    output_tokens: int
    options: ReplyOptions


SSE_HEADERS = {"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
KEEPALIVE = b": keep-alive\n\n"
"""A keep-alive outside a provider's own events (an SSE comment), for providers whose SDKs skip comments."""


def sse(event: str | None, data: Any) -> bytes:
    body = ENC.encode(data)
    if event is None:
        return b"data: " + body + b"\n\n"
    return b"event: " + event.encode() + b"\ndata: " + body + b"\n\n"


def arguments_object(arguments: str) -> Any:
    """Tool-call arguments as an object for providers that carry objects (``{}`` when not JSON)."""
    try:
        obj = _DEC.decode(arguments)
    except msgspec.DecodeError:
        return {}
    return obj if isinstance(obj, dict) else {}


def signature(reasoning: str) -> str:
    """Deterministic Anthropic thinking signature (opaque to clients, replayed back to us verbatim)."""
    return "sg_polar_" + base64.b64encode(hashlib.sha256(reasoning.encode()).digest()).decode()
