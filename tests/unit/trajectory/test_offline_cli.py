"""``polar-hpc build``: saved records → another builder → evaluated → one shard readable by the store."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.cli.entry import main
from polar_hpc.store.reader import ShardReader
from polar_hpc.wire import codec
from tests.unit.trajectory.sim import multi_user, run_session, tool_loop


def write_records(path: Path, records: list) -> None:
    path.write_bytes(b"".join(codec.to_json(r) + b"\n" for r in records))


def test_build_rebuilds_with_each_builder(tmp_path: Path, qwen3_tokenizer_dir: Path) -> None:
    tpl = ChatTemplate.from_model_dir(qwen3_tokenizer_dir)
    a = run_session(tpl, "canonical", "sys", "go", multi_user(3), session_id="task-a/0#0")
    b = run_session(tpl, "continuation", "sys", "go", tool_loop(4), session_id="task-b/1#2")
    write_records(tmp_path / "a.jsonl", a.records)
    write_records(tmp_path / "b.jsonl", b.records)
    inputs = [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--tokenizer", str(qwen3_tokenizer_dir)]

    assert main(["build", *inputs, "--builder", "prefix_merging", "--evaluator", "session_completed",
                 "--out", str(tmp_path / "merged")]) == 0
    assert main(["build", *inputs, "--builder", "per_request", "--out", str(tmp_path / "single")]) == 0

    merged = {r.key: r for r in ShardReader([tmp_path / "merged"]).results()}
    single = {r.key: r for r in ShardReader([tmp_path / "single"]).results()}
    assert set(merged) == set(single) == {"task-a/0", "task-b/1"}
    assert merged["task-b/1"].attempt == 2
    # canonical: the template re-tokenizes every reply in the next prompt, so each starts a chain of its own
    assert len(merged["task-a/0"].trajectory.traces) == 9
    assert merged["task-a/0"].trajectory.stats.breaks.get("retokenized", 0) > 0
    assert len(merged["task-b/1"].trajectory.traces) == 1
    assert len(single["task-a/0"].trajectory.traces) == 9
    assert merged["task-a/0"].reward == 1.0
    assert all(t.reward == 1.0 for t in merged["task-a/0"].trajectory.traces)
    for key in merged:
        m = sum(int(t.loss_mask.sum()) for t in merged[key].trajectory.traces)
        s = sum(int(t.loss_mask.sum()) for t in single[key].trajectory.traces)
        assert m == s
    tr = merged["task-b/1"].trajectory.traces[0]
    last = b.records[-1]
    assert np.array_equal(np.concatenate([tr.prompt_ids, tr.response_ids]),
                          np.concatenate([last.prompt_ids, last.output_ids]))


def test_build_names_the_bad_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"completion_id": 3}\n')
    import pytest

    with pytest.raises(ValueError, match=r"bad.jsonl:1: not a CompletionRecord"):
        main(["build", str(bad), "--out", str(tmp_path / "o")])
    assert main(["build", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o")]) == 2


def test_build_drops_a_session_that_breaks_token_fidelity(tmp_path: Path, qwen3_tokenizer_dir: Path) -> None:
    """The offline rebuild runs the gateway's post-run fidelity check: a sampled token without a finite logprob
    makes the session an ERROR without traces, as in a live run."""
    from polar_hpc.config.run import BuilderSpec
    from polar_hpc.postrun.offline import rebuild
    from polar_hpc.wire.traces import TraceStatus

    tpl = ChatTemplate.from_model_dir(qwen3_tokenizer_dir)
    good = run_session(tpl, "continuation", "sys", "go", tool_loop(2), session_id="ok/0#0")
    bad = run_session(tpl, "continuation", "sys", "go", tool_loop(2), session_id="bad/0#0")
    bad.records[0].output_logprobs = bad.records[0].output_logprobs.copy()
    bad.records[0].output_logprobs[0] = np.nan
    write_records(tmp_path / "r.jsonl", [*good.records, *bad.records])
    results = {r.key: r for r in rebuild([tmp_path / "r.jsonl"], BuilderSpec(name="prefix_merging"),
                                         end_of_turn_id=tpl.end_of_turn_id)}
    assert results["ok/0"].trajectory.status is TraceStatus.COMPLETED and results["ok/0"].trajectory.traces
    broken = results["bad/0"]
    assert broken.trajectory.status is TraceStatus.ERROR and broken.trajectory.traces == []
    assert "without a finite logprob" in (broken.trajectory.error or "")
    assert broken.notes.traces_dropped == 1
