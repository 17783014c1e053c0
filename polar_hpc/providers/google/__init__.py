"""Google Gemini (``/v1beta/models/{model}:generateContent`` and friends): detection, errors, model list and token
counts; the request is read by ``normalize``, the answer built by ``respond`` (JSON, synthesized stream) and
``stream`` (live stream)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from polar_hpc.providers.base import Op, ProviderAPI, Route
from polar_hpc.providers.errors import ProxyError
from polar_hpc.providers.google import normalize, respond
from polar_hpc.providers.google.stream import GoogleWriter
from polar_hpc.providers.reply import sse
from polar_hpc.providers.request import Normalized
from polar_hpc.wire.calls import Provider

_PATH = re.compile(r"/(?:v1beta|v1|v1alpha)/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
_OPS: dict[str, Op] = {
    "generateContent": "generate",
    "streamGenerateContent": "generate",
    "countTokens": "count_tokens",
}

_STATUS = {
    "bad_request": "INVALID_ARGUMENT",
    "auth": "UNAUTHENTICATED",
    "not_found": "NOT_FOUND",
    "too_large": "INVALID_ARGUMENT",
    "context_overflow": "INVALID_ARGUMENT",
    "engine_down": "UNAVAILABLE",
    "engine_timeout": "DEADLINE_EXCEEDED",
    "engine_error": "INTERNAL",
}


class Google:
    name: Provider = "google"
    tool_call_prefix = "call_"
    json_body = staticmethod(respond.json_body)
    sse_body = staticmethod(respond.sse_body)
    writer = GoogleWriter
    bare_keepalive = respond.KEEPALIVE

    def route(self, method: str, path: str) -> Route | None:
        if method == "POST":
            m = _PATH.search(path) if ":" in path else None  # the check first: most paths are other providers'
            if m is None:
                return None
            return Route("google", _OPS[m.group(2)], stream_path=m.group(2) == "streamGenerateContent",
                         path_model=m.group(1))
        if method == "GET" and path.endswith("/models") and ("/v1beta/" in path or path.startswith("/v1beta")):
            return Route("google", "models")
        return None

    def claims_headers(self, headers: Mapping[str, str]) -> bool:
        return "x-goog-api-key" in headers or "x-goog-api-client" in headers

    def claims_body(self, body: dict[str, Any]) -> bool:
        return "contents" in body

    def disables_parallel(self, tool_choice: Any) -> bool:
        return False

    def normalize(self, route: Route, body: dict[str, Any]) -> Normalized:
        return normalize.normalize(body, route.path_model, route.stream_path)

    def error_body(self, err: ProxyError) -> dict[str, Any]:
        return {"error": {"code": err.status, "message": err.message, "status": _STATUS[err.kind]}}

    def stream_error(self, err: ProxyError, completion_id: str, model: str) -> bytes:
        return sse(None, self.error_body(err))

    def models(self, name: str, context_length: int, max_new_tokens: int) -> dict[str, Any]:
        return {
            "models": [
                {
                    "name": f"models/{name}",
                    "displayName": name,
                    "inputTokenLimit": context_length,
                    "outputTokenLimit": max_new_tokens,
                    "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
                }
            ]
        }

    def token_count(self, n: int) -> dict[str, Any]:
        return {"totalTokens": n}


API: ProviderAPI = Google()
