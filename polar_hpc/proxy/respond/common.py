"""What every response builder gets: the parsed reply and its accounting."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import msgspec

from polar_hpc.proxy.normalize.common import ReplyOptions
from polar_hpc.proxy.parse import ParsedReply

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
GOOGLE_KEEPALIVE = b"\n"
"""google-genai's JS stream parser (Gemini CLI) only reads ``data:`` frames at the head of its buffer (leading
whitespace allowed): an SSE comment there blocks every later frame and the call fails ("Incomplete JSON segment
at the end"), so Gemini CLI retried every call slower than the keep-alive interval. A blank line is harmless."""


def bare_keepalive(provider: str) -> bytes:
    """A keep-alive outside the provider's own events: an SSE comment, a blank line for Google."""
    return GOOGLE_KEEPALIVE if provider == "google" else KEEPALIVE


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
