"""Real Qwen3 template: canonical rendering fragments chains where the template rewrites history;
continuation keeps one chain and never re-tokenizes a sampled token."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.config.run import BuilderSpec
from polar_hpc.proxy.prompt import PromptBuilder
from polar_hpc.trajectory.registry import get_builder
from polar_hpc.wire.traces import Trajectory
from tests.unit.trajectory.sim import Turn, multi_user, run_session, tool_loop


@pytest.fixture(scope="module")
def qwen3(qwen3_tokenizer_dir: Path) -> ChatTemplate:
    return ChatTemplate.from_model_dir(qwen3_tokenizer_dir)


def merge(template: ChatTemplate, records: list) -> Trajectory:
    return get_builder(BuilderSpec(name="prefix_merging"), end_of_turn_id=template.end_of_turn_id).build(records)


def retokenized(traj: Trajectory) -> int:
    return sum(int(t.meta.retokenized_tokens) for t in traj.traces)


CASES = {
    # name: (turns, template kwargs, echo reasoning, chains in canonical mode, why chains break there)
    "tool_loop_thinking": (tool_loop(10), {}, True, 10, "retokenized"),
    "tool_loop_thinking_reasoning_dropped": (tool_loop(10), {}, False, 10, "retokenized"),
    "tool_loop_no_thinking": (tool_loop(10), {"enable_thinking": False}, True, 10, "prompt_diverged"),
    "multi_user_reasoning": (multi_user(4), {}, True, 12, "retokenized"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_canonical_chains_follow_the_template(qwen3: ChatTemplate, case: str) -> None:
    turns, kw, echo, chains, why = CASES[case]
    s = run_session(qwen3, "canonical", "You are a coding agent.", "List the dirs.", turns,
                    template_kwargs=kw, echo_reasoning=echo)
    traj = merge(qwen3, s.records)
    assert traj.stats.chains == chains
    assert all(b.mode == "canonical" for b in s.builds)
    assert traj.stats.breaks == {why: chains - 1}
    assert [t.meta.parent_chain for t in traj.traces] == [None, *range(chains - 1)]
    # sampled ids are not the canonical tokenization: the next prompt re-tokenized them, so the chain breaks
    # there and every trace's context is exactly the prompt its reply was sampled from
    if why == "retokenized":
        assert retokenized(traj) > 0
    by_id = {r.completion_id: r for r in s.records}
    for tr in traj.traces:
        (cid,) = tr.meta.completion_ids
        assert np.array_equal(tr.prompt_ids, by_id[cid].prompt_ids)


@pytest.mark.parametrize("case", sorted(CASES))
def test_continuation_is_one_chain_without_retokenization(qwen3: ChatTemplate, case: str) -> None:
    turns, kw, echo, _, _ = CASES[case]
    s = run_session(qwen3, "continuation", "You are a coding agent.", "List the dirs.", turns,
                    template_kwargs=kw, echo_reasoning=echo)
    assert [b.mode for b in s.builds] == ["canonical"] + ["continuation"] * (len(turns) - 1)
    for b, rec in zip(s.builds[1:], s.records[1:], strict=True):
        # only what follows the reply was rendered, and it is exactly the canonical render's ending
        canon = qwen3.render_ids(*_render_args(rec), add_generation_prompt=True, **kw)
        assert 0 < b.rendered_tokens < 80 and b.ids[-b.rendered_tokens:] == canon[-b.rendered_tokens:]
        assert b.held_tokens == len(b.ids) - b.rendered_tokens
    traj = merge(qwen3, s.records)
    assert traj.stats.chains == 1 and traj.stats.breaks == {}
    assert retokenized(traj) == 0
    (tr,) = traj.traces
    # the merged trace is exactly the last prompt plus the last reply, as the model saw and sampled it
    last = s.records[-1]
    full = np.concatenate([tr.prompt_ids, tr.response_ids])
    assert np.array_equal(full, np.concatenate([last.prompt_ids, last.output_ids]))
    assert int(tr.loss_mask.sum()) == sum(len(r.output_ids) for r in s.records)


@pytest.mark.parametrize("kw", [{}, {"enable_thinking": False}])
def test_continuation_suffix_is_the_canonical_render(qwen3: ChatTemplate, kw: dict) -> None:
    """With canonically tokenized samples and echoed reasoning, the tool loop's continuation equals canonical."""
    pb = PromptBuilder(qwen3, "continuation", measure_divergence=True)
    s = run_session(qwen3, "continuation", "sys", "go", tool_loop(6), template_kwargs=kw, split_sampling=False,
                    builder=pb)
    expected = 0 if not kw else None
    for b, rec in zip(s.builds[1:], s.records[1:], strict=True):
        canon = qwen3.render_ids(*_render_args(rec), add_generation_prompt=True, **kw)
        if expected == 0:
            assert b.ids == canon and b.divergence_tokens == 0
        else:  # Qwen3 drops the empty think block of earlier turns: the canonical render differs there only
            assert b.divergence_tokens > 0
            assert b.ids[-5:] == canon[-5:]


def _render_args(rec) -> tuple:
    from polar_hpc.chat.template import to_template_messages, to_template_tools

    return to_template_messages(rec.canonical.messages), to_template_tools(rec.canonical.tools)


def test_length_cut_reply_is_closed_by_end_of_turn(qwen3: ChatTemplate) -> None:
    turns = tool_loop(3)
    turns[0].cut = True
    s = run_session(qwen3, "continuation", "sys", "go", turns)
    first, second = s.records[0], s.records[1]
    held = len(first.prompt_ids) + len(first.output_ids)
    assert second.prompt_ids[held] == qwen3.end_of_turn_id
    traj = merge(qwen3, s.records)
    (tr,) = traj.traces
    pos = len(first.output_ids)
    assert tr.response_ids[pos] == qwen3.end_of_turn_id and tr.loss_mask[pos] == 0
    assert tr.response_logprobs[pos] == 0.0


def test_echo_with_rewritten_tool_call_arguments_still_continues(qwen3: ChatTemplate) -> None:
    """The sim echoes tool-call ids renamed and arguments re-serialized compactly; the reply still matches."""
    s = run_session(qwen3, "continuation", "sys", "go",
                    [Turn(reasoning="r", content="", calls=[("bash", {"cmd": "ls", "n": [1, 2]})],
                          then_tool=["ok"]), Turn(reasoning="done", content="bye")])
    assert s.builds[1].mode == "continuation"
