"""OpenAI Responses (``/responses``): detection and the in-stream error (``response.failed``); the rest of what the
proxy answers outside a reply (errors, model list, token counts) is OpenAI's, as for Chat. The request is read by
``normalize``, the answer built by ``respond`` (JSON, synthesized stream) and ``stream`` (live stream)."""

from __future__ import annotations

import time
from typing import Any

from polar_hpc.providers.base import ProviderAPI, Route
from polar_hpc.providers.errors import ProxyError
from polar_hpc.providers.openai_chat import OpenAIChat
from polar_hpc.providers.openai_responses import normalize, respond
from polar_hpc.providers.openai_responses.stream import ResponsesWriter
from polar_hpc.providers.request import Normalized
from polar_hpc.wire.calls import Provider


class OpenAIResponses(OpenAIChat):
    name: Provider = "openai_responses"
    json_body = staticmethod(respond.json_body)
    sse_body = staticmethod(respond.sse_body)
    writer = ResponsesWriter

    def route(self, method: str, path: str) -> Route | None:
        return Route("openai_responses", "generate") if method == "POST" and path.endswith("/responses") else None

    def claims_body(self, body: dict[str, Any]) -> bool:
        return "input" in body or "instructions" in body

    def normalize(self, route: Route, body: dict[str, Any]) -> Normalized:
        return normalize.normalize(body)

    def stream_error(self, err: ProxyError, completion_id: str, model: str) -> bytes:
        inner = self.error_body(err)["error"]
        return respond.failed_sse(completion_id, model, int(time.time()),
                                  {"code": inner["code"] or inner["type"], "message": err.message})


API: ProviderAPI = OpenAIResponses()
