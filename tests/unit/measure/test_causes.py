"""Failure causes read from real sessions of real runs (tests/fixtures/shards/eval: pi and mini-swe-agent's text
actions, oracle, oracle_noop and sampled sessions; make_eval_shard.py says how it was made), compared with what a
person read in each; and the per-harness summary those rows give."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from polar_hpc.config import load_recipe
from polar_hpc.config.run import AgentSpec
from polar_hpc.harness import get_adapter
from polar_hpc.measure.causes import cause_of
from polar_hpc.measure.eval import summarize
from polar_hpc.measure.stats import wilson
from polar_hpc.store.reader import ShardReader
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus

ROOT = Path(__file__).parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "shards" / "eval"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())


def _results() -> dict[str, SessionResult]:
    return {r.key: r for r in ShardReader(FIXTURE).results()}


def _fmt(harness: str, mode: str):  # type: ignore[no-untyped-def]
    settings = {"mode": mode} if harness == "mini_swe_agent" else {}
    return get_adapter(harness).action_format(AgentSpec(harness=harness, settings=settings))


@pytest.mark.parametrize("row", EXPECTED, ids=[f"{e['from']}-{e['cause']}" for e in EXPECTED])
def test_cause_of_a_real_session_is_what_a_person_read(row: dict[str, str]) -> None:
    result = _results()[row["key"]]
    assert result.harness == row["harness"]
    assert cause_of(result, _fmt(row["harness"], row["mode"])) == row["cause"]


def test_the_fixture_holds_every_cause_a_run_here_produced() -> None:
    assert {e["cause"] for e in EXPECTED} >= {"passed", "wrong_edit", "no_tool_call", "timeout"}
    assert {e["harness"] for e in EXPECTED} == {"pi", "mini_swe_agent"}


def test_status_decides_before_the_replies() -> None:
    """A session that errored is an error whatever its replies were (the oracle's passing session, status set)."""
    passed = next(r for r in _results().values() if r.harness == "pi" and r.reward == 1.0)
    errored = msgspec.structs.replace(passed, trajectory=msgspec.structs.replace(passed.trajectory,
                                                                                 status=TraceStatus.ERROR))
    assert cause_of(errored, _fmt("pi", "tools")) == "error"


def test_summary_of_the_pi_rows() -> None:
    cfg = load_recipe(ROOT / "recipes" / "distill-pi.toml")
    pi = [r for r in _results().values() if r.harness == "pi"]
    want = [e["cause"] for e in EXPECTED if e["harness"] == "pi"]
    (row,) = summarize(pi, cfg, tasks=Path("x/heldout.jsonl"), model="m", samples=1, seed=0, wall_s=1.0,
                       run_dir="r", recipe="distill-pi.toml")
    passes = want.count("passed")
    assert (row.n, row.task_count, row.split) == (len(want), len(want), "heldout")
    assert row.pass_at_1 == pytest.approx(passes / len(want), abs=1e-12)
    assert (row.ci_low, row.ci_high) == pytest.approx(wilson(passes, len(want)), abs=1e-12)
    assert row.causes == {c: want.count(c) for c in row.causes} and sum(row.causes.values()) == len(want) - passes
    assert row.pass_at_k is None
