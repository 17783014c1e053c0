"""Provider request → canonical chat request (``polar_hpc.wire.records.CanonicalRequest``)."""

from __future__ import annotations

from typing import Any

from polar_hpc.proxy.detect import Route
from polar_hpc.proxy.normalize import anthropic, google, openai_chat, openai_responses
from polar_hpc.proxy.normalize.common import Normalized, ReplyOptions

__all__ = ["Normalized", "ReplyOptions", "normalize"]


def normalize(route: Route, body: dict[str, Any]) -> Normalized:
    if route.provider == "anthropic":
        return anthropic.normalize(body)
    if route.provider == "openai_responses":
        return openai_responses.normalize(body)
    if route.provider == "google":
        return google.normalize(body, route.path_model, route.stream_path)
    return openai_chat.normalize(body)
