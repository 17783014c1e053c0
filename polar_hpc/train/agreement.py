"""Trainer-vs-rollout logprob agreement: the training–inference mismatch, measured on recorded traces.

For every trainable token (loss mask 1) of a trace, Δ = rollout − trainer: the logprob the engine recorded minus
the logprob a trainer computes for the same token under the same weights and the same assembled context (prompt
ids ‖ response ids before it). The figures (:class:`AgreementStats`), over any set of tokens:

- ``tokens``; ``mean_abs`` / ``max_abs``: mean and max |Δ|, in nats;
- ``above`` / ``share_above``: tokens with |Δ| > ``ABOVE_NAT`` (0.1 nat), count and share;
- ``kl_k1`` = mean(Δ) and ``kl_k3`` = mean(exp(−Δ) − 1 + Δ): Schulman's k1 and k3 estimators of
  KL(rollout ‖ trainer) from tokens the rollout policy sampled (both unbiased; k1 can come out negative, k3 is
  never negative and has the lower variance). Oracle tokens were forced, not sampled: for them these are
  divergence figures, not KL estimates;
- ``nonfinite``: tokens where either side is NaN or infinite: left out of the means, counted in ``above``.

A trainer reports the same figures for a batch with :func:`agreement_stats` (numpy arrays, CPU or GPU torch
tensors, or ragged lists of 1-D ones; no torch import here)::

    stats = agreement_stats(trainer_logprobs, rollout_logprobs, mask)     # e.g. [B, T] with a [B, T] mask
    log.info("logprob |Δ| mean %.3g max %.3g, KL k3 %.3g", stats.mean_abs, stats.max_abs, stats.kl_k3)

and :func:`combine` merges the figures of disjoint token sets (steps, groups) as if computed at once. A trainer
without its own logprobs of the sampled tokens has its model score them the way the command does:
``polar_hpc.train.scoring.batch_agreement(model, prompt_ids, completion_ids, loss_mask, rollout_logprobs)``.

``polar-hpc shards logprobs RUN --model DIR`` (``agreement_shards.measure``) recomputes the trainer side with
transformers (:mod:`polar_hpc.train.scoring`: one forward pass per trace) for every selected trace of committed
shards and reports per harness and policy, and per chain (a trace: one chain of a session). A chain whose
assembled context differs from what the engine saw (a prefix-merging or continuation bug) agrees up to the first
wrong context token and jumps after it: ``first_over`` (the response position of the first trainable token whose
|Δ| exceeds the tolerance) and ``turn`` (which run of trainable tokens, i.e. which completion of the chain, 0 first)
point at it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from polar_hpc.util.units import count

if TYPE_CHECKING:
    import numpy as np

ABOVE_NAT = 0.1
"""|Δ| above this counts in ``AgreementStats.above``."""
DEFAULT_TOLERANCE = 1e-3
"""Per-token |Δ| a float32 recomputation stays within (the reference server on the CPU: below 1e-4 measured)."""
DEFAULT_WORST = 5


class AgreementStats(msgspec.Struct, kw_only=True, frozen=True):
    """Agreement over a set of tokens; see the module docstring for each figure."""

    tokens: int = 0
    mean_abs: float = 0.0
    max_abs: float = 0.0
    above: int = 0
    share_above: float = 0.0
    kl_k1: float = 0.0
    kl_k3: float = 0.0
    nonfinite: int = 0


# numpy is imported inside the functions: the command line reads this module's defaults when it starts.


def _array(x: Any) -> np.ndarray:
    import numpy as np

    if hasattr(x, "detach"):  # a torch tensor, on any device
        x = x.detach().float().cpu().numpy()
    out: np.ndarray = np.asarray(x, dtype=np.float64)
    return out


def _flat(x: Any) -> np.ndarray:
    import numpy as np

    if isinstance(x, list | tuple) and x and not np.isscalar(x[0]):
        return np.concatenate([_array(p).ravel() for p in x])
    return _array(x).ravel()


def deltas(trainer: Any, rollout: Any, mask: Any = None) -> np.ndarray:
    """Δ = rollout − trainer (float64) at the tokens ``mask`` keeps (all when None), flattened."""
    t, r = _flat(trainer), _flat(rollout)
    if t.shape != r.shape:
        raise ValueError(f"agreement: trainer logprobs hold {t.size} values, rollout logprobs {r.size}")
    if mask is not None:
        m = _flat(mask).astype(bool)
        if m.shape != t.shape:
            raise ValueError(f"agreement: the mask holds {m.size} values, the logprobs {t.size}")
        t, r = t[m], r[m]
    out: np.ndarray = r - t
    return out


def stats_of(delta: np.ndarray) -> AgreementStats:
    """The figures of the Δ values of a set of tokens."""
    import numpy as np

    finite = np.isfinite(delta)
    d = delta[finite]
    bad = int(delta.size - d.size)
    if not d.size:
        return AgreementStats(tokens=int(delta.size), above=bad, share_above=1.0 if bad else 0.0, nonfinite=bad)
    a = np.abs(d)
    above = int(np.count_nonzero(a > ABOVE_NAT)) + bad
    return AgreementStats(tokens=int(delta.size), mean_abs=float(a.mean()), max_abs=float(a.max()), above=above,
                          share_above=above / delta.size, kl_k1=float(d.mean()),
                          kl_k3=float(np.mean(np.expm1(-d) + d)), nonfinite=bad)


def agreement_stats(trainer: Any, rollout: Any, mask: Any = None) -> AgreementStats:
    """The figures for a batch: ``trainer`` and ``rollout`` logprobs of the same tokens, ``mask`` 1 where a token
    counts (the loss mask); same shapes, or ragged lists of 1-D arrays with the same lengths."""
    return stats_of(deltas(trainer, rollout, mask))


def combine(parts: Iterable[AgreementStats]) -> AgreementStats:
    """The figures of the union of disjoint token sets, from each set's figures."""
    items = [p for p in parts if p.tokens]
    n = sum(p.tokens for p in items)
    if not n:
        return AgreementStats()
    finite = [(p, p.tokens - p.nonfinite) for p in items]
    m = sum(k for _, k in finite)
    above = sum(p.above for p in items)

    def mean(field: str) -> float:
        return sum(getattr(p, field) * k for p, k in finite) / m if m else 0.0

    return AgreementStats(tokens=n, mean_abs=mean("mean_abs"), max_abs=max(p.max_abs for p in items), above=above,
                          share_above=above / n, kl_k1=mean("kl_k1"), kl_k3=mean("kl_k3"),
                          nonfinite=sum(p.nonfinite for p in items))


class ChainAgreement(msgspec.Struct, kw_only=True, frozen=True):
    """One trace (a chain of one session)."""

    run: str
    key: str
    """Session key (``task_id/sample_index``)."""
    trace_index: int
    harness: str
    policy: str
    prompt_tokens: int
    response_tokens: int
    stats: AgreementStats
    worst_position: int
    """Response position of the largest |Δ| (or of the first non-finite one)."""
    first_over: int | None = None
    """Response position of the first trainable token whose |Δ| exceeds the tolerance (None: within it)."""
    turn: int | None = None
    """Which run of trainable tokens holds ``first_over`` (0: the chain's first completion)."""


class GroupAgreement(msgspec.Struct, kw_only=True, frozen=True):
    harness: str
    policy: str
    chains: int
    stats: AgreementStats


class AgreementReport(msgspec.Struct, kw_only=True):
    """What ``polar-hpc shards logprobs`` measured (written as ``RUN/analysis/logprobs.json``)."""

    runs: list[str]
    model: str
    temperature: float | None
    """Of sampled tokens as given (oracle tokens: 1); None: each trace's recorded one."""
    tolerance: float
    selection: str
    threads: int
    seconds: float
    total: AgreementStats
    groups: list[GroupAgreement]
    chains: int
    chains_over: int
    """Chains with a token whose |Δ| exceeds the tolerance."""
    within_tolerance: bool
    worst: list[ChainAgreement]
    """The chains with the largest |Δ|, those over the tolerance first."""
    without_trainable: int = 0
    """Selected traces without a trainable token (nothing to compare)."""
    problems: list[str] = msgspec.field(default_factory=list)
    temperatures: list[float] = msgspec.field(default_factory=list)
    """The temperatures sampled tokens were scored at."""
    mixed_temperature: int = 0
    """Traces sampled at several temperatures, not compared (with ``temperature`` None)."""
    unrecorded_temperature: int = 0
    """Sampled traces recorded without a temperature, scored at 1 (with ``temperature`` None)."""


def temperature_text(rep: AgreementReport) -> str:
    """How sampled tokens were scored, and what could not be (one line)."""
    used = ", ".join(f"{t:g}" for t in rep.temperatures) or "-"
    text = f"{used} (given)" if rep.temperature is not None else f"{used} (recorded per trace)"
    if rep.unrecorded_temperature:
        text += f"; {rep.unrecorded_temperature} traces without a recorded temperature scored at 1"
    if rep.mixed_temperature:
        text += f"; {rep.mixed_temperature} traces sampled at several temperatures not compared"
    return text


def _g(x: float) -> str:
    if x == 0:
        return "0"
    return f"{x:.2g}" if abs(x) < 1e-2 else f"{x:.3f}"


def format_agreement(rep: AgreementReport) -> str:
    """The report as terminal text."""
    t = rep.total
    verdict = "within" if rep.within_tolerance else f"exceeded in {rep.chains_over} of {rep.chains} chains"
    lines = [
        f"model        {rep.model} (float32, {rep.threads} torch thread{'s' if rep.threads > 1 else ''}, "
        f"{rep.seconds:.1f} s)",
        f"chains       {rep.chains} ({count(t.tokens)} trainable tokens)"
        + (f"; {rep.without_trainable} traces without a trainable token" if rep.without_trainable else ""),
        f"temperature  {temperature_text(rep)} (sampled tokens; oracle tokens 1)",
        f"tolerance    |Δ| ≤ {rep.tolerance:g} nat per token: {verdict}",
        "",
        f"{'harness':<12} {'policy':<7} {'chains':>6} {'tokens':>8} {'mean |Δ|':>9} {'max |Δ|':>9} "
        f"{'>' + str(ABOVE_NAT) + ' nat':>8} {'KL k1':>9} {'KL k3':>9}",
    ]
    for g in rep.groups:
        s = g.stats
        k1, k3 = (_g(s.kl_k1), _g(s.kl_k3)) if g.policy == "sample" else ("-", "-")
        lines.append(f"{g.harness:<12} {g.policy:<7} {g.chains:>6} {s.tokens:>8} {_g(s.mean_abs):>9} "
                     f"{_g(s.max_abs):>9} {100 * s.share_above:>7.1f}% {k1:>9} {k3:>9}")
    lines += ["", "worst chains (session key, trace: first token over the tolerance, at response position)"]
    for c in rep.worst:
        head = f"  {c.key} trace {c.trace_index} ({c.harness}, {c.policy}, {c.stats.tokens} tokens): "
        if c.first_over is None:
            at = f" at {c.worst_position}" if c.stats.max_abs else ""
            lines.append(head + f"max |Δ| {_g(c.stats.max_abs)}{at}, within")
        else:
            lines.append(head + f"first over at {c.first_over} (turn {c.turn}), max |Δ| {_g(c.stats.max_abs)} "
                         f"at {c.worst_position}" + (f", {c.stats.nonfinite} non-finite" if c.stats.nonfinite else ""))
    lines += [f"skipped: {p}" for p in rep.problems]
    return "\n".join(lines)


def agreement_markdown(rep: AgreementReport) -> list[str]:
    """The report as a section of ``polar-hpc report``."""
    verdict = "within" if rep.within_tolerance else f"exceeded in {rep.chains_over} of {rep.chains} chains"
    lines = ["## Trainer-vs-rollout logprobs", "",
             f"`polar-hpc shards logprobs` with {rep.model}: {rep.chains} chains, {count(rep.total.tokens)} trainable "
             f"tokens ({rep.selection}), temperature {temperature_text(rep)}; |Δ| ≤ {rep.tolerance:g} nat per token: "
             f"{verdict}.", "",
             f"| harness | policy | chains | tokens | mean \\|Δ\\| | max \\|Δ\\| | > {ABOVE_NAT} nat | KL k1 | KL k3 |",
             "|---|---|" + "---:|" * 7]
    for g in rep.groups:
        s = g.stats
        k1, k3 = (_g(s.kl_k1), _g(s.kl_k3)) if g.policy == "sample" else ("-", "-")
        lines.append(f"| {g.harness} | {g.policy} | {g.chains} | {s.tokens} | {_g(s.mean_abs)} | {_g(s.max_abs)} | "
                     f"{100 * s.share_above:.1f}% | {k1} | {k3} |")
    over = [c for c in rep.worst if c.first_over is not None]
    if over:
        lines += ["", "Chains over the tolerance (first token over it, at response position):", ""]
        lines += [f"- {c.key} trace {c.trace_index}: position {c.first_over} (turn {c.turn}), max |Δ| "
                  f"{_g(c.stats.max_abs)}" for c in over]
    return [*lines, ""]
