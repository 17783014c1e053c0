"""The result of one ``/generate`` call, whole or streamed (the engine and its streams both build it)."""

from __future__ import annotations

import msgspec
import numpy as np

from polar_hpc.engine.protocol import FinishKind, LogprobEntry

NO_TOP_ID = -1
"""``output_top_ids`` of a slot the server did not fill (its logprob is NaN)."""


def no_top(n: int = 0, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Top-k arrays of ``n`` tokens with no entry: ids ``NO_TOP_ID``, logprobs NaN."""
    return np.full((n, k), NO_TOP_ID, dtype=np.int32), np.full((n, k), np.nan, dtype=np.float32)


def top_arrays(rows: list[list[LogprobEntry] | None] | None, n: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """SGLang's ``output_top_logprobs`` (per output token, up to ``k`` ``[logprob, id, text]``) as (ids, logprobs)
    arrays of shape (n, k); a missing row or slot is ``NO_TOP_ID`` / NaN. ``k`` 0: empty (n, 0)."""
    ids, lps = no_top(n, k)
    for i, row in enumerate((rows or [])[:n]):
        for j, e in enumerate((row or [])[:k]):
            ids[i, j] = e[1]
            lps[i, j] = np.nan if e[0] is None else e[0]
    return ids, lps


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
    output_top_ids: np.ndarray = msgspec.field(default_factory=lambda: no_top()[0])
    """int32 (n, k): with ``inference.top_logprobs`` = k > 0, the k most likely token ids at each sampled position
    (SGLang's ``output_top_logprobs``, most likely first); shape (n, 0) or (0, 0) when not asked for."""
    output_top_logprobs: np.ndarray = msgspec.field(default_factory=lambda: no_top()[1])
    """float32 (n, k): their logprobs."""
