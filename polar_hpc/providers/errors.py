"""Errors the proxy answers with, in each provider's envelope and status code.

``ProxyError`` carries a kind (bad_request, auth, not_found, too_large, context_overflow, engine_down,
engine_timeout, engine_error) and its status code; each provider's ``ProviderAPI.error_body`` shapes it the way
that provider's clients parse it.
A context overflow uses the wording and codes harnesses match on (OpenAI ``context_length_exceeded``,
Anthropic ``prompt is too long``, Google ``exceeds the maximum number of tokens``).
"""

from __future__ import annotations

from typing import Literal

from polar_hpc.wire.calls import CompletionRecord

ErrorKind = Literal[
    "bad_request",
    "auth",
    "not_found",
    "too_large",
    "context_overflow",
    "engine_down",
    "engine_timeout",
    "engine_error",
]

_STATUS: dict[str, int] = {
    "bad_request": 400,
    "auth": 401,
    "not_found": 404,
    "too_large": 413,
    "context_overflow": 400,
    "engine_down": 503,
    "engine_timeout": 504,
    "engine_error": 502,
}

class ProxyError(Exception):
    def __init__(self, kind: ErrorKind, message: str, *, param: str | None = None) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message = message
        self.param = param

    @property
    def status(self) -> int:
        return _STATUS[self.kind]


class Failed(Exception):
    """A call that failed after its prompt was built: the error to answer with and the record to keep."""

    def __init__(self, error: ProxyError, record: CompletionRecord) -> None:
        super().__init__(error.message)
        self.error = error
        self.record = record


def bad_request(message: str, path: str | None = None) -> ProxyError:
    return ProxyError("bad_request", f"{message} (at {path})" if path else message, param=path)


def context_overflow(prompt_tokens: int, context_length: int) -> ProxyError:
    return ProxyError(
        "context_overflow",
        f"prompt is too long: {prompt_tokens} tokens > {context_length} maximum. This model's maximum context "
        f"length is {context_length} tokens, however your messages resulted in {prompt_tokens} tokens "
        f"(input token count exceeds the maximum number of tokens allowed). Please reduce the length of the "
        f"messages.",
        param="messages",
    )
