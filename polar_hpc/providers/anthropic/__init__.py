"""Anthropic Messages (``/v1/messages``): detection, errors, model list and token counts; the request is read by
``normalize``, the answer built by ``respond`` (JSON, synthesized stream) and ``stream`` (live stream)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from polar_hpc.providers.anthropic import normalize, respond
from polar_hpc.providers.anthropic.stream import AnthropicWriter
from polar_hpc.providers.base import ProviderAPI, Route
from polar_hpc.providers.errors import ProxyError
from polar_hpc.providers.reply import KEEPALIVE, sse
from polar_hpc.providers.request import Normalized
from polar_hpc.wire.calls import Provider

_ERROR_TYPE = {
    "bad_request": "invalid_request_error",
    "auth": "authentication_error",
    "not_found": "not_found_error",
    "too_large": "request_too_large",
    "context_overflow": "invalid_request_error",
    "engine_down": "overloaded_error",
    "engine_timeout": "timeout_error",
    "engine_error": "api_error",
}


class Anthropic:
    name: Provider = "anthropic"
    tool_call_prefix = "toolu_"
    json_body = staticmethod(respond.json_body)
    sse_body = staticmethod(respond.sse_body)
    writer = AnthropicWriter
    bare_keepalive = KEEPALIVE

    def route(self, method: str, path: str) -> Route | None:
        if method != "POST":
            return None
        if path.endswith("/v1/messages"):
            return Route("anthropic", "generate")
        if path.endswith("/v1/messages/count_tokens"):
            return Route("anthropic", "count_tokens")
        return None

    def claims_headers(self, headers: Mapping[str, str]) -> bool:
        return "anthropic-version" in headers or "x-api-key" in headers

    def claims_body(self, body: dict[str, Any]) -> bool:
        return False  # a ``messages`` body off the Messages path is OpenAI Chat's

    def disables_parallel(self, tool_choice: Any) -> bool:
        return isinstance(tool_choice, dict) and bool(tool_choice.get("disable_parallel_tool_use"))

    def normalize(self, route: Route, body: dict[str, Any]) -> Normalized:
        return normalize.normalize(body)

    def error_body(self, err: ProxyError) -> dict[str, Any]:
        return {"type": "error", "error": {"type": _ERROR_TYPE[err.kind], "message": err.message}}

    def stream_error(self, err: ProxyError, completion_id: str, model: str) -> bytes:
        return sse("error", self.error_body(err))

    def models(self, name: str, context_length: int, max_new_tokens: int) -> dict[str, Any]:
        return {
            "data": [{"type": "model", "id": name, "display_name": name, "created_at": "1970-01-01T00:00:00Z"}],
            "has_more": False,
            "first_id": name,
            "last_id": name,
        }

    def token_count(self, n: int) -> dict[str, Any]:
        return {"input_tokens": n}


API: ProviderAPI = Anthropic()
