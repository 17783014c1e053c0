"""The trainer's side of the logprob agreement: a transformers causal LM loaded the way the reference server
loads it (``reference.model.load_model``: float32, eval mode) recomputes the logprob of chosen
response tokens of a trace under its whole assembled context, prompt ids ‖ response ids before each token.

One forward pass per trace (teacher forcing); only the rows of the kept positions go through the LM head. A trace
with more kept positions than ``LOGIT_BUDGET`` allows is run in consecutive pieces over one KV cache, as the
reference server prefills (same context, bounded memory).

Threads: torch's OpenMP workers spin after each op by default; on a few shared cores that costs a lot.
``load_scorer`` sets ``OMP_WAIT_POLICY=PASSIVE`` unless the environment says otherwise (it acts only when torch
is first imported), and one thread per two CPUs unless told (``threads``). Measured on this 2-core VM under a load
of ~11 (SmolLM2-135M, 900 positions kept of a 2,000-token trace, best of 3): 1 thread 18.8 s passive / 26.7 s
spinning, 2 threads 31.6 s / 62.3 s.

A trainer that holds its own model gets the command's figures for a batch with :func:`batch_agreement`.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from polar_hpc.errors import PolarError
from polar_hpc.log import get_logger
from polar_hpc.train.agreement import AgreementStats, agreement_stats

if TYPE_CHECKING:
    import torch

log = get_logger("train")

LOGIT_BUDGET = 1 << 26
"""Logits (float32) computed at once: 256 MB; with Qwen3's 151,936-token vocabulary, 441 positions a piece."""
ORACLE_TEMPERATURE = 1.0
"""Oracle tokens are scored by a teacher-forcing prefill, whose logprobs are raw ``log_softmax`` (SGLang's
``input_token_logprobs``), whatever the harness asked for."""


class ModelLoadError(PolarError, ValueError):
    """The model dir cannot be loaded as a transformers causal LM; the message is one line."""


def default_threads() -> int:
    """One torch thread per two CPUs this process may use (at least one)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cpus // 2)


def scoring_temperature(policy: str, temperature: float) -> float:
    """The temperature the engine's recorded logprobs are under: ``temperature`` for sampled tokens (greedy, below
    the reference server's ``GREEDY_EPS``, reports raw logprobs: 1), 1 for oracle (forced) tokens."""
    from polar_hpc.reference.model import GREEDY_EPS

    if policy == "oracle" or temperature < GREEDY_EPS:
        return ORACLE_TEMPERATURE
    return temperature


class TraceScorer:
    """A causal LM that scores traces (:func:`load_scorer` loads one; a trainer wraps its own model, on any
    device, in eval mode: dropout off)."""

    def __init__(self, model: torch.nn.Module, model_dir: Path | None = None, threads: int = 0,
                 logit_budget: int = LOGIT_BUDGET) -> None:
        self.model = model
        self.logit_budget = logit_budget
        self.model_dir = model_dir
        self.threads = threads
        head: Any = model.get_output_embeddings()  # type: ignore[operator]
        self.vocab_size = int(head.weight.shape[0])
        self.device = head.weight.device

    def logprobs(self, prompt_ids: np.ndarray, response_ids: np.ndarray, positions: np.ndarray,
                 temperature: float = 1.0) -> np.ndarray:
        """float64 logprobs of ``response_ids[positions]``, each under prompt ‖ response before it, from
        ``log_softmax(logits / temperature)``. ``positions`` ascending; the prompt is not empty."""
        import torch

        if len(prompt_ids) == 0:
            raise ValueError("a trace with an empty prompt has no context for its first response token")
        ids = torch.from_numpy(np.concatenate([prompt_ids, response_ids]).astype(np.int64)).to(self.device)
        rows = len(prompt_ids) - 1 + positions.astype(np.int64)  # the logits at row r predict token r + 1
        per_piece = max(1, self.logit_budget // self.vocab_size)
        out = np.empty(len(rows), dtype=np.float64)
        cache: Any = None
        start = 0
        pieces = range(0, len(rows), per_piece)
        with torch.inference_mode():
            for i in pieces:
                keep = rows[i:i + per_piece]
                end = int(keep[-1]) + 1
                res = self.model(input_ids=ids[None, start:end], cache=cache, use_cache=len(pieces) > 1,
                                 logits_to_keep=torch.from_numpy(keep - start).to(self.device))
                logits = res.logits[0].float()
                if temperature != 1.0:
                    logits = logits / temperature
                targets = ids[torch.from_numpy(keep + 1).to(self.device)]
                lp = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None])[:, 0]
                out[i:i + len(keep)] = lp.double().cpu().numpy()
                cache, start = res.cache, end
        return out


def load_scorer(model_dir: str | os.PathLike[str], *, threads: int | None = None) -> TraceScorer:
    """Load ``model_dir`` (see the module docstring for threads); ``ModelLoadError`` when the loader cannot."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import torch

    from polar_hpc.reference.model import load_model

    path = Path(model_dir)
    n = threads or default_threads()
    torch.set_num_threads(n)
    try:
        model = load_model(path)
    except (OSError, ValueError, KeyError, RuntimeError, TypeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise ModelLoadError(f"--model {path}: cannot load a transformers causal LM ({first})") from None
    log.debug("scoring with %s (float32, %d torch threads)", path, n)
    return TraceScorer(model, path, n)


def batch_agreement(model: torch.nn.Module, prompt_ids: Sequence[Any], completion_ids: Sequence[Any],
                    loss_mask: Sequence[Any], rollout_logprobs: Sequence[Any], *,
                    temperature: float = 1.0) -> AgreementStats:
    """For a trainer: ``model`` (its current weights, no gradient; put back in its mode after) scores each
    sequence of the batch as ``polar-hpc shards logprobs`` scores a trace, and the figures of ``agreement_stats``
    come back. Per sequence: prompt ids, completion ids, loss mask and rollout logprobs (aligned with the
    completion; 1-D arrays, lists or tensors). ``temperature``: what the rollout logprobs are under (see
    :func:`scoring_temperature`)."""
    scorer = TraceScorer(model)
    was_training = model.training
    model.eval()
    trainer: list[np.ndarray] = []
    rollout: list[np.ndarray] = []
    try:
        for p, c, m, r in zip(prompt_ids, completion_ids, loss_mask, rollout_logprobs, strict=True):
            positions = np.flatnonzero(_numpy(m))
            if positions.size:
                trainer.append(scorer.logprobs(_numpy(p), _numpy(c), positions, temperature))
                rollout.append(_numpy(r).astype(np.float64)[positions])
    finally:
        model.train(was_training)
    return agreement_stats(trainer, rollout) if trainer else AgreementStats()


def _numpy(x: Any) -> np.ndarray:
    out: np.ndarray = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x)
    return out
