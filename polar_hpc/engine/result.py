"""The result of one ``/generate`` call, whole or streamed (the engine and its streams both build it)."""

from __future__ import annotations

import msgspec
import numpy as np

from polar_hpc.engine.errors import EngineError
from polar_hpc.engine.protocol import FinishKind, GenerateResponse, LogprobEntry, finish_fields
from polar_hpc.log import get_logger

log = get_logger("engine")

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


def whole_result(resp: GenerateResponse, url: str, rid: str, attempts: int, top_k: int) -> GenerateResult:
    """The result of a non-streaming ``/generate`` answer (raises :class:`EngineError` on one that breaks the
    contract: a sampled token without its logprob, counts that disagree, no finish reason)."""
    meta = resp.meta_info
    entries = meta.output_token_logprobs
    if entries is None:
        raise EngineError(f"{url} sent no meta_info.output_token_logprobs (rid {rid}); is return_logprob ignored?")
    if len(entries) != meta.completion_tokens:
        raise EngineError(
            f"{url} (rid {rid}): output_token_logprobs has {len(entries)} entries but completion_tokens is "
            f"{meta.completion_tokens}"
        )
    missing = next((i for i, e in enumerate(entries) if e[0] is None), None)
    if missing is not None:
        raise EngineError(
            f"{url} (rid {rid}): output_token_logprobs[{missing}] (token id {entries[missing][1]}) has no "
            "logprob; a sampled token without its logprob cannot be trained on"
        )
    ids = np.fromiter((e[1] for e in entries), dtype=np.int32, count=len(entries))
    lps = np.fromiter((e[0] for e in entries), dtype=np.float32, count=len(entries))
    if resp.output_ids and len(resp.output_ids) == len(ids) and resp.output_ids != ids.tolist():
        log.warning("%s (rid %s): output_ids differ from the ids in output_token_logprobs; using the latter", url, rid)
    if meta.finish_reason is None:
        raise EngineError(f"{url} (rid {rid}) returned a finished response without a finish_reason")
    reason, matched, abort_message = finish_fields(meta.finish_reason)
    top_ids, top_lps = top_arrays(meta.output_top_logprobs, len(ids), top_k)
    return GenerateResult(
        output_ids=ids,
        output_logprobs=lps,
        output_top_ids=top_ids,
        output_top_logprobs=top_lps,
        finish_reason=reason,
        matched_stop=matched,
        prompt_tokens=meta.prompt_tokens,
        completion_tokens=meta.completion_tokens,
        cached_tokens=meta.cached_tokens,
        weight_version=meta.weight_version,
        server=url,
        rid=rid,
        text=resp.text,
        abort_message=abort_message,
        attempts=attempts,
    )
