"""Bad values fail at recipe load with the exact place and value; names fail at preflight and --dry-run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from polar_hpc.config import ConfigError, load_recipe
from polar_hpc.evaluate.registry import EVALUATORS
from polar_hpc.harness import ADAPTERS
from polar_hpc.launch.preflight import preflight_problems

ROOT = Path(__file__).parents[3]
SHELL = ROOT / "recipes" / "local-shell.toml"


def _recipe(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "r.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(("text", "expected"), [
    ("[gateway]\nnum_ranks = 0\n", "gateway.num_ranks = 0: Expected `int` >= 1"),
    ("[inference]\nmax_new_tokens = -5\n", "inference.max_new_tokens = -5: Expected `int` >= 1"),
    ("[tasks]\nnum_samples = 0\n", "tasks.num_samples = 0: Expected `int` >= 1"),
    ("[gateway]\nnum_ranks = 'two'\n", "gateway.num_ranks = 'two': Expected `int`, got `str`"),
    ("[gateway]\nagent_timeout_s = 0\n", "gateway.agent_timeout_s = 0: Expected `float` > 0.0"),
    ("[gateway.resources]\ncpus_per_task = 0\n", "gateway.resources.cpus_per_task = 0: Expected `int` >= 1"),
    ("[coordinator]\nhttp_port = 70000\n", "coordinator.http_port = 70000: Expected `int` <= 65535"),
    ("[inference]\nmem_fraction_static = 1.5\n", "inference.mem_fraction_static = 1.5: Expected `float` <= 1.0"),
    ("[shards]\nmax_sessions = 0\n", "shards.max_sessions = 0: Expected `int` >= 1"),
])
def test_value_ranges_show_path_and_value(tmp_path: Path, text: str, expected: str) -> None:
    p = _recipe(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_recipe(p)
    assert str(info.value) == f"{p}: {expected}"


@pytest.mark.parametrize(("item", "expected"), [
    ("gateway.num_ranks=0", "--set gateway.num_ranks=0: gateway.num_ranks = 0: Expected `int` >= 1"),
    ("gateway.nmranks=2", "--set gateway.nmranks=2: gateway.nmranks: unknown key 'nmranks' (valid keys: "
     "agent_timeout_s, drain_grace_s, init_pool, keep_records, measure_divergence, num_ranks, postrun_pool, "
     "proxy_port, ready_buffer, render, resources, run_pool, session_timeout_s, start_gate)"),
    ("runtime.backend=chroot", "--set runtime.backend=chroot: runtime.backend = 'chroot': Invalid enum value "
     "'chroot' (valid choices: "),
])
def test_set_errors_name_the_set(item: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_recipe(SHELL, [item])
    assert str(info.value).startswith(expected)


def test_a_good_set_does_not_take_the_blame_for_the_file(tmp_path: Path) -> None:
    p = _recipe(tmp_path, "[gateway]\nnum_ranks = 0\n")
    with pytest.raises(ConfigError) as info:
        load_recipe(p, ["gateway.run_pool=3"])
    assert str(info.value) == f"{p}: gateway.num_ranks = 0: Expected `int` >= 1"


def test_required_where_a_default_would_be_wrong(tmp_path: Path) -> None:
    p = _recipe(tmp_path, "[inference]\nengine = 'sglang'\n")
    with pytest.raises(ConfigError) as info:
        load_recipe(p)
    assert str(info.value) == (f"{p}: inference.model: inference.engine = 'sglang' needs the model to serve (a model "
                               "directory); the default 'asset:tiny-qwen3' is the tiny random test model")
    p = _recipe(tmp_path, "[launch]\nbackend = 'slurm'\n")
    with pytest.raises(ConfigError) as info:
        load_recipe(p)
    assert str(info.value) == (f"{p}: inference.model: launch.backend = 'slurm' needs the model to serve (a model "
                               "directory); the default 'asset:tiny-qwen3' is the tiny random test model")
    p = _recipe(tmp_path, "[launch]\nbackend = 'slurm'\n[inference]\nmodel = '/m'\n")
    with pytest.raises(ConfigError) as info:
        load_recipe(p)
    assert str(info.value) == (f"{p}: [evaluator]: a Slurm run needs an explicit evaluator (e.g. name = 'command' "
                               "with a test command); without one every completed session gets reward 1 (say "
                               "evaluator.name = 'session_completed' if that is what you want)")
    ok = _recipe(tmp_path, "[launch]\nbackend = 'slurm'\n[inference]\nmodel = '/m'\n"
                           "[evaluator]\nname = 'session_completed'\n")
    assert load_recipe(ok).evaluator.name == "session_completed"
    assert load_recipe(SHELL, ["launch.backend=slurm"]).launch.backend == "slurm"  # the recipe names both


@pytest.mark.parametrize(("item", "expected"), [
    ("agent.harness=kodex", f"agent.harness = 'kodex': unknown harness (known: {', '.join(ADAPTERS)})"),
    ("builder.name=prefix_merge", "builder.name = 'prefix_merge': unknown builder 'prefix_merge': known builders "
     "are per_request, prefix_merging (or give a 'module:Class' path)"),
    ("evaluator.name=pytest", "evaluator.name = 'pytest': unknown evaluator 'pytest': known evaluators are "
     f"{', '.join(sorted(EVALUATORS))} (or give a 'module:Class' path)"),
    ("builder.options={nope=1}", "builder.name = 'prefix_merging': builder 'prefix_merging' options: nope: "
     "unknown key 'nope'"),
])
def test_preflight_checks_registry_names(item: str, expected: str) -> None:
    problems = preflight_problems(load_recipe(SHELL, [item]))
    assert problems and problems[0].startswith(expected), problems


def test_dry_run_runs_preflight_and_exits_2() -> None:
    out = subprocess.run([sys.executable, "-m", "polar_hpc", "launch", str(SHELL), "--dry-run",
                          "--set", "agent.harness=kodex"], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 2, out.stdout + out.stderr
    assert "# sbatch script: gateway" in out.stdout and "# preflight: 1 problem(s), see stderr" in out.stdout
    assert out.stderr == ("polar-hpc: the run cannot start:\n  - agent.harness = 'kodex': unknown harness "
                          f"(known: {', '.join(ADAPTERS)})\n")


def test_inference_environment_checked_at_preflight(tmp_path: Path) -> None:
    from polar_hpc.launch.preflight import check_inference_env

    both = load_recipe(SHELL, ["inference.python=/usr/bin/python3", "inference.container=/x.sif"])
    assert check_inference_env(both) == ["inference.python = '/usr/bin/python3' and inference.container = '/x.sif': "
                                         "give one of them"]
    gone = load_recipe(SHELL, [f"inference.python={tmp_path}/venv/bin/python"])
    assert check_inference_env(gone) == [f"inference.python = '{tmp_path}/venv/bin/python': not an executable file "
                                         "(the interpreter of the environment SGLang is installed in, e.g. "
                                         "/path/to/sglang-venv/bin/python)"]
    assert check_inference_env(load_recipe(SHELL, ["inference.container=/nope.sif"])) == [
        "inference.container = '/nope.sif': no such image file (a SIF path or a docker:// URI)"]
    assert check_inference_env(load_recipe(SHELL, ["inference.container=docker://x/sglang"])) == []
    assert check_inference_env(load_recipe(SHELL, ["inference.python=/usr/bin/python3"])) == []


def test_site_file_by_path(tmp_path: Path) -> None:
    from polar_hpc.launch.submit import render_sbatch
    from polar_hpc.wire.rundir import RunDir

    (tmp_path / "lab.toml").write_text("[all]\naccount = 'lab-x'\n[gateway]\npartition = 'cpu2'\n")
    recipe = tmp_path / "r.toml"
    recipe.write_text((ROOT / "recipes" / "swegym-offline-sft.toml").read_text().replace(
        'path = "tasks/', f'path = "{ROOT}/recipes/tasks/'))
    cfg = load_recipe(recipe, ["launch.site=lab.toml"])
    scripts = render_sbatch(cfg, RunDir("/r"))
    assert "#SBATCH --account=lab-x" in scripts["inference"] and "#SBATCH --partition=cpu2" in scripts["gateway"]
    cfg = load_recipe(recipe, [f"launch.site={tmp_path}/lab.toml"])
    assert "#SBATCH --account=lab-x" in render_sbatch(cfg, RunDir("/r"))["coordinator"]
    bad = load_recipe(recipe, ["launch.site=missing.toml"])
    with pytest.raises(ConfigError, match=f"launch.site = 'missing.toml': no site file {tmp_path}/missing.toml"):
        render_sbatch(bad, RunDir("/r"))
