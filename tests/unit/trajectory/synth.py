"""Synthetic sessions at token level: agents, sub-agents, compaction, cut replies, canonical re-renders."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, CompletionRecord

EOT = 2
GEN = [1, 5]
SYSTEM = [7, 8, 9, 10, 11, 12]


@dataclass
class SynthSpec:
    agents: int = 1
    turns: int = 4
    p_cut: float = 0.2
    p_rerender: float = 0.0
    """Probability that the next prompt holds a canonical re-render of the reply instead of the sampled ids."""
    p_compact: float = 0.0
    p_side: float = 0.0
    max_out: int = 8
    max_inter: int = 6


def _rand(rng: np.random.Generator, lo: int, hi: int) -> list[int]:
    return [int(x) for x in rng.integers(20, 1000, int(rng.integers(lo, hi + 1)))]


def make_records(seed: int, spec: SynthSpec) -> tuple[list[CompletionRecord], int]:
    """Records in arrival order, and the number of chains prefix merging should find."""
    rng = np.random.default_rng(seed)
    prompts = [SYSTEM + _rand(rng, 3, 6) + GEN for _ in range(spec.agents)]
    left = [spec.turns] * spec.agents
    chains = spec.agents
    records: list[CompletionRecord] = []

    def record(prompt: list[int], out: list[int], cut: bool, side: bool = False) -> None:
        i = len(records)
        records.append(CompletionRecord(
            completion_id=f"c{i}", session_id="s#0", index=i, provider="openai_chat",
            canonical=CanonicalRequest(messages=[ChatMessage(role="user", content=f"m{i}")]),
            prompt_ids=np.asarray(prompt, dtype=np.int32), output_ids=np.asarray(out, dtype=np.int32),
            output_logprobs=-rng.random(len(out)).astype(np.float32) - 0.01,
            finish_reason="length" if cut else "stop", response=ChatMessage(role="assistant", content=f"r{i}"),
            side_request=side))

    while any(left):
        a = int(rng.choice([k for k in range(spec.agents) if left[k]]))
        left[a] -= 1
        if rng.random() < spec.p_side:
            record(SYSTEM + _rand(rng, 2, 4) + GEN, _rand(rng, 1, 3) + [EOT], False, side=True)
        cut = bool(rng.random() < spec.p_cut)
        out = _rand(rng, 0, spec.max_out) + ([] if cut else [EOT])
        record(prompts[a], out, cut)
        if left[a] and rng.random() < spec.p_compact:
            prompts[a] = SYSTEM + _rand(rng, 4, 8) + GEN
            chains += 1
            continue
        if rng.random() < spec.p_rerender:
            copy = _rand(rng, 1, max(1, spec.max_out)) + [EOT]
        else:
            copy = out + ([EOT] if cut else [])
        tail = copy + _rand(rng, 0, spec.max_inter) + [EOT] + _rand(rng, 0, 3) + GEN
        body = out[:-1] if out and out[-1] == EOT else out
        if left[a] and tail[:len(out)] != out and copy[:-1] != body:  # a re-tokenized reply starts a chain
            chains += 1
        prompts[a] = prompts[a] + tail
    return records, chains
