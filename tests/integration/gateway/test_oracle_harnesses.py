"""Every harness, for real and multi-turn: ``polar-hpc probe`` runs one oracle session of each CLI in a bwrap
sandbox against the reference server (tiny Qwen3) on a demo task. Each must exit 0 after at least four
main-agent calls (look, apply, verify, answer), be graded reward 1 by the task's own tests, and keep its whole
session in the number of chains docs/harnesses.md states (one: all of them send append-only histories), and every
trainable token's recorded logprob must be what transformers computes under the chain's assembled context
(``polar_hpc.train.agreement``: float noise; a chain built from a context the engine did not see jumps). The no-op
oracle takes the same turns without applying the fix and must be graded 0. mini-swe-agent runs in both its modes:
tool calls (its default) and text actions (one fenced block per reply, no tools in the request)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest

from polar_hpc.probe.report import ProbeRow
from polar_hpc.train.agreement import AgreementReport
from polar_hpc.train.agreement_shards import measure
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.oracle_probe import CLI, probe

pytestmark = [pytest.mark.slow]
REPO = Path(__file__).resolve().parents[3]
CHAINS = {h: 1 for h in CLI}
"""Chains per oracle session, as docs/harnesses.md's table says."""
FLOAT_NOISE = 1e-4
"""|rollout - trainer| of a token: float32 on the CPU, the server's prefill against one forward pass (≤ 1e-6 seen)."""




def validate(out: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "polar_hpc", "shards", "validate", str(RunDir(out / "run").shards)],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, f"shards validate:\n{done.stdout}\n{done.stderr}"


def agree(out: Path, model_dir: str, row: ProbeRow) -> AgreementReport:
    """The probe's oracle chains scored by transformers: every trainable token within float noise."""
    rep = measure(out / "run", model_dir)
    why = msgspec.json.encode(rep).decode()
    assert rep.within_tolerance and rep.chains == row.chains and rep.total.tokens == row.tokens_trainable, why
    assert [(g.harness, g.policy) for g in rep.groups] == [(row.harness, "oracle")], why
    assert rep.total.max_abs <= FLOAT_NOISE and rep.total.nonfinite == 0, why
    return rep


@pytest.mark.parametrize("harness", [h if CLI[h] is None else pytest.param(h, marks=pytest.mark.harness) for h in CLI])
def test_harness_solves_the_task_under_the_oracle(harness: str, reference_server: Any, tmp_path: Path,
                                                  no_leaked_children: None) -> None:
    row = probe(harness, reference_server.url, tmp_path / "probe")
    why = msgspec.json.encode(row).decode()
    assert row.status == "completed" and row.returncode == 0, why
    assert row.calls >= 4 and row.tool_calls >= 4, why
    assert row.reward == 1.0, why
    assert row.chains == CHAINS[harness], why
    assert row.drift_prevented == 0 and row.tokens_held > row.tokens_rendered > 0, why
    validate(tmp_path / "probe")
    agree(tmp_path / "probe", reference_server.model_dir, row)


@pytest.mark.harness
def test_pi_past_max_turns_is_stopped_by_the_proxy(reference_server: Any, tmp_path: Path,
                                                   no_leaked_children: None) -> None:
    """pi has no turn limit of its own: with ``agent.max_turns = 2`` the rank's proxy refuses its third agent call
    and the rank stops it. The session ends as a timeout after two calls (the oracle takes four), graded as the
    workspace stands: the fix was applied at the second call, the tests ran at the third, refused."""
    row = probe("pi", reference_server.url, tmp_path / "probe", "--max-turns", "2")
    why = msgspec.json.encode(row).decode()
    assert row.status == "timeout" and row.calls == 2, why
    assert "agent.max_turns=2 reached" in row.detail, why
    validate(tmp_path / "probe")


def test_noop_oracle_is_graded_zero(reference_server: Any, tmp_path: Path, no_leaked_children: None) -> None:
    row = probe("shell", reference_server.url, tmp_path / "probe", "--policy", "oracle_noop")
    why = msgspec.json.encode(row).decode()
    assert row.status == "completed" and row.returncode == 0 and row.calls >= 3, why
    assert row.reward == 0.0, why


@pytest.mark.harness
def test_codex_compaction_is_its_own_chain(reference_server: Any, tmp_path: Path, no_leaked_children: None) -> None:
    """Codex past its auto-compaction limit: its compaction prompt (no tools) gets the oracle's summary, the history
    it continues with replaces the earlier turns; each is a chain of its own, and the task is still solved."""
    row = probe("codex", reference_server.url, tmp_path / "probe", "--harness-arg=-c",
                "--harness-arg=model_auto_compact_token_limit=9000")
    why = msgspec.json.encode(row).decode()
    assert row.status == "completed" and row.returncode == 0 and row.reward == 1.0, why
    assert row.calls >= 5 and row.chains == 3, why
    details = [b.detail for b in row.breaks]
    assert details[0].startswith("a request without the tools") and details[1].startswith("compaction:"), why
    agree(tmp_path / "probe", reference_server.model_dir, row)


@pytest.mark.harness
def test_claude_code_sub_agent_is_its_own_chain(reference_server: Any, tmp_path: Path,
                                                 no_leaked_children: None) -> None:
    """The oracle hands the task to Claude Code's Agent tool; the sub-agent solves it in its own context. Since
    2.1.3xx the sub-agent runs in the background: the parent answers the "async agent launched" result, then once
    more after the sub-agent's completion notification (7 calls: 3 main, 4 sub-agent; 2.1.197 made 6)."""
    row = probe("claude_code", reference_server.url, tmp_path / "probe", "--policy", "oracle_subagent")
    why = msgspec.json.encode(row).decode()
    assert row.status == "completed" and row.returncode == 0 and row.reward == 1.0, why
    assert row.calls in (6, 7) and row.chains == 2, why
    assert row.breaks[0].detail == "a sub-agent's own context, started by the parent's Agent tool call", why
    validate(tmp_path / "probe")
    agree(tmp_path / "probe", reference_server.model_dir, row)


@pytest.mark.harness
def test_mini_swe_agent_text_actions(reference_server: Any, tmp_path: Path, no_leaked_children: None) -> None:
    """Text mode: the requests offer no tools; the oracle writes a THOUGHT and one ```mswea_bash_command block per
    reply (the finishing command last), the records say so, and the task is solved in one chain."""
    row = probe("mini_swe_agent", reference_server.url, tmp_path / "probe", "--harness-setting", "mode=text")
    why = msgspec.json.encode(row).decode()
    assert row.status == "completed" and row.returncode == 0 and row.reward == 1.0, why
    assert row.calls >= 4 and row.tool_calls == 0 and row.chains == 1, why
    records = [msgspec.json.decode(line) for p in (tmp_path / "probe" / "run" / "records").glob("*.jsonl")
               for line in p.read_bytes().splitlines()]
    assert {r["action_format"] for r in records} == {"text:mswea_bash_command"}, why
    assert all(r["response"]["content"].startswith("THOUGHT: ") for r in records), why
    validate(tmp_path / "probe")
    sft = tmp_path / "sft"
    done = subprocess.run([sys.executable, "-m", "polar_hpc", "export", "sft", str(tmp_path / "probe" / "run"), "--out",
                           str(sft), "--test-fraction", "0"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0, done.stderr
    (chat,) = (msgspec.json.decode(line) for line in (sft / "chat" / "train-00000-of-00001.jsonl").read_bytes()
               .splitlines())
    said = [m["content"] for m in chat["messages"] if m["role"] == "assistant"]
    assert said == [r["response"]["content"] for r in sorted(records, key=lambda r: r["index"])]  # text as written
    noop = probe("mini_swe_agent", reference_server.url, tmp_path / "noop", "--harness-setting", "mode=text",
                 "--policy", "oracle_noop")
    why = msgspec.json.encode(noop).decode()
    assert noop.status == "completed" and noop.returncode == 0 and noop.calls >= 3 and noop.reward == 0.0, why
