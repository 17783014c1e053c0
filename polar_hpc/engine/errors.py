"""Errors of the engine client. Every message names the server, the request id and what was seen."""

from __future__ import annotations


class EngineError(RuntimeError):
    """A generation request failed in a way retries will not fix (bad request, malformed response)."""


class ContextOverflow(EngineError):
    """The prompt (plus at least one new token) does not fit in the model's context length."""

    def __init__(self, message: str, *, prompt_tokens: int, context_length: int | None) -> None:
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context_length = context_length


class EngineUnavailable(EngineError):
    """No server answered: every attempt hit a connection error or a 5xx until retries or the deadline ran out."""


class EngineTimeout(EngineError, TimeoutError):
    """The call's deadline passed; the request was aborted on the server."""
