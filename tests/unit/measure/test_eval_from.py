"""``polar-hpc eval --from RUN``: the figures of a run already made (an eval cut by ``--timeout``, or any run of
sampled sessions) from its committed shards and its own config; a run that did not finish is measured over what it
committed, said so, exit 1; bad input is one line, exit 2. The shard is tests/fixtures/shards/eval's real
sessions (pi: passed, wrong edit, timeout, no tool call)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from polar_hpc.cli.entry import main
from polar_hpc.config import dump_config, load_recipe
from polar_hpc.measure.eval import from_runs
from polar_hpc.measure.stats import wilson
from polar_hpc.wire.control import RunStatus
from polar_hpc.wire.rundir import RunDir

ROOT = Path(__file__).parents[3]
FIXTURE = ROOT / "tests" / "fixtures" / "shards" / "eval"
HELDOUT = ROOT / "recipes" / "tasks" / "distill" / "heldout.jsonl"
ASKED = 10
"""tasks.limit of the run made here: ten held-out tasks, one sample each."""


def _run(tmp_path: Path, *, finished: bool) -> Path:
    cfg = load_recipe(ROOT / "recipes" / "distill-pi.toml",
                      [f"tasks.path={json.dumps(str(HELDOUT))}", f"tasks.limit={ASKED}"])
    run = RunDir(tmp_path / "run")
    run.shards.mkdir(parents=True)
    run.config_path.write_text(dump_config(cfg))
    for shard in FIXTURE.glob("*.h5"):
        shutil.copy(shard, run.shards / shard.name)
    now = time.time()
    run.write_status(RunStatus(started=now - 90.0, updated=now, finished=finished))
    return run.root


def test_a_cut_run_is_measured_over_what_it_committed(tmp_path: Path) -> None:
    report = from_runs([_run(tmp_path, finished=False)])
    (pi,) = [r for r in report.rows if r.harness == "pi"]
    assert (pi.n, pi.expected, pi.model, pi.split, pi.samples) == (4, ASKED, "asset:smollm2", "heldout", 1)
    assert pi.pass_at_1 == pytest.approx(1 / 4, abs=1e-12)
    assert (pi.ci_low, pi.ci_high) == pytest.approx(wilson(1, 4), abs=1e-12)
    assert {c: n for c, n in pi.causes.items() if n} == {"wrong_edit": 1, "timeout": 1, "no_tool_call": 1}
    assert pi.wall_s == pytest.approx(90.0, abs=1.0)
    assert len(pi.task_passes) == 4 and sum(sum(v) for v in pi.task_passes.values()) == 1
    (cut,) = report.cut
    assert "the run did not finish: the figures are over the 7 of 10 sessions committed" in cut


def test_a_finished_run_is_not_cut(tmp_path: Path) -> None:
    assert from_runs([_run(tmp_path, finished=True)]).cut == []


def test_the_cli_prints_the_table_and_exits_1_for_a_cut_run(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, finished=False)
    out_json = tmp_path / "rows.json"
    assert main(["eval", "--from", str(run), "--json", str(out_json)]) == 1
    out = capsys.readouterr().out
    pi_line = next(line for line in out.splitlines() if line.startswith("pi "))
    assert " 4/10 " in pi_line and " 0.250 " in pi_line, out
    assert "the run did not finish" in out
    rows = json.loads(out_json.read_text())
    assert {(r["harness"], r["n"], r["expected"]) for r in rows} >= {("pi", 4, ASKED)}


@pytest.mark.parametrize(("argv", "said"), [
    (["eval"], "eval needs RECIPE, --model, --tasks (or --from RUN for a run already made)"),
    (["eval", "--from", "{tmp}/nowhere"], "--from {tmp}/nowhere: not a run dir (expected {tmp}/nowhere/config.toml)"),
    (["eval", "--from", "{tmp}", "--model", "asset:smollm2"], "eval --from RUN measures runs already made"),
])
def test_bad_input_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                               said: str) -> None:
    assert main([a.format(tmp=tmp_path) for a in argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and said.format(tmp=tmp_path) in err, err


def test_a_run_with_nothing_committed_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = _run(tmp_path, finished=True)
    for shard in RunDir(run).shards.glob("*.h5"):
        shard.unlink()
    assert main(["eval", "--from", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--from {run}: no committed session to measure" in err, err
