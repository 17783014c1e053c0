"""``polar-hpc shards logprobs`` over committed shards: every selected trace scored by a model
(:mod:`polar_hpc.train.scoring`) and compared with its recorded logprobs; the figures are
:mod:`polar_hpc.train.agreement`'s."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Sequence

import msgspec
import numpy as np

from polar_hpc.engine.protocol import DEFAULT_TEMPERATURE
from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.store.reader import EmptySelection, ShardReader, TraceView, require_shards
from polar_hpc.store.select import TraceSelect
from polar_hpc.train.agreement import (
    DEFAULT_TOLERANCE,
    DEFAULT_WORST,
    AgreementReport,
    AgreementStats,
    ChainAgreement,
    GroupAgreement,
    combine,
    stats_of,
)
from polar_hpc.wire.records import TraceMeta

log = get_logger("train")


class AgreementInputError(PolarError, ValueError):
    """Traces the model cannot score (token ids beyond its vocabulary, an empty prompt); one line."""


def chain_agreement(view: TraceView, trainer: np.ndarray, tolerance: float, run: str) -> ChainAgreement:
    """Compare ``trainer`` (logprobs of the trace's loss-mask-1 tokens, in order) with the recorded ones."""
    mask = view.loss_mask.astype(bool)
    positions = np.flatnonzero(mask)
    delta = view.response_logprobs[positions].astype(np.float64) - trainer
    bad = ~np.isfinite(delta)
    score = np.where(bad, np.inf, np.abs(delta))
    over = np.flatnonzero(score > tolerance)
    first = int(positions[over[0]]) if over.size else None
    turn = None
    if first is not None:
        starts = np.flatnonzero(mask & ~np.concatenate([[False], mask[:-1]]))
        turn = int(np.count_nonzero(starts <= first)) - 1
    return ChainAgreement(run=run, key=view.key, trace_index=view.trace_index, harness=view.harness,
                          policy=view.policy, prompt_tokens=len(view.prompt_ids),
                          response_tokens=len(view.response_ids), stats=stats_of(delta),
                          worst_position=int(positions[int(np.argmax(score))]), first_over=first, turn=turn)


def recorded_temperatures(view: TraceView) -> list[float]:
    """The temperatures the engine sampled the trace's completions at (``TraceMeta.sampling``; empty: not
    recorded, or an oracle trace)."""
    return msgspec.convert(view.decode().metadata, TraceMeta).temperatures()


def measure(runs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]], model_dir: str | os.PathLike[str], *,
            select: TraceSelect | None = None, temperature: float | None = None,
            tolerance: float = DEFAULT_TOLERANCE, worst: int = DEFAULT_WORST, threads: int | None = None,
            max_chains: int | None = None) -> AgreementReport:
    """Score every selected trace of ``runs`` (one entry per run) with ``model_dir`` and compare.

    ``temperature``: what sampled tokens are scored at; None: each trace's recorded temperature (a trace
    recorded without one: 1, counted; a trace sampled at several: left out, counted and named in ``problems``).

    Raises ``MissingShards`` (a run without committed shards), ``scoring.ModelLoadError``, ``AgreementInputError``
    and ``EmptySelection`` (no trainable token selected)."""
    from polar_hpc.train.scoring import load_scorer, scoring_temperature

    run_list = [runs] if isinstance(runs, str | os.PathLike) else list(runs)
    require_shards(run_list)
    scorer = load_scorer(model_dir, threads=threads)
    start = time.monotonic()
    chains: list[ChainAgreement] = []
    by_group: dict[tuple[str, str], list[AgreementStats]] = defaultdict(list)
    problems: list[str] = []
    empty = mixed = unrecorded = 0
    used: set[float] = set()
    for run in map(str, run_list):
        reader = ShardReader(run)
        for view in reader.traces(select, blobs=temperature is None):
            if max_chains is not None and len(chains) >= max_chains:
                break
            positions = np.flatnonzero(view.loss_mask)
            if not positions.size:
                empty += 1
                continue
            _check_ids(view, scorer.vocab_size)
            t = temperature
            if t is None and view.policy == "sample":
                temps = recorded_temperatures(view)
                if len(temps) > 1:
                    mixed += 1
                    problems.append(f"{view.key} trace {view.trace_index}: sampled at temperatures "
                                    f"{', '.join(f'{x:g}' for x in temps)}; not compared (--temperature scores "
                                    "every trace at one)")
                    continue
                unrecorded += not temps
                t = temps[0] if temps else DEFAULT_TEMPERATURE
            t = scoring_temperature(view.policy, DEFAULT_TEMPERATURE if t is None else t)
            if view.policy == "sample":
                used.add(t)
            trainer = scorer.logprobs(view.prompt_ids, view.response_ids, positions, t)
            chain = chain_agreement(view, trainer, tolerance, run)
            chains.append(chain)
            by_group[(chain.harness, chain.policy)].append(chain.stats)
        problems += reader.problems
    what = (select or TraceSelect()).describe()
    if not chains:
        raise EmptySelection(f"no trainable token in {' '.join(map(str, run_list))} matches {what}"
                             + (f" ({empty} traces without one)" if empty else ""))
    over = [c for c in chains if c.first_over is not None]
    ranked = sorted(chains, key=lambda c: (c.first_over is None, -c.stats.nonfinite, -c.stats.max_abs))
    groups = [GroupAgreement(harness=h, policy=p, chains=len(s), stats=combine(s))
              for (h, p), s in sorted(by_group.items())]
    log.debug("scored %d chains in %.1f s", len(chains), time.monotonic() - start)
    return AgreementReport(
        runs=list(map(str, run_list)), model=str(scorer.model_dir), temperature=temperature,
        temperatures=sorted(used), mixed_temperature=mixed, unrecorded_temperature=unrecorded, tolerance=tolerance,
        selection=what, threads=scorer.threads, seconds=time.monotonic() - start,
        total=combine(c.stats for c in chains), groups=groups, chains=len(chains), chains_over=len(over),
        within_tolerance=not over, worst=ranked[:worst], without_trainable=empty, problems=problems)


def _check_ids(view: TraceView, vocab: int) -> None:
    where = f"session {view.key!r} trace {view.trace_index}"
    if not len(view.prompt_ids):
        raise AgreementInputError(f"{where}: empty prompt; its first response token has no context to score")
    top = max(int(view.prompt_ids.max()), int(view.response_ids.max()))
    if top >= vocab:
        raise AgreementInputError(f"{where} holds token id {top}, the model's vocabulary has {vocab}: "
                                  "expected the model the run sampled from")
