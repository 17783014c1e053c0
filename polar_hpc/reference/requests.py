"""Decoding and checking ``/generate`` bodies on the reference server, with SGLang's error texts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from polar_hpc.engine.protocol import DEFAULT_TEMPERATURE, DEFAULT_TOP_K, DEFAULT_TOP_P
from polar_hpc.reference.model import SamplingSpec

if TYPE_CHECKING:
    from polar_hpc.reference.scheduler import Generation


class BadRequest(ValueError):
    """Answered as HTTP 400 ``{"error": {"message": ...}}``."""


class ServerSampling(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Every key of SGLang's ``sampling_params``; unknown keys are rejected as SGLang does.
    Keys the reference server cannot honour are refused when set to a non-default value."""

    max_new_tokens: int | None = None
    """SGLang's default is 128 (the server's ``max_new_default``)."""
    temperature: float = DEFAULT_TEMPERATURE
    top_p: float = DEFAULT_TOP_P
    top_k: int = DEFAULT_TOP_K
    min_p: float = 0.0
    stop: str | list[str] | None = None
    stop_token_ids: list[int] | None = None
    stop_regex: str | list[str] | None = None
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    repetition_penalty: float = 1.0
    min_new_tokens: int = 0
    n: int = 1
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    spaces_between_special_tokens: bool = True
    no_stop_trim: bool = False
    json_schema: str | None = None
    regex: str | None = None
    ebnf: str | None = None
    structural_tag: str | None = None
    stream_interval: int | None = None
    logit_bias: dict[str, float] | None = None
    sampling_seed: int | None = None
    custom_params: dict[str, Any] | None = None
    beam_width: int | None = None
    watermark: Any = None
    choice: Any = None


_UNSUPPORTED_DEFAULTS: dict[str, Any] = {
    "stop_regex": None,
    "frequency_penalty": 0.0,
    "presence_penalty": 0.0,
    "repetition_penalty": 1.0,
    "min_new_tokens": 0,
    "n": 1,
    "json_schema": None,
    "regex": None,
    "ebnf": None,
    "structural_tag": None,
    "logit_bias": None,
    "custom_params": None,
    "beam_width": None,
    "watermark": None,
    "choice": None,
}


class ServerGenerateRequest(msgspec.Struct, kw_only=True):
    """Top-level ``/generate`` body; unknown top-level keys are ignored (as SGLang does)."""

    text: str | list[str] | None = None
    input_ids: list[Any] | None = None
    """``list[int]``, or ``list[list[int]]`` for a batch (refused)."""
    input_embeds: Any = None
    sampling_params: ServerSampling | list[ServerSampling] | None = None
    rid: str | list[str] | None = None
    return_logprob: bool | list[bool] | None = None
    logprob_start_len: int | list[int] | None = None
    top_logprobs_num: int | list[int] | None = None
    token_ids_logprob: Any = None
    return_text_in_logprobs: bool = False
    stream: bool = False


def to_spec(p: ServerSampling | None, *, max_new_default: int) -> SamplingSpec:
    p = p or ServerSampling()
    for key, default in _UNSUPPORTED_DEFAULTS.items():
        value = getattr(p, key)
        if value != default:
            raise BadRequest(f"sampling_params.{key}={value!r} is not supported by the reference server "
                             f"(only {default!r})")
    if p.temperature < 0:
        raise BadRequest(f"sampling_params.temperature must be >= 0, got {p.temperature}")
    if not 0.0 < p.top_p <= 1.0:
        raise BadRequest(f"sampling_params.top_p must be in (0, 1], got {p.top_p}")
    if p.top_k == 0 or p.top_k < -1:
        raise BadRequest(f"sampling_params.top_k must be -1 (off) or >= 1, got {p.top_k}")
    if not 0.0 <= p.min_p <= 1.0:
        raise BadRequest(f"sampling_params.min_p must be in [0, 1], got {p.min_p}")
    max_new = max_new_default if p.max_new_tokens is None else p.max_new_tokens
    if max_new < 0:
        raise BadRequest(f"sampling_params.max_new_tokens must be >= 0, got {max_new}")
    stop = [p.stop] if isinstance(p.stop, str) else list(p.stop or [])
    if len(stop) > 32:
        raise BadRequest(f"sampling_params.stop has {len(stop)} strings; at most 32 are allowed")
    return SamplingSpec(
        max_new_tokens=max_new,
        temperature=p.temperature,
        top_p=p.top_p,
        top_k=p.top_k if p.top_k < (1 << 30) else -1,
        min_p=p.min_p,
        stop=stop,
        stop_token_ids=set(p.stop_token_ids or []),
        ignore_eos=p.ignore_eos,
        skip_special_tokens=p.skip_special_tokens,
        no_stop_trim=p.no_stop_trim,
        seed=p.sampling_seed,
    )


def single(value: Any, name: str) -> Any:
    if isinstance(value, list):
        raise BadRequest(f"{name}: batched requests are not supported by the reference server; "
                         "send one prompt per request")
    return value


def prompt_ids(input_ids: list[Any]) -> list[int]:
    if any(isinstance(x, list) for x in input_ids):
        raise BadRequest("input_ids: batched requests are not supported by the reference server; "
                         "send one prompt per request")
    if not input_ids or not all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in input_ids):
        raise BadRequest("input_ids must be a non-empty list of non-negative token ids")
    return list(input_ids)


def check_context(n_prompt: int, max_new: int, context_length: int) -> None:
    if n_prompt >= context_length:
        raise BadRequest(
            f"The input ({n_prompt} tokens) is longer than the model's context length ({context_length} tokens)."
        )
    if n_prompt + max_new > context_length:
        raise BadRequest(
            f"Requested token count exceeds the model's maximum context length of {context_length} tokens. "
            f"You requested a total of {n_prompt + max_new} tokens: {n_prompt} tokens from the input messages and "
            f"{max_new} tokens for the completion. Please reduce the number of tokens in the input messages or "
            "the completion to fit within the limit."
        )


def forcing_start(start: int | None, sampling: Any, n_prompt: int) -> int | None:
    """``logprob_start_len`` k >= 0 is served for teacher forcing only: ``max_new_tokens`` 0, k < len(input_ids)."""
    if start is None or start < 0:
        return None
    max_new = sampling.max_new_tokens if isinstance(sampling, ServerSampling) else None
    if max_new != 0:
        raise BadRequest("logprob_start_len >= 0 (prompt logprobs) is supported by the reference server only with "
                         f"sampling_params.max_new_tokens = 0 (teacher forcing), got max_new_tokens={max_new}")
    if start >= n_prompt:
        raise BadRequest(f"logprob_start_len ({start}) must be less than the number of input tokens ({n_prompt})")
    return start


def input_entries(gen: Generation) -> list[tuple[float | None, int, str | None]]:
    """``meta_info.input_token_logprobs`` of a teacher-forcing generation: ``[logprob, id, null]`` per position."""
    start = gen.score_from or 0
    return [(lp, tok, None) for lp, tok in zip(gen.input_logprobs, gen.input_ids[start:], strict=True)]
