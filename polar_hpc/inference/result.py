"""The result of one ``/generate`` call, whole or streamed (the engine and its streams both build it)."""

from __future__ import annotations

import msgspec
import numpy as np

from polar_hpc.inference.protocol import FinishKind


class GenerateResult(msgspec.Struct, kw_only=True):
    """One completed ``/generate`` call. Arrays are numpy: ``output_ids`` int32, ``output_logprobs`` float32.

    The ids come from ``meta_info.output_token_logprobs`` (the stop token, when one was sampled, is included).
    """

    output_ids: np.ndarray
    output_logprobs: np.ndarray
    finish_reason: FinishKind
    matched_stop: int | str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    weight_version: str | None = None
    server: str = ""
    rid: str = ""
    text: str = ""
    abort_message: str | None = None
    attempts: int = 1
