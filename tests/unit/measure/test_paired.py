"""``eval --paired``: two evaluations of one task file compared task by task, with an exact sign test."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from scipy.stats import binomtest

from polar_hpc.cli.entry import main
from polar_hpc.measure.eval import EvalRow
from polar_hpc.measure.paired import compare, sign_test
from tests.unit.measure.test_eval_from import _run


@pytest.mark.parametrize(("better", "worse"), [(0, 0), (8, 2), (2, 8), (5, 5), (0, 36), (13, 4), (1, 0)])
def test_the_sign_test_matches_scipys_binomial_test(better: int, worse: int) -> None:
    n = better + worse
    expected = 1.0 if n == 0 else binomtest(better, n, 0.5, alternative="two-sided").pvalue
    assert sign_test(better, worse) == pytest.approx(expected, rel=1e-9)


def test_the_sign_test_stays_exact_past_a_floats_range() -> None:
    assert sign_test(0, 2000) == 0.0 and sign_test(1000, 1000) == 1.0
    with pytest.raises(ValueError, match="expected counts >= 0"):
        sign_test(-1, 3)


def _row(harness: str, passes: dict[str, list[bool]], run: str) -> EvalRow:
    return EvalRow(harness=harness, model=f"/m/{run}", tasks="heldout.jsonl", split="heldout", recipe="r.toml",
                   n=sum(map(len, passes.values())), task_count=len(passes), samples=1, pass_at_1=0.0, ci_low=0.0,
                   ci_high=1.0, pass_at_k=None, k=1, causes={}, wall_s=0.0, session_s=None, seed=0, run_dir=run,
                   task_passes=passes)


def test_compare_pairs_tasks_of_one_harness() -> None:
    sft = [_row("pi", {"a": [True], "b": [False], "c": [False], "d": [True], "only-sft": [True]}, "sft"),
           _row("mini_swe_agent", {"a": [False]}, "sft")]
    grpo = [_row("pi", {"a": [True], "b": [True], "c": [True], "d": [False], "only-grpo": [False]}, "grpo")]
    (row,) = compare(sft, grpo)
    assert (row.harness, row.base, row.other, row.tasks) == ("pi", "sft", "grpo", 4)
    assert (row.base_pass_at_1, row.other_pass_at_1) == (pytest.approx(0.5), pytest.approx(0.75))
    assert (row.diff, row.better, row.worse) == (pytest.approx(0.25), 2, 1)
    assert row.p_value == pytest.approx(1.0)
    # several samples a task: the task's pass rate is what is compared
    (multi,) = compare([_row("pi", {"a": [True, False], "b": [False, False]}, "x")],
                       [_row("pi", {"a": [True, True], "b": [False, False]}, "y")])
    assert (multi.better, multi.worse, multi.diff) == (1, 0, pytest.approx(0.25))


def test_the_cli_compares_runs_task_by_task(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _run(tmp_path / "a", finished=True)
    second = tmp_path / "b"
    shutil.copytree(first, second)
    assert main(["eval", "--paired", "--from", str(first), "--from", str(second)]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("pi ") and " vs " in x)
    assert "4 tasks  0.250 -> 0.250 (+0.000)  better on 0, worse on 0  p = 1" in line, out


@pytest.mark.parametrize(("argv", "said"), [
    (["eval", "--paired", "--from", "{run}"], "eval --paired compares runs: give two or more --from RUN (got 1)"),
    (["eval", "--paired", "r.toml", "--model", "m", "--tasks", "t"], "eval --paired compares runs already made"),
])
def test_paired_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                      said: str) -> None:
    run = _run(tmp_path, finished=True)
    assert main([a.format(run=run) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and said in err, err
