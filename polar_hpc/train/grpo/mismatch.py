"""The trainer-vs-rollout mismatch of one GRPO step, split by harness, weight-version lag and turn.

For every trainable token of a step's rows, Δ = logp_trainer − logp_rollout (the trainer's no-grad logprob at
the start of the step against the logprob the engine recorded when it sampled the token). ``split`` sums |Δ| into
buckets, three ways:

- ``harness``: the agent the session ran (``SessionResult.harness``, e.g. ``codex``, ``shell``);
- ``lag``: the trainer's version (optimizer steps done) minus the version that sampled the token (``0`` on
  policy, ``1`` one step behind, ...; ``unknown`` where the version was not recorded);
- ``turn``: which call of the session sampled the token (``TraceMeta.completion_indices``: 0 the first call;
  ``TURN_CAP`` and later share one bucket).

Each bucket also counts the tokens the correction masked (IcePop: ratio outside ``[1/c, c]``) and clipped (ratio
above ``trainer.tis_clip``), so a step shows where the mismatch is and what the correction did about it. Buckets of
several steps (or ranks) merge with ``merge``; the figures read back from ``RUN/trainer/steps.jsonl``
(``metrics.StepMetrics.mismatch``) and ``polar-hpc report`` sums them over the run.

Pure numpy: the trainer passes its tensors as arrays (``tis``); the tests check it by hand.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import msgspec
import numpy as np

from polar_hpc.wire.versions import UNKNOWN, parse_version

if TYPE_CHECKING:
    from polar_hpc.train.async_client import TrainSample

UNKNOWN_KEY = "unknown"
"""The lag of a token whose weight version was not recorded (``versions`` -1)."""
TURN_CAP = 16
"""Turns from this one on share the bucket ``"16+"``."""
AXES = ("harness", "lag", "turn")


def check_correction(tis_clip: float, tis_mask: float) -> str | None:
    """Why ``trainer.tis_mask`` does not fit (None: it does). ``tis_mask`` = c masks ratios outside [1/c, c]: c must
    be above 1 (0 turns masking off)."""
    if tis_mask != 0 and tis_mask <= 1:
        return (f"trainer.tis_mask = {tis_mask:g} masks tokens whose trainer/rollout ratio is outside "
                f"[1/tis_mask, tis_mask], which is empty or one point for tis_mask <= 1; use a value above 1 (IcePop: "
                f"2 or 5) or 0 (off)")
    return None


class Bucket(msgspec.Struct, kw_only=True):
    """|Δ logp| over one set of trainable tokens, and what the correction did to them."""

    tokens: int = 0
    mean_abs: float = 0.0
    max_abs: float = 0.0
    masked: int = 0
    """Tokens given weight 0 (ratio outside the IcePop band)."""
    clipped: int = 0
    """Tokens whose ratio the TIS clip truncated."""

    def add(self, other: Bucket) -> None:
        n = self.tokens + other.tokens
        if n:
            self.mean_abs = (self.mean_abs * self.tokens + other.mean_abs * other.tokens) / n
        self.tokens = n
        self.max_abs = max(self.max_abs, other.max_abs)
        self.masked += other.masked
        self.clipped += other.clipped


class Mismatch(msgspec.Struct, kw_only=True):
    """One step's (or several merged) buckets by axis: key → ``Bucket`` (keys are strings, sorted as numbers where
    they are)."""

    harness: dict[str, Bucket] = msgspec.field(default_factory=dict)
    lag: dict[str, Bucket] = msgspec.field(default_factory=dict)
    turn: dict[str, Bucket] = msgspec.field(default_factory=dict)

    def axis(self, name: str) -> dict[str, Bucket]:
        out: dict[str, Bucket] = getattr(self, name)
        return out


def turn_key(turn: int) -> str:
    return f"{TURN_CAP}+" if turn >= TURN_CAP else str(turn)


def lag_key(trainer_version: int, version: int) -> str:
    return UNKNOWN_KEY if version < 0 else str(trainer_version - version)


def sampled_versions(sample: TrainSample, mask: np.ndarray) -> np.ndarray:
    """Per response position of ``sample``, the version that sampled it (-1 where ``mask`` is 0): the shards'
    per-token column where recorded, else the chain's one recorded version (-1 when it has several or none)."""
    m = np.asarray(mask) > 0
    v = np.asarray(sample.response_versions, dtype=np.int64)
    if v.shape[0] != m.shape[0]:
        known = {parse_version(x) for x in sample.weight_versions} - {UNKNOWN}
        v = np.full(m.shape[0], known.pop() if len(known) == 1 else UNKNOWN, dtype=np.int64)
    return np.where(m, v, UNKNOWN)


def token_turns(mask: np.ndarray, completion_indices: Sequence[int]) -> np.ndarray:
    """Per response position, the session call that sampled it (-1 where ``mask`` is 0).

    A chain's sampled tokens are one run of mask-1 positions per call, in call order (``prefix_merging``: R'₁ ‖ T₁ ‖
    … with the interstitial T masked; ``per_request``: one run). Run ``j`` is call ``completion_indices[j]`` when
    the counts agree, else (a call with no sampled token, indices not recorded) the run's own index."""
    m = np.asarray(mask) > 0
    out = np.full(m.shape[0], -1, dtype=np.int64)
    if not m.any():
        return out
    starts = m & ~np.concatenate([[False], m[:-1]])
    run = np.cumsum(starts) - 1
    n = int(starts.sum())
    calls = np.asarray(completion_indices, dtype=np.int64)
    names = calls if calls.shape[0] == n else np.arange(n, dtype=np.int64)
    out[m] = names[run[m]]
    return out


def split(delta: np.ndarray, mask: np.ndarray, *, harness: Sequence[str], versions: np.ndarray,
          turns: np.ndarray, trainer_version: int, masked: np.ndarray | None = None,
          clipped: np.ndarray | None = None) -> Mismatch:
    """The step's buckets. Arrays are (B, T) and aligned: ``delta`` = logp_trainer − logp_rollout, ``mask`` 1 on
    trainable tokens, ``versions`` / ``turns`` per token (-1: unknown), ``masked`` / ``clipped`` per token (bool);
    ``harness`` one name per row. Non-finite Δ are left out (``agreement.nonfinite`` counts them)."""
    d = np.abs(np.asarray(delta, dtype=np.float64))
    on = (np.asarray(mask) > 0) & np.isfinite(d)
    rows = np.broadcast_to(np.asarray(list(harness), dtype=object)[:, None], d.shape)
    v = np.asarray(versions, dtype=np.int64)
    lag = np.where(v < 0, -1, trainer_version - v)
    t = np.asarray(turns, dtype=np.int64)
    mk = np.zeros(d.shape, bool) if masked is None else np.asarray(masked, dtype=bool)
    cl = np.zeros(d.shape, bool) if clipped is None else np.asarray(clipped, dtype=bool)
    out = Mismatch()
    keys = {
        "harness": rows[on].astype(str),
        "lag": np.array([UNKNOWN_KEY if x < 0 else str(x) for x in lag[on].tolist()], dtype=object),
        "turn": np.array([UNKNOWN_KEY if x < 0 else turn_key(x) for x in t[on].tolist()], dtype=object),
    }
    vals, vm, vc = d[on], mk[on], cl[on]
    for axis, k in keys.items():
        buckets = out.axis(axis)
        for name in sorted(set(k.tolist())):
            sel = k == name
            x = vals[sel]
            buckets[name] = Bucket(tokens=int(x.size), mean_abs=float(x.mean()), max_abs=float(x.max()),
                                   masked=int(vm[sel].sum()), clipped=int(vc[sel].sum()))
    return out


def merge(parts: Iterable[Mismatch | None]) -> Mismatch:
    """The buckets of several steps (or ranks) as if split at once (mean |Δ| weighted by tokens)."""
    out = Mismatch()
    for p in parts:
        if p is None:
            continue
        for axis in AXES:
            mine = out.axis(axis)
            for k, b in p.axis(axis).items():
                mine.setdefault(k, Bucket()).add(b)
    return out


def ordered(keys: Iterable[str]) -> list[str]:
    """Bucket keys in reading order: numbers ascending (``16+`` after them), then the rest alphabetically."""
    def rank(k: str) -> tuple[int, int, str]:
        head = k.rstrip("+")
        if head.lstrip("-").isdigit():
            return (0, int(head) + (1 if k.endswith("+") else 0), k)
        return (1, 0, k)
    return sorted(keys, key=rank)


def summary_line(m: Mismatch, axis: str, limit: int = 4) -> str:
    """``lag 0: 1.2e-03 (96 tok), 1: 4.1e-02 (80 tok, 3 masked)`` for the step line (the ``limit`` largest first
    keys in reading order)."""
    b = m.axis(axis)
    parts = []
    for k in ordered(b)[:limit]:
        x = b[k]
        extra = ", ".join(s for s in (f"{x.masked} masked" if x.masked else "",
                                      f"{x.clipped} clipped" if x.clipped else "") if s)
        parts.append(f"{k}: {x.mean_abs:.1e} ({x.tokens} tok{', ' + extra if extra else ''})")
    more = f", +{len(b) - limit} more" if len(b) > limit else ""
    return f"{axis} " + ", ".join(parts) + more
