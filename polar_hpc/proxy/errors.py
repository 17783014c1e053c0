"""Errors the proxy answers with, in each provider's envelope and status code.

``ProxyError`` carries a kind (bad_request, auth, not_found, too_large, context_overflow, engine_down,
engine_timeout, engine_error, internal); ``error_body`` shapes it the way that provider's clients parse it.
A context overflow uses the wording and codes harnesses match on (OpenAI ``context_length_exceeded``,
Anthropic ``prompt is too long``, Google ``exceeds the maximum number of tokens``).
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

from polar_hpc.wire.records import CompletionRecord, Provider

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

_OPENAI_TYPE = {
    "bad_request": ("invalid_request_error", None),
    "auth": ("invalid_request_error", "invalid_api_key"),
    "not_found": ("invalid_request_error", "model_not_found"),
    "too_large": ("invalid_request_error", "request_too_large"),
    "context_overflow": ("invalid_request_error", "context_length_exceeded"),
    "engine_down": ("server_error", "engine_unavailable"),
    "engine_timeout": ("server_error", "timeout"),
    "engine_error": ("server_error", "engine_error"),
}

_ANTHROPIC_TYPE = {
    "bad_request": "invalid_request_error",
    "auth": "authentication_error",
    "not_found": "not_found_error",
    "too_large": "request_too_large",
    "context_overflow": "invalid_request_error",
    "engine_down": "overloaded_error",
    "engine_timeout": "timeout_error",
    "engine_error": "api_error",
}

_GOOGLE_STATUS = {
    "bad_request": "INVALID_ARGUMENT",
    "auth": "UNAUTHENTICATED",
    "not_found": "NOT_FOUND",
    "too_large": "INVALID_ARGUMENT",
    "context_overflow": "INVALID_ARGUMENT",
    "engine_down": "UNAVAILABLE",
    "engine_timeout": "DEADLINE_EXCEEDED",
    "engine_error": "INTERNAL",
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


def error_body(provider: Provider, err: ProxyError) -> dict[str, Any]:
    """The JSON error object for ``provider`` (the body of an error response or an SSE error event)."""
    if provider == "anthropic":
        return {"type": "error", "error": {"type": _ANTHROPIC_TYPE[err.kind], "message": err.message}}
    if provider == "google":
        return {"error": {"code": err.status, "message": err.message, "status": _GOOGLE_STATUS[err.kind]}}
    etype, code = _OPENAI_TYPE[err.kind]
    return {"error": {"message": err.message, "type": etype, "param": err.param, "code": code}}


_ENC = msgspec.json.Encoder()


def error_bytes(provider: Provider, err: ProxyError) -> bytes:
    return _ENC.encode(error_body(provider, err))
