"""Which provider API a request speaks and what it asks for: by path, then headers, then body (each provider's
package says what is its own: ``ProviderAPI.route`` / ``claims_headers`` / ``claims_body``)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from polar_hpc.providers import PROVIDERS
from polar_hpc.providers.base import Op, Route
from polar_hpc.wire.calls import Provider

__all__ = ["UNDETECTED", "Op", "Route", "body_provider", "header_provider", "request_key", "route_by_path"]

_NEUTRAL: dict[tuple[str, str], tuple[Op, Provider]] = {
    ("GET", "/health"): ("health", "openai_chat"),
    ("HEAD", "/health"): ("health", "openai_chat"),
    ("HEAD", "/"): ("health", "anthropic"),
}
"""Paths no provider owns: the op, and whose answer it gets when the headers name no provider (a model list:
``GET .../models``, OpenAI's by default)."""

UNDETECTED: Provider = "openai_chat"
"""Whose error envelope a request gets when it is refused before its provider is known (unreadable body, no such
endpoint) and its headers name none: OpenAI's, the form most clients parse."""


def route_by_path(method: str, path: str, headers: Mapping[str, str]) -> Route | None:
    """The route a path names, or None when only the body can tell."""
    p = path.rstrip("/") or "/"
    route = _claimed(method, p)
    if route is not None:
        return route
    neutral = _NEUTRAL.get((method, p))
    if neutral is None and method == "GET" and p.endswith("/models"):
        neutral = ("models", "openai_chat")
    if neutral is None:
        return None
    op, default = neutral
    return Route(header_provider(headers) or default, op)


@functools.lru_cache(maxsize=1024)
def _claimed(method: str, path: str) -> Route | None:
    """The route of the provider whose path this is (a harness calls one path over and over: kept)."""
    for api in PROVIDERS.values():
        route = api.route(method, path)
        if route is not None:
            return route
    return None


def header_provider(headers: Mapping[str, str]) -> Provider | None:
    return next((name for name, api in PROVIDERS.items() if api.claims_headers(headers)), None)


def body_provider(body: Any) -> Provider | None:
    if not isinstance(body, dict):
        return None
    return next((name for name, api in PROVIDERS.items() if api.claims_body(body)), None)


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
