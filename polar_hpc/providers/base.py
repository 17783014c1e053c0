"""What a provider API is to the proxy: the ``ProviderAPI`` Protocol each provider's package implements, and the
``Route`` a request is answered by."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

import msgspec

from polar_hpc.providers.errors import ProxyError
from polar_hpc.providers.reply import Reply
from polar_hpc.providers.request import Normalized, ReplyOptions
from polar_hpc.providers.writer import Writer
from polar_hpc.wire.calls import Provider

Op = Literal["generate", "count_tokens", "models", "health"]


class Route(msgspec.Struct, frozen=True):
    provider: Provider
    op: Op
    stream_path: bool = False
    """Google ``:streamGenerateContent``: streaming is decided by the path, not the body."""
    path_model: str | None = None


class ProviderAPI(Protocol):
    """Everything about one provider's wire format. Each ``polar_hpc.providers.<name>`` package has one
    (``API``); ``polar_hpc.providers.PROVIDERS`` holds them, keyed by the ``Provider`` literal."""

    name: Provider
    tool_call_prefix: str
    """How the ids of the tool calls the proxy makes start (``toolu_``, ``call_``)."""
    bare_keepalive: bytes
    """A keep-alive sent before any of the provider's own events (a synthesized stream waiting on the engine)."""

    def route(self, method: str, path: str) -> Route | None:
        """The route when ``path`` (no trailing ``/``) is one of this provider's, else None."""
        ...

    def claims_headers(self, headers: Mapping[str, str]) -> bool:
        """The headers are this provider's SDK's (its API key header, its client header)."""
        ...

    def claims_body(self, body: dict[str, Any]) -> bool:
        """A body on a path no provider owns has this provider's shape."""
        ...

    def disables_parallel(self, tool_choice: Any) -> bool:
        """The request's ``tool_choice`` switches parallel tool calls off (``parallel_tool_calls: false`` aside)."""
        ...

    def normalize(self, route: Route, body: dict[str, Any]) -> Normalized: ...

    def json_body(self, reply: Reply) -> bytes: ...

    def sse_body(self, reply: Reply) -> bytes:
        """The whole reply as the provider's event stream (a synthesized stream)."""
        ...

    def writer(self, completion_id: str, model: str, created: int, prompt_tokens: int,
               options: ReplyOptions) -> Writer:
        """The provider's event writer for a reply that is still being sampled."""
        ...

    def error_body(self, err: ProxyError) -> dict[str, Any]:
        """The JSON error object (the body of an error response), the way the provider's clients parse it."""
        ...

    def stream_error(self, err: ProxyError, completion_id: str, model: str) -> bytes:
        """The provider's in-stream error event, after the stream's head went out."""
        ...

    def models(self, name: str, context_length: int, max_new_tokens: int) -> dict[str, Any]:
        """The model list naming the one served model."""
        ...

    def token_count(self, n: int) -> dict[str, Any]:
        """The answer of a count-tokens call."""
        ...
