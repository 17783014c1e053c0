"""Which provider API a request speaks and what it asks for: by path, then headers, then body."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

import msgspec

from polar_hpc.wire.records import Provider

Op = Literal["generate", "count_tokens", "models", "health"]


class Route(msgspec.Struct, frozen=True):
    provider: Provider
    op: Op
    stream_path: bool = False
    """Google ``:streamGenerateContent``: streaming is decided by the path, not the body."""
    path_model: str | None = None


_GOOGLE = re.compile(r"/(?:v1beta|v1|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
_GOOGLE_OPS: dict[str, Op] = {
    "generateContent": "generate",
    "streamGenerateContent": "generate",
    "countTokens": "count_tokens",
}


def route_by_path(method: str, path: str, headers: Mapping[str, str]) -> Route | None:
    """The route a path names, or None when only the body can tell."""
    p = path.rstrip("/") or "/"
    if method == "POST":
        if p.endswith("/v1/messages"):
            return Route("anthropic", "generate")
        if p.endswith("/v1/messages/count_tokens"):
            return Route("anthropic", "count_tokens")
        if p.endswith("/chat/completions"):
            return Route("openai_chat", "generate")
        if p.endswith("/responses"):
            return Route("openai_responses", "generate")
        m = _GOOGLE.search(p)
        if m:
            op = _GOOGLE_OPS[m.group(2)]
            return Route("google", op, stream_path=m.group(2) == "streamGenerateContent", path_model=m.group(1))
        return None
    if method in ("GET", "HEAD") and p == "/health":
        return Route(header_provider(headers) or "openai_chat", "health")
    if method == "HEAD" and p == "/":
        return Route(header_provider(headers) or "anthropic", "health")
    if method == "GET" and p.endswith("/models"):
        if "/v1beta/" in p or p.startswith("/v1beta"):
            return Route("google", "models")
        return Route(header_provider(headers) or "openai_chat", "models")
    return None


def header_provider(headers: Mapping[str, str]) -> Provider | None:
    if "anthropic-version" in headers or "x-api-key" in headers:
        return "anthropic"
    if "x-goog-api-key" in headers or "x-goog-api-client" in headers:
        return "google"
    return None


def body_provider(body: Any) -> Provider | None:
    if not isinstance(body, dict):
        return None
    if "contents" in body:
        return "google"
    if "input" in body or "instructions" in body:
        return "openai_responses"
    if "messages" in body:
        return "openai_chat"
    return None


def request_key(headers: Mapping[str, str], query: Mapping[str, str]) -> list[str]:
    """Every API key the request carries, in the order they are tried."""
    keys: list[str] = []
    for name in ("x-api-key", "x-goog-api-key"):
        v = headers.get(name)
        if v:
            keys.append(v.strip())
    auth = headers.get("authorization")
    if auth:
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            keys.append(token.strip())
    k = query.get("key")
    if k:
        keys.append(k)
    return keys
