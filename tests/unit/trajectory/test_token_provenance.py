"""Per token, the builders keep which weights sampled it (``Trace.response_versions``) and the sampler's top-k
(``response_top_ids`` / ``response_top_logprobs``): on every sampled token the values of the call that sampled
it, -1 / NaN on the interstitial tokens; and ``mismatch.token_turns`` names that call."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.config.run import BuilderSpec
from polar_hpc.proxy.prompt import PromptBuilder
from polar_hpc.train.grpo.mismatch import token_turns
from polar_hpc.trajectory.registry import get_builder
from tests.unit.trajectory.sim import run_session, tool_loop

K = 2


@pytest.mark.parametrize("builder", ["prefix_merging", "per_request"])
def test_versions_top_k_and_turns_follow_the_call_that_sampled(qwen3_tokenizer_dir: Path, builder: str) -> None:
    tpl = ChatTemplate.from_model_dir(qwen3_tokenizer_dir)
    s = run_session(tpl, "continuation", "You are a coding agent.", "Fix the bug.", tool_loop(3),
                    builder=PromptBuilder(tpl, "continuation"))
    for i, r in enumerate(s.records):  # call i sampled by version "default" (0), "1", "2"; call 1 without top-k
        r.weight_version = "default" if i == 0 else str(i)
        n = r.output_ids.shape[0]
        if i != 1:
            r.output_top_ids = (np.arange(n * K, dtype=np.int32) + 1000 * i)
            r.output_top_logprobs = -np.arange(n * K, dtype=np.float32) - i
    traj = get_builder(BuilderSpec(name=builder), end_of_turn_id=tpl.end_of_turn_id).build(s.records)
    assert len(traj.traces) == (1 if builder == "prefix_merging" else 3)
    for tr in traj.traces:
        calls = tr.meta().completion_indices
        m = tr.loss_mask > 0
        turns = token_turns(tr.loss_mask, calls)
        assert (turns[~m] == -1).all() and (tr.response_versions[~m] == -1).all()
        assert tr.response_versions[m].tolist() == turns[m].tolist()  # call i was sampled by version i
        if all(s.records[c].output_top_ids.size == 0 for c in calls):  # per_request's call 1: none recorded
            assert tr.top_width == 0 and tr.response_top_ids.shape == (0,)
            continue
        top = tr.response_top_ids.reshape(-1, K)
        assert tr.top_width == K and (top[~m] == -1).all()
        assert np.isnan(tr.response_top_logprobs.reshape(-1, K)[~m]).all()
        for c in calls:
            rec = s.records[c]
            n = rec.output_ids.shape[0]
            want = rec.output_top_ids.reshape(n, K) if rec.output_top_ids.size else np.full((n, K), -1)
            assert top[turns == c].tolist() == want.tolist()
            assert tr.response_ids[turns == c].tolist() == rec.output_ids.tolist()
