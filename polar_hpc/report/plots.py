"""PNG plots of a run report (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from polar_hpc.util.units import duration  # noqa: E402

if TYPE_CHECKING:
    from polar_hpc.report.types import RunReport, SessionRow
    from polar_hpc.train.grpo.metrics import StepMetrics


def plot_report(rep: RunReport, rows: Sequence[SessionRow], out: Path) -> list[str]:
    written = []
    fig, ax = plt.subplots(figsize=(8, max(2.5, 0.35 * len(rep.repos) + 1)))
    names = [g.name for g in rep.repos][::-1]
    ax.barh(names, [100 * g.rate for g in rep.repos][::-1], color="tab:green")
    for i, g in enumerate(rep.repos[::-1]):
        ax.text(100 * g.rate + 1, i, f"{g.accepted}/{g.sessions}", va="center", fontsize=8)
    ax.set_xlim(0, 110)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("accepted sessions (%)")
    ax.set_title(f"Acceptance per repository (overall {100 * rep.overall.rate:.1f}%)")
    written.append(_save(fig, out / "acceptance_by_repo.png"))

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist([r.reward for r in rows], bins=20, color="tab:blue")
    ax.set_xlabel("session reward")
    ax.set_ylabel("sessions")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Reward histogram")
    written.append(_save(fig, out / "reward_hist.png"))

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    axes[0].hist([r.turns for r in rows], bins=20, color="tab:orange")
    axes[0].set_xlabel("turns (model calls) per session")
    axes[1].hist([r.tokens for r in rows], bins=20, color="tab:purple")
    axes[1].set_xlabel("tokens per session")
    for a in axes:
        a.set_ylabel("sessions")
        a.yaxis.set_major_locator(MaxNLocator(integer=True))
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    written.append(_save(fig, out / "turns_tokens.png"))

    from polar_hpc.report.types import stage_order

    stages = [k for k in stage_order(k for r in rows for k in r.timings)
              if any(r.timings.get(k, 0) > 0 for r in rows)]
    if stages:
        fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(stages)), 3.8))
        ax.boxplot([[r.timings[k] for r in rows if r.timings.get(k, 0) > 0] for k in stages], tick_labels=stages)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: duration(v)))
        ax.set_ylabel("duration (log scale)")
        ax.set_title("Session time per stage, in pipeline order")
        ax.tick_params(axis="x", labelrotation=30)
        written.append(_save(fig, out / "stage_durations.png"))
    return written


def plot_grpo_steps(steps: Sequence[StepMetrics], out: Path) -> str:
    """Reward and trainer-vs-rollout |Δ logp| per GRPO step (``run_dir/trainer/steps.jsonl``)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    x = [m.step for m in steps]
    axes[0].plot(x, [float("nan") if m.reward is None else m.reward for m in steps], marker=".", color="tab:green")
    axes[0].set_ylim(-0.05, 1.05)
    axes[0].set_ylabel("mean session reward")
    axes[0].set_title("Reward per step")
    axes[1].plot(x, [m.logp_diff_mean for m in steps], marker=".", label="mean", color="tab:blue")
    axes[1].plot(x, [m.logp_diff_max for m in steps], marker=".", label="max", color="tab:red")
    axes[1].set_yscale("symlog", linthresh=1e-6)
    axes[1].set_ylabel("|logp trainer - logp rollout| (nat)")
    axes[1].set_title("Trainer vs rollout logprobs per step")
    axes[1].legend()
    for a in axes:
        a.set_xlabel("optimizer step")
        a.xaxis.set_major_locator(MaxNLocator(integer=True))
    return _save(fig, out / "grpo_steps.png")


def _save(fig: plt.Figure, path: Path) -> str:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
