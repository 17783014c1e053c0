"""OpenAI Responses (``/responses``): detection, errors (OpenAI's envelope; in a stream ``response.failed``),
model list and token counts; the request is read by ``normalize``, the answer built by ``respond`` (JSON,
synthesized stream) and ``stream`` (live stream)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from polar_hpc.proxy.errors import ProxyError
from polar_hpc.proxy.providers.base import ProviderAPI, Route
from polar_hpc.proxy.providers.openai_chat import openai_error, openai_models
from polar_hpc.proxy.providers.openai_responses import normalize, respond
from polar_hpc.proxy.providers.openai_responses.stream import ResponsesWriter
from polar_hpc.proxy.providers.reply import KEEPALIVE, Reply
from polar_hpc.proxy.providers.request import Normalized, ReplyOptions
from polar_hpc.proxy.providers.writer import Writer
from polar_hpc.wire.records import Provider


class OpenAIResponses:
    name: Provider = "openai_responses"
    tool_call_prefix = "call_"
    bare_keepalive = KEEPALIVE

    def route(self, method: str, path: str) -> Route | None:
        return Route("openai_responses", "generate") if method == "POST" and path.endswith("/responses") else None

    def claims_headers(self, headers: Mapping[str, str]) -> bool:
        return False  # a Bearer token: every provider's SDK may send one

    def claims_body(self, body: dict[str, Any]) -> bool:
        return "input" in body or "instructions" in body

    def normalize(self, route: Route, body: dict[str, Any]) -> Normalized:
        return normalize.normalize(body)

    def json_body(self, reply: Reply) -> bytes:
        return respond.json_body(reply)

    def sse_body(self, reply: Reply) -> bytes:
        return respond.sse_body(reply)

    def writer(self, completion_id: str, model: str, created: int, prompt_tokens: int,
               options: ReplyOptions) -> Writer:
        return ResponsesWriter(completion_id, model, created, prompt_tokens, options)

    def error_body(self, err: ProxyError) -> dict[str, Any]:
        return openai_error(err)

    def stream_error(self, err: ProxyError, completion_id: str, model: str) -> bytes:
        inner = self.error_body(err)["error"]
        return respond.failed_sse(completion_id, model, int(time.time()),
                                  {"code": inner["code"] or inner["type"], "message": err.message})

    def models(self, name: str, context_length: int, max_new_tokens: int) -> dict[str, Any]:
        return openai_models(name)

    def token_count(self, n: int) -> dict[str, Any]:
        return {"input_tokens": n}


API: ProviderAPI = OpenAIResponses()
