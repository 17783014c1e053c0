"""OpenAI Chat Completions (``/chat/completions``): detection, errors (OpenAI's envelope; Responses inherits it),
model list and token counts; the request is read by ``normalize``, the answer built by ``respond`` (JSON,
synthesized stream) and ``stream`` (live stream)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from polar_hpc.providers.base import ProviderAPI, Route
from polar_hpc.providers.errors import ProxyError
from polar_hpc.providers.openai_chat import normalize, respond
from polar_hpc.providers.openai_chat.stream import ChatWriter
from polar_hpc.providers.reply import KEEPALIVE, sse
from polar_hpc.providers.request import Normalized
from polar_hpc.providers.writer import Writer
from polar_hpc.wire.calls import Provider

_ERROR_TYPE = {
    "bad_request": ("invalid_request_error", None),
    "auth": ("invalid_request_error", "invalid_api_key"),
    "not_found": ("invalid_request_error", "model_not_found"),
    "too_large": ("invalid_request_error", "request_too_large"),
    "context_overflow": ("invalid_request_error", "context_length_exceeded"),
    "engine_down": ("server_error", "engine_unavailable"),
    "engine_timeout": ("server_error", "timeout"),
    "engine_error": ("server_error", "engine_error"),
}


class OpenAIChat:
    name: Provider = "openai_chat"
    tool_call_prefix = "call_"
    json_body = staticmethod(respond.json_body)
    sse_body = staticmethod(respond.sse_body)
    writer: type[Writer] = ChatWriter
    bare_keepalive = KEEPALIVE

    def route(self, method: str, path: str) -> Route | None:
        return Route("openai_chat", "generate") if method == "POST" and path.endswith("/chat/completions") else None

    def claims_headers(self, headers: Mapping[str, str]) -> bool:
        return False  # a Bearer token: every provider's SDK may send one

    def claims_body(self, body: dict[str, Any]) -> bool:
        return "messages" in body

    def disables_parallel(self, tool_choice: Any) -> bool:
        return False

    def normalize(self, route: Route, body: dict[str, Any]) -> Normalized:
        return normalize.normalize(body)

    def error_body(self, err: ProxyError) -> dict[str, Any]:
        etype, code = _ERROR_TYPE[err.kind]
        return {"error": {"message": err.message, "type": etype, "param": err.param, "code": code}}

    def stream_error(self, err: ProxyError, completion_id: str, model: str) -> bytes:
        return sse(None, self.error_body(err))

    def models(self, name: str, context_length: int, max_new_tokens: int) -> dict[str, Any]:
        return {"object": "list", "data": [{"id": name, "object": "model", "created": 0, "owned_by": "polar-hpc"}]}

    def token_count(self, n: int) -> dict[str, Any]:
        return {"input_tokens": n}


API: ProviderAPI = OpenAIChat()
