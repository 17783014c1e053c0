"""Parsed reply → provider response: JSON, or a synthesized SSE stream."""

from __future__ import annotations

from polar_hpc.proxy.respond import anthropic, google, openai_chat, openai_responses
from polar_hpc.proxy.respond.common import Reply
from polar_hpc.wire.records import Provider

__all__ = ["Reply", "json_body", "sse_body"]

_MODULES = {
    "anthropic": anthropic,
    "openai_chat": openai_chat,
    "openai_responses": openai_responses,
    "google": google,
}


def json_body(provider: Provider, reply: Reply) -> bytes:
    body: bytes = _MODULES[provider].json_body(reply)
    return body


def sse_body(provider: Provider, reply: Reply) -> bytes:
    body: bytes = _MODULES[provider].sse_body(reply)
    return body
