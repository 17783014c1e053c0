"""Token fidelity over generated sessions: every trainable token is a sampled token with its logprob."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from polar_hpc.config.run import BuilderSpec
from polar_hpc.trajectory.registry import get_builder
from polar_hpc.wire.calls import CompletionRecord
from polar_hpc.wire.traces import Trajectory
from tests.unit.trajectory.synth import EOT, SynthSpec, make_records

specs = st.builds(SynthSpec, agents=st.integers(1, 3), turns=st.integers(1, 6), p_cut=st.sampled_from([0.0, 0.3, 1.0]),
                  p_rerender=st.sampled_from([0.0, 0.5, 1.0]), p_compact=st.sampled_from([0.0, 0.3]),
                  p_side=st.sampled_from([0.0, 0.3]), max_out=st.integers(0, 8), max_inter=st.integers(0, 6))


def build(name: str, records: list[CompletionRecord]) -> Trajectory:
    return get_builder(BuilderSpec(name=name), end_of_turn_id=EOT).build(records)


def check_fidelity(traj: Trajectory, records: list[CompletionRecord]) -> None:
    by_id = {r.completion_id: r for r in records}
    seen: Counter[str] = Counter()
    for tr in traj.traces:
        assert tr.response_ids.shape == tr.loss_mask.shape == tr.response_logprobs.shape
        ones = np.flatnonzero(tr.loss_mask == 1)
        cursor = 0
        for cid in tr.meta.completion_ids:
            seen[cid] += 1
            rec = by_id[cid]
            n = rec.output_ids.shape[0]
            pos = ones[cursor:cursor + n]
            assert pos.shape[0] == n
            if n:
                assert np.array_equal(pos, np.arange(pos[0], pos[0] + n)), "a reply must stay contiguous"
            assert np.array_equal(tr.response_ids[pos], rec.output_ids)
            assert np.array_equal(tr.response_logprobs[pos], rec.output_logprobs)
            if n:  # the reply's context in the trace is exactly the prompt the model sampled it from
                context = np.concatenate([tr.prompt_ids, tr.response_ids[:pos[0]]])
                assert np.array_equal(context, rec.prompt_ids), f"{cid}: context differs from its prompt"
            cursor += n
        assert cursor == ones.shape[0], "every mask-1 token belongs to a sampled reply"
        assert np.all(tr.response_logprobs[tr.loss_mask == 0] == 0.0)
    kept = [r for r in records if not r.side_request]
    assert seen == Counter(r.completion_id for r in kept), "each sampled reply exactly once"


def sampled_multiset(traj: Trajectory) -> Counter[tuple[int, float]]:
    out: Counter[tuple[int, float]] = Counter()
    for tr in traj.traces:
        m = tr.loss_mask == 1
        out.update(zip(tr.response_ids[m].tolist(), tr.response_logprobs[m].tolist(), strict=True))
    return out


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), spec=specs)
def test_builders_keep_token_fidelity(seed: int, spec: SynthSpec) -> None:
    records, chains = make_records(seed, spec)
    merged = build("prefix_merging", records)
    single = build("per_request", records)
    check_fidelity(merged, records)
    check_fidelity(single, records)
    assert sampled_multiset(merged) == sampled_multiset(single)
    assert merged.stats.chains == len(merged.traces) == chains
    assert merged.stats.side_requests_excluded == sum(r.side_request for r in records)
    total = merged.stats.tokens_trainable
    assert total == sum(len(r.output_ids) for r in records if not r.side_request)


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), agents=st.integers(1, 3), turns=st.integers(1, 6))
def test_verbatim_chains_rebuild_the_last_context(seed: int, agents: int, turns: int) -> None:
    """Without re-renders, each trace is exactly its last prompt plus its last reply."""
    records, _ = make_records(seed, SynthSpec(agents=agents, turns=turns))
    by_id = {r.completion_id: r for r in records}
    for tr in build("prefix_merging", records).traces:
        last = by_id[tr.meta.completion_ids[-1]]
        assert np.array_equal(np.concatenate([tr.prompt_ids, tr.response_ids]),
                              np.concatenate([last.prompt_ids, last.output_ids]))
        assert tr.meta.retokenized_tokens == 0
