"""The weights after every optimizer step: ``PushWeights`` (a TRL callback) saves the model under
``run_dir/checkpoints/step-N`` and stages it; ``StagedWeights.push`` loads the newest staged checkpoint on every
engine when ``LiveRollouts`` says no group is generating (exact staleness: see ``live``)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from transformers import TrainerCallback

from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.train.grpo.batch import StepRollouts, first_rows, row_temperatures
from polar_hpc.train.grpo.metrics import CHECKPOINTS, StepMetrics, append_step
from polar_hpc.wire.versions import ordered_names

if TYPE_CHECKING:
    from polar_hpc.train.grpo.stop import Stopper

log = get_logger("train")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf")


class WeightPushError(PolarError, RuntimeError):
    """The engines did not load a new checkpoint; the checkpoint stays on disk."""

    exit_code = 1


class StagedWeights:
    """The newest saved checkpoint and the version the engines serve: ``stage`` after a step, ``push`` when no
    rollout is generating. ``load(checkpoint, version)`` loads one on every engine (``AsyncRollouts.update_policy``)."""

    def __init__(self, load: Callable[[Path, int], None]) -> None:
        self.load = load
        self.staged: tuple[Path, int] | None = None
        self.served = 0
        """The version the engines serve (0: the initial weights, reported as ``default``)."""

    @property
    def pending(self) -> bool:
        return self.staged is not None

    def stage(self, checkpoint: Path, version: int) -> None:
        self.staged = (checkpoint, version)

    def push(self) -> float:
        """Load the staged checkpoint (if any) on every engine; the seconds it took. ``WeightPushError`` names the
        step and the checkpoint, which is kept."""
        if self.staged is None:
            return 0.0
        ckpt, version = self.staged
        t0 = time.monotonic()
        try:
            self.load(ckpt, version)
        except Exception as err:
            raise WeightPushError(f"step {version}: the engines did not load {ckpt} (kept on disk): {err}") from err
        self.staged, self.served = None, version
        return time.monotonic() - t0


def save_checkpoint(model: Any, base: Path, out: Path) -> Path:
    """``model``'s weights and config in ``out``, with ``base``'s other files (tokenizer, chat template)."""
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    for f in base.iterdir():
        if f.is_file() and not f.name.endswith(WEIGHT_SUFFIXES) and not (tmp / f.name).exists():
            shutil.copy(f, tmp / f.name)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


class Rollouts(Protocol):
    """What :class:`PushWeights` uses of ``live.LiveRollouts``: its run dir, its weights, the last step's rows."""

    run_dir: Path
    weights: StagedWeights
    last: StepRollouts | None

    def push_staged(self) -> float: ...


class PushWeights(TrainerCallback):
    """After every optimizer step: save the model and stage it on ``rollouts.weights`` (the rollouts load it on the
    engines when no rollout is generating), record and report the step's metrics (``trainer.last_tis``,
    ``rollouts.last``); at the end of training, load the last checkpoint (``rollouts.push_staged``) unless
    ``stopper`` says a signal ends the run."""

    def __init__(self, rollouts: Rollouts, trainer: Any, *, base_model: Path, keep: int,
                 temperature: float | None = None, report: Callable[[StepMetrics], None] | None = None,
                 started: float | None = None, stopper: Stopper | None = None) -> None:
        self.rollouts = rollouts
        self.trainer = trainer
        self.run_dir = rollouts.run_dir
        self.base_model = base_model
        self.keep = keep
        self.temperature = temperature
        """What the trainer scores at; a step sampled at another is reported."""
        self.report = report
        self.stopper = stopper
        self._t_step = time.monotonic() if started is None else started
        """When the current step began (the first: when its rollouts were first waited for)."""
        self._step_s = 0.0
        self._save_s = 0.0
        self.saved = 0

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kw: Any) -> None:
        step = int(state.global_step)
        t0 = time.monotonic()
        ckpt = save_checkpoint(model, self.base_model, self.run_dir / CHECKPOINTS / f"step-{step}")
        self.rollouts.weights.stage(ckpt, step)
        self.saved = step
        old = sorted((p for p in ckpt.parent.glob("step-*") if p.name[5:].isdigit()), key=lambda p: int(p.name[5:]))
        for p in old[:-self.keep]:
            shutil.rmtree(p, ignore_errors=True)
        now = time.monotonic()
        self._save_s = now - t0
        self._step_s, self._t_step = now - self._t_step, now

    def on_train_end(self, args: Any, state: Any, control: Any, **kw: Any) -> None:
        if self.stopper is None or not self.stopper.state.requested:
            self.rollouts.push_staged()

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None, **kw: Any) -> None:
        last = self.rollouts.last
        if not logs or "loss" not in logs or last is None:
            return
        tis = getattr(self.trainer, "last_tis", None)
        trained = [r for r in last.rows if not r.placeholder]
        rewards = [r.reward for r in first_rows(last.rows) if r.reward is not None]  # one per session
        temps = row_temperatures(last.rows)
        step = int(state.global_step)
        if self.temperature is not None and temps and temps != [self.temperature]:
            log.warning("step %d: rollouts sampled at temperature %s, the trainer scores at %g: the logprob "
                        "difference and TIS of those rows are not at their sampling temperature", step,
                        ", ".join(f"{t:g}" for t in temps), self.temperature)
        m = StepMetrics(
            step=step, reward=sum(rewards) / len(rewards) if rewards else None,
            loss=float(logs["loss"]),
            logp_diff_mean=tis.logp_diff_mean if tis else float("nan"),
            logp_diff_max=tis.logp_diff_max if tis else float("nan"),
            logp_share_above=tis.agreement.share_above if tis else float("nan"),
            clipped_share=tis.clipped_share if tis else float("nan"),
            masked_share=tis.masked_share if tis else float("nan"), mismatch=tis.mismatch if tis else None,
            grad_norm=float(logs["grad_norm"]) if logs.get("grad_norm") is not None else None,
            rollout_versions=ordered_names(v for r in trained for v in r.weight_versions),
            pushed_version=self.rollouts.weights.served, wait_s=last.wait_s, step_s=self._step_s, push_s=last.push_s,
            save_s=self._save_s, temperatures=temps, counts=last.counts, refill=last.refill, group_s=last.group_s,
            time=time.time(),
        )
        append_step(self.run_dir, m)
        log.debug("grpo step %d: %s", m.step, m)
        if self.report is not None:
            self.report(m)
