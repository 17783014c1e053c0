"""What the viewer shows of one session, built from its SessionResult: header, the conversation of each chain as
the harness sent it, the chain's tokens (prompt, sampled, masked) with logprobs, the evaluation and the stage
timings in pipeline order. The HTML page and ``shards show`` both render this."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

import msgspec
import numpy as np

from polar_hpc.export.chat import chat_message, chat_tools
from polar_hpc.log import get_logger
from polar_hpc.report.outcome import failure_reason
from polar_hpc.report.types import stage_order
from polar_hpc.util.fs import unique_name
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir
from polar_hpc.wire.shardmeta import to_shard_metadata
from polar_hpc.wire.traces import Trace, TraceStatus

log = get_logger("view")
SegmentKind = Literal["prompt", "sampled", "inserted"]
CHAIN_KEYS = ("chain_index", "parent_chain", "fork_token", "fork_completion_id", "break_reason",
              "retokenized_tokens")


class Segment(msgspec.Struct, array_like=True):
    """A run of tokens ``[start, end)`` of one kind: the prompt, a sampled turn (trainable), or tokens inserted
    between turns (tool output, the next prompt's framing; masked)."""

    kind: SegmentKind
    start: int
    end: int


class TraceView(msgspec.Struct, kw_only=True):
    index: int
    chain: dict[str, Any]
    """Chain boundary facts from the builder (chain index, parent, fork token, why it broke from its parent)."""
    finish_reason: str
    reward: float
    policy: str
    """``sample`` (the policy's tokens) or ``oracle`` (forced gold tokens)."""
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    ids: list[int]
    """prompt ‖ response."""
    trainable: list[int]
    """1 where the loss applies (sampled tokens), per id."""
    logprobs: list[float | None]
    """Behaviour-policy logprob per id; None over the prompt and inserted tokens."""
    segments: list[Segment]
    prompt_tokens: int
    trainable_tokens: int


class SessionView(msgspec.Struct, kw_only=True):
    key: str
    page: str
    """File name of the session's page (unique per key)."""
    task_id: str
    sample_index: int
    attempt: int
    status: str
    reward: float
    accepted: bool
    reason: str | None
    error: str | None
    harness: str
    model: str
    policy_version: int
    gateway_rank: int
    duration_s: float
    turns: int
    tokens: int
    timings: list[tuple[str, float]]
    evaluation: dict[str, Any] | None
    stats: dict[str, Any]
    metadata: dict[str, Any]
    traces: list[TraceView]
    vocab: dict[str, str] = msgspec.field(default_factory=dict)
    """Token id -> its text, for the ids of this session (empty without a tokenizer)."""


def page_name(key: str) -> str:
    return f"{unique_name(key)}.html"


def _segments(prompt_len: int, mask: np.ndarray) -> list[Segment]:
    out = [Segment("prompt", 0, prompt_len)] if prompt_len else []
    if mask.size:
        edges = np.flatnonzero(np.diff(mask.astype(np.int8))) + 1
        bounds = [0, *edges.tolist(), int(mask.size)]
        for a, b in zip(bounds, bounds[1:], strict=False):
            out.append(Segment("sampled" if mask[a] else "inserted", prompt_len + a, prompt_len + b))
    return out


def trace_view(i: int, t: Trace) -> TraceView:
    pl = int(t.prompt_ids.shape[0])
    mask = np.asarray(t.loss_mask, dtype=np.uint8)
    rlp = np.round(np.asarray(t.response_logprobs, dtype=np.float64), 4)
    keep = (mask > 0) & np.isfinite(rlp)
    lps: list[float | None] = [None] * pl
    lps += [v if k else None for v, k in zip(rlp.tolist(), keep.tolist(), strict=True)]
    chain = {k: v for k in CHAIN_KEYS if (v := getattr(t.meta, k)) is not None}
    if not t.trainable:
        chain |= {"trainable": False, "filter": ",".join(t.filter)}
    return TraceView(
        index=i, chain=chain, finish_reason=t.finish_reason,
        reward=t.reward, policy=t.policy, messages=[chat_message(m) for m in t.prompt_messages + t.response_messages],
        tools=chat_tools(t.tools), ids=t.prompt_ids.tolist() + t.response_ids.tolist(),
        trainable=[0] * pl + mask.tolist(), logprobs=lps, segments=_segments(pl, mask), prompt_tokens=pl,
        trainable_tokens=int(mask.sum()),
    )


class TokenTexts:
    """Token id -> its text for one ``tokenizers.Tokenizer``, each id decoded once (in batches)."""

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self._cache: dict[int, tuple[str, str]] = {}
        """id -> (its JSON key, its text)."""

    def texts(self, ids: Iterable[int]) -> dict[str, str]:
        wanted = np.unique(np.fromiter(ids, dtype=np.int64)).tolist()
        cache = self._cache
        missing = [i for i in wanted if i not in cache]
        if missing:
            decoded = self.tokenizer.decode_batch([[i] for i in missing], skip_special_tokens=False)
            cache.update((i, (str(i), text)) for i, text in zip(missing, decoded, strict=True))
        return dict(map(cache.__getitem__, wanted))


def session_view(r: SessionResult, *, accept: float = 1.0, duration_s: float | None = None,
                 tokenizer: TokenTexts | None = None) -> SessionView:
    """``tokenizer``: token texts to show (None: ids only)."""
    traj = r.trajectory
    status = int(traj.status)
    reason = failure_reason(status=status, error=traj.error, evaluation=r.evaluation, reward=r.reward,
                            accept=accept, agent=r.agent,
                            finish_reasons=[t.finish_reason for t in traj.traces])
    traces = [trace_view(i, t) for i, t in enumerate(traj.traces)]
    vocab = tokenizer.texts(itertools.chain.from_iterable(t.ids for t in traces)) if tokenizer is not None else {}
    total = r.timings.get("total", sum(r.timings.values()))
    return SessionView(
        key=r.key, page=page_name(r.key), task_id=r.task_id, sample_index=r.sample_index, attempt=r.attempt,
        status=TraceStatus(status).name.lower(), reward=r.reward, accepted=reason is None, reason=reason,
        error=traj.error, harness=r.harness, model=r.model, policy_version=r.policy_version,
        gateway_rank=r.gateway_rank, duration_s=duration_s if duration_s is not None else total,
        turns=traj.stats.completions, tokens=sum(len(t.ids) for t in traces),
        timings=[(k, r.timings[k]) for k in stage_order(r.timings)],
        evaluation=msgspec.to_builtins(r.evaluation) if r.evaluation is not None else None,
        stats=msgspec.to_builtins(traj.stats), metadata=to_shard_metadata(r), traces=traces, vocab=vocab,
    )


def load_tokenizer(spec: str | None, run: Path | None = None) -> TokenTexts | None:
    """Token texts of a ``tokenizers.Tokenizer`` from ``spec`` (a model dir, a tokenizer.json, or ``asset:NAME``),
    else from the run's ``config.toml`` (its inference model); None when neither names one."""
    from tokenizers import Tokenizer

    from polar_hpc.assets import resolve_model

    if spec is None and run is not None and RunDir(run).exists():
        from polar_hpc.assets import AssetError
        from polar_hpc.config import ConfigError

        try:
            path = resolve_model(RunDir(run).load_config().inference.model)
        except (ConfigError, AssetError, FileNotFoundError) as err:
            log.warning("token text not shown: the run's model tokenizer is not available here (%s)", err)
            return None
    elif spec is None:
        return None
    else:
        path = resolve_model(spec)
    file = path if path.is_file() else path / "tokenizer.json"
    return TokenTexts(Tokenizer.from_file(str(file))) if file.is_file() else None
