"""Sub-agents and compaction start their own chains, each emitted with provenance."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.config.base import ConfigError
from polar_hpc.config.run import BuilderSpec
from polar_hpc.proxy.prompt import PromptBuilder
from polar_hpc.trajectory.registry import get_builder
from polar_hpc.wire.traces import TraceStatus
from tests.unit.trajectory.sim import run_session, tool_loop
from tests.unit.trajectory.synth import EOT, SynthSpec, make_records

SYSTEM = "You are a coding agent."


@pytest.mark.parametrize("mode", ["canonical", "continuation"])
def test_sub_agent_and_compaction_chains(qwen3_tokenizer_dir: Path, mode: str) -> None:
    tpl = ChatTemplate.from_model_dir(qwen3_tokenizer_dir)
    pb = PromptBuilder(tpl, mode)  # type: ignore[arg-type]
    main_turns = tool_loop(3)
    main_turns[-1].then_user = "Now delegate the tests to a helper."
    main = run_session(tpl, mode, SYSTEM, "Fix the bug.", main_turns, builder=pb)  # type: ignore[arg-type]
    sub = run_session(tpl, mode, SYSTEM, "Run the tests in tests/.", tool_loop(2), builder=pb,  # type: ignore[arg-type]
                      start_index=3, seed=1)
    back = run_session(tpl, mode, SYSTEM, "", tool_loop(2), builder=pb, start_index=5,  # type: ignore[arg-type]
                       history=main.messages, seed=2)
    compact = run_session(tpl, mode, SYSTEM, "Summary of the work so far: fixed the bug.", tool_loop(2),  # type: ignore[arg-type]
                          builder=pb, start_index=7, seed=3)
    records = main.records + sub.records + back.records + compact.records
    traj = get_builder(BuilderSpec(), end_of_turn_id=tpl.end_of_turn_id).build(records)
    if mode == "canonical":  # canonical re-renders re-tokenize every reply: each starts a chain of its own
        assert [t.meta.completion_indices for t in traj.traces] == [[i] for i in range(9)]
        assert traj.stats.breaks.get("retokenized", 0) > 0
        return
    assert traj.stats.chains == 3
    main_t, sub_t, compact_t = traj.traces
    assert main_t.meta.completion_indices == [0, 1, 2, 5, 6]
    assert sub_t.meta.completion_indices == [3, 4]
    assert compact_t.meta.completion_indices == [7, 8]
    assert main_t.meta.parent_chain is None and main_t.meta.break_reason is None
    assert sub_t.meta.parent_chain == 0 and sub_t.meta.break_reason == "prompt_diverged"
    # the sub-agent shares the system turn (with the tools) and forks at the user turn
    header = len(tpl.render_ids([{"role": "system", "content": SYSTEM}],
                                [{"type": "function", "function": {"name": "bash"}}], add_generation_prompt=False))
    assert sub_t.meta.fork_token > header // 2
    assert sub_t.meta.fork_completion_id == "s#0-0"
    assert compact_t.meta.parent_chain in (0, 1) and compact_t.meta.fork_token > 0
    assert traj.stats.breaks == {"prompt_diverged": 2}
    assert traj.stats.completions_merged == 9


def test_side_requests_excluded_by_default_and_included_on_request() -> None:
    records, _ = make_records(3, SynthSpec(agents=1, turns=5, p_side=1.0))
    default = get_builder(BuilderSpec(), end_of_turn_id=EOT).build(records)
    assert default.stats.side_requests_excluded == 5 and default.stats.chains == 1
    included = get_builder(BuilderSpec(include_side_requests=True), end_of_turn_id=EOT).build(records)
    assert included.stats.side_requests_excluded == 0 and included.stats.chains > 1


def test_training_filter_marks_unfinished_sessions_and_unparsed_calls() -> None:
    records, _ = make_records(4, SynthSpec(agents=1, turns=3))
    records[1].parse_error = "invalid JSON in <tool_call>"
    traj = get_builder(BuilderSpec(name="per_request"), end_of_turn_id=EOT).build(records, TraceStatus.TIMEOUT)
    assert [t.filter for t in traj.traces] == [
        ["session_timeout"], ["session_timeout", "unparsed_tool_call"], ["session_timeout"]]
    assert not any(t.trainable for t in traj.traces)
    ok = get_builder(BuilderSpec(), end_of_turn_id=EOT).build(records)
    (tr,) = ok.traces
    assert tr.filter == ["unparsed_tool_call"]
    assert tr.meta.unparsed_tool_calls == {"c1": "invalid JSON in <tool_call>"}


def test_registry_names_module_paths_and_errors() -> None:
    b = get_builder(BuilderSpec(name="polar_hpc.trajectory.per_request:PerRequestBuilder"))
    assert b.name == "per_request"
    with pytest.raises(ConfigError, match="known builders are per_request, prefix_merging"):
        get_builder(BuilderSpec(name="prefix_mergin"))
    with pytest.raises(ConfigError, match="not a subclass"):
        get_builder(BuilderSpec(name="polar_hpc.wire.traces:Trace"))
    with pytest.raises(ConfigError, match="unknown key 'eot'"):
        get_builder(BuilderSpec(options={"eot": 3}))


def test_end_of_turn_inferred_from_the_first_stopped_reply() -> None:
    records, chains = make_records(5, SynthSpec(agents=1, turns=4, p_cut=0.5, p_rerender=1.0))
    traj = get_builder(BuilderSpec()).build(records)
    assert traj.stats.chains == chains > 1 and set(traj.stats.breaks) == {"retokenized"}
    assert np.all(traj.traces[0].response_logprobs[traj.traces[0].loss_mask == 0] == 0.0)


def test_a_retried_request_breaks_as_prompt_repeated() -> None:
    """A client that sends the same request again (Gemini CLI retries a stream it could not parse): the copy starts
    a chain of its own, named for what happened."""
    import msgspec

    records, _ = make_records(5, SynthSpec(agents=1, turns=3))
    retry = msgspec.structs.replace(records[0], completion_id="retry", index=1)
    later = [msgspec.structs.replace(r, index=r.index + 1) for r in records[1:]]
    traj = get_builder(BuilderSpec(), end_of_turn_id=EOT).build([records[0], retry, *later])
    assert traj.stats.breaks == {"prompt_repeated": 1}
    repeated = next(t for t in traj.traces if t.meta.break_reason)
    assert repeated.meta.completion_ids[0] == "retry" and repeated.meta.parent_chain == 0
