"""How many tokens one call may sample: the one place the context length and the max-new-tokens limits meet.

The proxy decides a call's limit with :func:`new_token_limit` (the client's ``max_tokens``, the served maximum,
the room the prompt leaves); the engine client calls the same function on what it is given, so a prompt that
leaves no room fails before any request is sent, whoever calls the engine.
"""

from __future__ import annotations

from polar_hpc.engine.errors import ContextOverflow


def new_token_limit(prompt_tokens: int, context_length: int | None, *limits: int | None) -> int:
    """The smallest of ``limits`` (``None``: no limit) and the room ``prompt_tokens`` leave in ``context_length``
    (``None``: unknown, no room check). Raises :class:`ContextOverflow` when the prompt leaves no room for a token;
    with neither a limit nor a context length there is nothing to decide (``ValueError``)."""
    caps = [x for x in limits if x is not None]
    if context_length is not None:
        room = context_length - prompt_tokens
        if room < 1:
            raise ContextOverflow(
                f"the prompt has {prompt_tokens} tokens; the model's context length is {context_length} tokens, "
                "which leaves no room for a new token",
                prompt_tokens=prompt_tokens,
                context_length=context_length,
            )
        caps.append(room)
    if not caps:
        raise ValueError("new_token_limit needs a limit or a context length, got neither")
    return min(caps)
