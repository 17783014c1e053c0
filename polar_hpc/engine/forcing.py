"""Teacher forcing on SGLang's ``/generate``: the model's logprobs of given tokens after a prompt, one prefill.

The request sends ``prompt ‖ forced`` as ``input_ids`` with ``return_logprob``, ``logprob_start_len`` = len(prompt) - 1
and ``max_new_tokens`` = 0 (the smallest SGLang accepts: ``SamplingParams.verify`` refuses only negatives).
SGLang answers ``meta_info.input_token_logprobs`` from that position on, shifted by one: the entry of position i
holds log p(token i | tokens before it), the first entry (the prompt's last token) has a ``null`` logprob.
Starting one position early therefore gives exactly one real logprob per forced token, and caps the radix-cache
reuse at the prompt only (``max_prefix_len = min(max_prefix_len, logprob_start_len)``).
"""

from __future__ import annotations

import msgspec
import numpy as np

from polar_hpc.engine.errors import EngineError
from polar_hpc.engine.protocol import GenerateRequest, GenerateResponse, WireSampling

FORCING_MAX_NEW_TOKENS = 0


class ForcedResult(msgspec.Struct, kw_only=True):
    """The engine's logprobs (float32, one per forced token) of one teacher-forced continuation."""

    logprobs: np.ndarray
    prompt_tokens: int = 0
    cached_tokens: int = 0
    weight_version: str | None = None
    server: str = ""
    rid: str = ""
    attempts: int = 1


def forcing_request(prompt: list[int], forced: list[int], *, rid: str | None = None) -> GenerateRequest:
    if not prompt or not forced:
        raise EngineError(
            f"teacher forcing needs a non-empty prompt and forced ids, got {len(prompt)} and {len(forced)} ids"
        )
    return GenerateRequest(
        input_ids=[*prompt, *forced],
        sampling_params=WireSampling(max_new_tokens=FORCING_MAX_NEW_TOKENS, skip_special_tokens=False),
        rid=rid,
        return_logprob=True,
        logprob_start_len=len(prompt) - 1,
        stream=False,
    )


def forced_logprobs(resp: GenerateResponse, prompt_len: int, forced: list[int], where: str) -> np.ndarray:
    """The forced tokens' logprobs out of a response to :func:`forcing_request`; EngineError naming ``where``."""
    entries = resp.meta_info.input_token_logprobs
    if entries is None:
        raise EngineError(f"{where}: no meta_info.input_token_logprobs; does the server honour logprob_start_len?")
    if len(entries) != len(forced) + 1:
        raise EngineError(
            f"{where}: expected {len(forced) + 1} input_token_logprobs (from position {prompt_len - 1}), "
            f"got {len(entries)}"
        )
    got = [e[1] for e in entries[1:]]
    if got != forced:
        bad = next(i for i, (a, b) in enumerate(zip(got, forced, strict=True)) if a != b)
        raise EngineError(f"{where}: input_token_logprobs[{bad + 1}] is token {got[bad]}, expected {forced[bad]}")
    missing = next((i for i, e in enumerate(entries[1:]) if e[0] is None), None)
    if missing is not None:
        raise EngineError(f"{where}: forced token {missing} (id {forced[missing]}) came back without a logprob")
    return np.fromiter((e[0] for e in entries[1:]), dtype=np.float32, count=len(forced))
