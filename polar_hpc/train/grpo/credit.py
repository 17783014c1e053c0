"""Credit per session: every chain of a session trains with the session's advantage, weighed by ``loss_norm``.

A session is the unit GRPO scores (one outcome reward), a chain the unit TRL trains on (one row). A session with
several chains (compaction, sub-agents, a ``per_request`` trace per call) gives one row per chain, all with the
session's advantage; the group baseline is over sessions, each counted once (NeMo RL's multi-trace GRPO, the Polar
reference's one ``rollout_id`` per trajectory):

    A(s) = (r(s) - mean_g r) / (std_g r + 1e-4)      over the group's sessions with a reward (std unbiased, as TRL)

How much each row's tokens weigh (``trainer.loss_norm``) is folded into a per-token advantage ``A(s) * w(t)`` that
TRL's loss then aggregates by ``trainer.loss_type``. With ``T`` the trainable tokens of the step, ``T_s`` those of
session ``s``, ``S`` the sessions with a trainable token, ``G`` such groups (dapo / bnpo: loss = sum_t / T):

    token     w = 1                       a session weighs its sampled tokens
    session   w = T / (S * T_s)           every session weighs 1/S (Agent Lightning's ``per_rollout_mean``)
    group     w = T / (G * T_g)           every group weighs 1/G

With loss_type ``grpo`` (each row's token mean, then the mean over the ``B`` rows) the weight is per row:
``session`` ``w = B / (S * R_s)`` (``R_s`` the session's rows), ``group`` ``w = B / (G * R_g)``; ``token``
contradicts it, as ``session`` / ``group`` contradict ``dr_grpo``'s constant normalizer (``check_loss_norm``).
"""

from __future__ import annotations

import numpy as np

from polar_hpc.config.run import LossNorm

STD_EPS = 1e-4
"""Added to the group's std (TRL's ``1e-4``)."""
TOKEN_SUM_LOSSES = ("dapo", "bnpo")
ROW_MEAN_LOSSES = ("grpo",)


def check_loss_norm(loss_norm: str, loss_type: str) -> str | None:
    """Why ``trainer.loss_norm`` contradicts ``trainer.loss_type`` (None: they fit)."""
    if loss_norm == "token" and loss_type in ROW_MEAN_LOSSES:
        return (f"trainer.loss_norm = 'token' weighs every sampled token the same, but trainer.loss_type = "
                f"{loss_type!r} averages each row's tokens first; use loss_type = 'dapo' or loss_norm = 'session'")
    if loss_norm != "token" and loss_type not in TOKEN_SUM_LOSSES + ROW_MEAN_LOSSES:
        return (f"trainer.loss_norm = {loss_norm!r} weighs each {loss_norm} the same, but trainer.loss_type = "
                f"{loss_type!r} divides by a constant (rows x max length); use loss_type = 'dapo' or "
                f"loss_norm = 'token'")
    return None


def session_advantages(rewards: list[float | None], *, scale: bool = True) -> list[float]:
    """Each session's advantage against its group (``None``: no reward, advantage 0 and out of the baseline)."""
    have = np.array([r for r in rewards if r is not None], dtype=np.float64)
    if have.size == 0:
        return [0.0] * len(rewards)
    mean = float(have.mean())
    std = float(have.std(ddof=1)) if have.size > 1 else 0.0
    div = std + STD_EPS if scale else 1.0
    return [0.0 if r is None else (r - mean) / div for r in rewards]


def informative(rewards: list[float | None]) -> bool:
    """Whether a group's sessions give any advantage: at least two rewards, not all equal."""
    have = [r for r in rewards if r is not None]
    return len(have) >= 2 and max(have) > min(have)


def token_weights(mask: np.ndarray, sessions: list[str], groups: list[str], *, loss_norm: LossNorm,
                  loss_type: str) -> np.ndarray:
    """Per-token weights (B, T) for rows with trainable-token ``mask`` (B, T), row ``sessions`` and ``groups``
    (see the module docstring); 0 where the mask is 0."""
    m = (np.asarray(mask) > 0).astype(np.float64)
    if loss_norm == "token":
        return m
    why = check_loss_norm(loss_norm, loss_type)
    if why is not None:
        raise ValueError(why)
    unit = sessions if loss_norm == "session" else groups
    per_row = m.sum(1)
    live = sorted({u for u, n in zip(unit, per_row, strict=True) if n > 0})
    if not live:
        return m
    if loss_type in ROW_MEAN_LOSSES:
        rows = {u: sum(1 for x, n in zip(unit, per_row, strict=True) if x == u and n > 0) for u in live}
        w = [len(unit) / (len(live) * rows[u]) if n > 0 else 0.0 for u, n in zip(unit, per_row, strict=True)]
    else:
        tokens = {u: 0.0 for u in live}
        for u, n in zip(unit, per_row, strict=True):
            if n > 0:
                tokens[u] += float(n)
        total = float(per_row.sum())
        w = [total / (len(live) * tokens[u]) if n > 0 else 0.0 for u, n in zip(unit, per_row, strict=True)]
    return m * np.asarray(w, dtype=np.float64)[:, None]
