"""``shards inspect``: counts over committed shards (session tables, offsets and loss masks only)."""

from __future__ import annotations

from collections import Counter

import msgspec
import numpy as np

from polar_hpc.store.reader import ShardReader
from polar_hpc.store.schema import LOSS_MASK
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.shardfile import ShardError, open_shard, read_offsets
from polar_hpc.wire.traces import TraceStatus


class Summary(msgspec.Struct, kw_only=True):
    shards: int
    problems: list[str]
    sessions: int
    duplicates: int
    traces: int
    prompt_tokens: int
    response_tokens: int
    trainable_tokens: int
    statuses: dict[str, int]
    harnesses: dict[str, int]
    models: dict[str, int]
    reward_bins: list[float]
    reward_counts: list[int]
    reward_mean: float | None
    runs: dict[str, int] = msgspec.field(default_factory=dict)
    """Sessions counted per run read (its shards folder)."""


def reward_histogram(rewards: np.ndarray, bins: int = 10) -> tuple[list[int], list[float]]:
    """(counts, edges) over the finite rewards: ``bins`` equal bins from the lowest to the highest; one bin
    centred on the value when every reward is the same (all 1.0: ``[0.5, 1.5)``)."""
    finite = rewards[np.isfinite(rewards)]
    if not finite.size:
        return [], []
    lo, hi = float(finite.min()), float(finite.max())
    if hi == lo:
        return [int(finite.size)], [lo - 0.5, lo + 0.5]
    counts, edges = np.histogram(finite, bins=bins, range=(lo, hi))
    return [int(c) for c in counts], [float(e) for e in edges]


def sessions_per_run(reader: ShardReader, flt: TraceSelect | None = None, *,
                     with_traces: bool = False) -> dict[str, int]:
    """Sessions ``flt`` keeps in each run read (its shards folder, every run listed, in read order); each run is
    deduplicated on its own. ``with_traces``: only sessions holding a trace (what an export writes)."""
    out = dict.fromkeys(reader.runs, 0)
    for path, table, rows in reader.selected(flt):
        to = table.trace_offsets
        n = int((to[rows + 1] > to[rows]).sum()) if with_traces else int(rows.size)
        out[str(path.parent)] = out.get(str(path.parent), 0) + n
    return out


def format_runs(runs: dict[str, int]) -> str:
    """``runs  2: <run-a>/shards 6  <run-b>/shards 6``; empty for a single run."""
    if len(runs) < 2:
        return ""
    return f"runs       {len(runs)}: " + "  ".join(f"{r} {n}" for r, n in runs.items())


def summarize(reader: ShardReader, flt: TraceSelect | None = None, bins: int = 10) -> Summary:
    sessions = traces = prompt = response = trainable = 0
    statuses: Counter[str] = Counter()
    harnesses: Counter[str] = Counter()
    models: Counter[str] = Counter()
    rewards: list[np.ndarray] = []
    if flt is not None and flt.selects_traces:
        raise ValueError(f"a summary counts whole sessions; {flt.describe()} selects single traces")
    for path, table, rows in reader.selected(flt):
        try:
            with open_shard(path) as f:
                po, ro = read_offsets(f)
                mask = f.read(LOSS_MASK)
        except (ShardError, OSError, KeyError) as err:
            reader.report(f"{path}: unreadable offsets: {err}")
            continue
        to = table.trace_offsets
        tsel = np.concatenate([np.arange(to[r], to[r + 1]) for r in rows])
        sessions += rows.size
        traces += tsel.size
        prompt += int((po[tsel + 1] - po[tsel]).sum())
        response += int((ro[tsel + 1] - ro[tsel]).sum())
        csum = np.concatenate([[0], np.cumsum(mask, dtype=np.int64)])
        trainable += int((csum[ro[tsel + 1]] - csum[ro[tsel]]).sum())
        statuses.update(TraceStatus(int(s)).name for s in table.status[rows])
        harnesses.update(table.harness[r] for r in rows)
        models.update(table.model[r] for r in rows)
        rewards.append(table.reward[rows])
    allr = np.concatenate(rewards) if rewards else np.zeros(0)
    finite = allr[np.isfinite(allr)]
    counts, edges = reward_histogram(allr, bins)
    return Summary(
        shards=len(reader.shards),
        problems=reader.problems,
        sessions=sessions,
        duplicates=len(reader.duplicates),
        traces=traces,
        prompt_tokens=prompt,
        response_tokens=response,
        trainable_tokens=trainable,
        statuses=dict(statuses),
        harnesses=dict(harnesses.most_common()),
        models=dict(models.most_common()),
        reward_bins=edges,
        reward_counts=counts,
        reward_mean=float(finite.mean()) if finite.size else None,
        runs=sessions_per_run(reader, flt),
    )


def format_summary(s: Summary) -> str:
    lines = [
        f"shards     {s.shards}" + (f"  ({len(s.problems)} skipped)" if s.problems else ""),
        f"sessions   {s.sessions}" + (f"  ({s.duplicates} duplicates skipped)" if s.duplicates else ""),
        *([format_runs(s.runs)] if len(s.runs) > 1 else []),
        f"traces     {s.traces}",
        f"tokens     prompt {s.prompt_tokens}  response {s.response_tokens}  trainable {s.trainable_tokens}",
        "statuses   " + "  ".join(f"{k} {v}" for k, v in sorted(s.statuses.items())),
        "harnesses  " + "  ".join(f"{k or '(none)'} {v}" for k, v in s.harnesses.items()),
        "models     " + "  ".join(f"{k or '(none)'} {v}" for k, v in s.models.items()),
    ]
    if s.reward_counts:
        lines.append(f"reward     mean {s.reward_mean:.4g}")
        top = max(s.reward_counts) or 1
        for i, c in enumerate(s.reward_counts):
            bar = "#" * round(40 * c / top)
            lines.append(f"  [{s.reward_bins[i]:8.3g}, {s.reward_bins[i + 1]:8.3g}) {c:8d} {bar}")
    for p in s.problems:
        lines.append(f"problem    {p}")
    return "\n".join(lines)
