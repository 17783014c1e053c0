"""The subset of SGLang's native ``/generate`` protocol we speak, as msgspec Structs.

Shared by the engine client (encodes requests, decodes responses) and the reference server (the reverse).
Field names and shapes follow SGLang 0.5.23 (``sglang/api/v1/api_types.py``); the contract tests validate
both directions against that schema. Unknown response keys are ignored; ``None`` fields are never sent
(``sampling_params`` in SGLang rejects unknown keys, and ``null`` is not always accepted).
"""

from __future__ import annotations

import itertools
import os
import secrets
from typing import Any, Literal

import msgspec

from polar_hpc.assets.versions import SGLANG_VERSION

__all__ = ["SGLANG_VERSION", "new_rid"]

_rid_prefix = secrets.token_hex(8)
_rid_seq = itertools.count()


def new_rid() -> str:
    """A request id (``rid``) no other call to a server shares, from any client: a random prefix per process
    (drawn again in a forked child) and a counter, so that no random bytes are drawn per call."""
    return f"{_rid_prefix}{next(_rid_seq):08x}"


def _new_rid_prefix() -> None:
    global _rid_prefix, _rid_seq
    _rid_prefix, _rid_seq = secrets.token_hex(8), itertools.count()


os.register_at_fork(after_in_child=_new_rid_prefix)


DEFAULT_TEMPERATURE = 1.0
DEFAULT_TOP_P = 1.0
DEFAULT_TOP_K = -1
"""What ``/generate`` applies for a ``sampling_params`` key left out (SGLang's ``SamplingParams``; ``/generate``
does not apply the model's generation_config); the reference server's defaults are these."""


class WireSampling(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``sampling_params`` of ``POST /generate`` (only keys SGLang knows)."""

    max_new_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    stop: list[str] | None = None
    stop_token_ids: list[int] | None = None
    ignore_eos: bool | None = None
    skip_special_tokens: bool | None = None
    spaces_between_special_tokens: bool | None = None
    no_stop_trim: bool | None = None
    stream_interval: int | None = None
    sampling_seed: int | None = None


class GenerateRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``POST /generate`` body for one prompt given as token ids."""

    input_ids: list[int] | None = None
    text: str | None = None
    sampling_params: WireSampling = msgspec.field(default_factory=WireSampling)
    rid: str | None = None
    return_logprob: bool | None = None
    logprob_start_len: int | None = None
    top_logprobs_num: int | None = None
    return_text_in_logprobs: bool | None = None
    stream: bool | None = None


class FinishStop(msgspec.Struct, tag_field="type", tag="stop", kw_only=True):
    matched: int | str | list[Any] | None = None


class FinishLength(msgspec.Struct, tag_field="type", tag="length", kw_only=True):
    length: int = 0


class FinishAbort(msgspec.Struct, tag_field="type", tag="abort", kw_only=True, omit_defaults=True):
    message: str | None = None
    status_code: int | None = None
    err_type: str | None = None


FinishReason = FinishStop | FinishLength | FinishAbort
FinishKind = Literal["stop", "length", "abort"]
"""A finished call's reason by name (the tag of its :data:`FinishReason`)."""


def finish_fields(fr: FinishReason) -> tuple[FinishKind, int | str | None, str | None]:
    """``(reason, matched_stop, abort_message)`` of a finish reason (one mapping for whole and streamed calls)."""
    if isinstance(fr, FinishStop):
        return "stop", fr.matched if isinstance(fr.matched, int | str) else None, None
    if isinstance(fr, FinishLength):
        return "length", None, None
    return "abort", None, fr.message


LogprobEntry = tuple[float | None, int, str | None]
"""``[logprob, token_id, text]``; text is ``null`` unless ``return_text_in_logprobs``."""


class MetaInfo(msgspec.Struct, kw_only=True):
    id: str
    finish_reason: FinishReason | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    weight_version: str | None = None
    e2e_latency: float | None = None
    output_token_logprobs: list[LogprobEntry] | None = None
    input_token_logprobs: list[LogprobEntry] | None = None
    """With ``logprob_start_len`` = k >= 0: one entry per prompt position from k on; the first has a ``null``
    logprob (SGLang shifts them by one: position i holds the logprob of token i given the tokens before it)."""
    output_top_logprobs: list[list[LogprobEntry] | None] | None = None
    """With ``top_logprobs_num`` = k > 0: per output token, the k most likely tokens at that position (most likely
    first), each ``[logprob, token_id, text]`` under the distribution the sampled token's logprob is from."""


class GenerateResponse(msgspec.Struct, kw_only=True, omit_defaults=True):
    text: str = ""
    output_ids: list[int] = msgspec.field(default_factory=list)
    meta_info: MetaInfo


class StreamMeta(msgspec.Struct, kw_only=True, gc=False):
    """What the streaming client reads of a chunk's ``meta_info`` (the other keys are skipped undecoded).
    ``gc=False`` (as :class:`StreamChunk`): a chunk holds no cycles, and thousands of tracked objects per
    streamed call would set off the garbage collector again and again (half of the decoding time)."""

    finish_reason: FinishReason | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    weight_version: str | None = None
    output_token_logprobs: list[LogprobEntry] | None = None
    output_top_logprobs: list[list[LogprobEntry] | None] | None = None


class StreamChunk(msgspec.Struct, kw_only=True, gc=False):
    """One chunk of a streamed ``/generate`` as the client reads it (a :class:`GenerateResponse`, fewer keys)."""

    text: str = ""
    meta_info: StreamMeta


class ErrorBody(msgspec.Struct, kw_only=True, omit_defaults=True):
    message: str
    type: str | None = None
    code: int | None = None


class ErrorResponse(msgspec.Struct, kw_only=True):
    """SGLang's error envelope for ``/generate``: ``{"error": {"message": ...}}``."""

    error: ErrorBody | str


class AbortRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    rid: str = ""
    abort_all: bool = False


class PauseRequest(msgspec.Struct, kw_only=True, omit_defaults=True):
    mode: Literal["abort", "retract", "in_place"] = "abort"


class UpdateWeightsFromDisk(msgspec.Struct, kw_only=True, omit_defaults=True):
    model_path: str
    load_format: str | None = None
    weight_version: str | None = None
    abort_all_requests: bool = False


class UpdateWeightsResult(msgspec.Struct, kw_only=True, omit_defaults=True):
    success: bool
    message: str = ""
    num_paused_requests: int = 0


class ModelInfo(msgspec.Struct, kw_only=True, omit_defaults=True):
    """``GET /model_info`` (the keys we read; SGLang sends more)."""

    model_path: str
    tokenizer_path: str | None = None
    is_generation: bool = True
    weight_version: str | None = None
    served_model_name: str | None = None
    context_length: int | None = None
    """Not sent by SGLang's ``/model_info`` (it is in ``/get_server_info``); the reference server adds it."""
