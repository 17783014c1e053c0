"""A pool size this machine cannot hold is refused before submit, naming the limit (launch/capacity.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from polar_hpc.config import load_recipe
from polar_hpc.launch.capacity import (
    RANK_COST,
    SESSION_COST,
    MachineLimits,
    machine_limits,
    pool_problems,
    sessions_per_rank,
)
from polar_hpc.launch.preflight import preflight_problems

ROOT = Path(__file__).parents[3]
SHELL = ROOT / "recipes" / "local-shell.toml"
ROOMY = MachineLimits(fds=1 << 20, fds_from="RLIMIT_NOFILE (ulimit -n)", pids=1 << 22, pids_from="pid_max",
                      mem_mb=1 << 20, mem_from="MemTotal (/proc/meminfo)")


def _cfg(run_pool: int, ranks: int = 1):  # type: ignore[no-untyped-def]
    return load_recipe(SHELL, [f"gateway.run_pool={run_pool}", f"gateway.num_ranks={ranks}"])


def test_a_pool_that_fits_passes() -> None:
    assert pool_problems(_cfg(1000), ROOMY) == []


def test_too_few_file_descriptors_is_refused_naming_rlimit_nofile() -> None:
    cfg = _cfg(1000)
    per_rank = sessions_per_rank(cfg)
    assert per_rank == 2 + 2 + 1000 + 2  # init_pool + ready_buffer + run_pool + postrun_pool
    needed = RANK_COST.fds + per_rank * SESSION_COST.fds
    (line,) = pool_problems(cfg, MachineLimits(fds=1024, fds_from="RLIMIT_NOFILE (ulimit -n)"))
    assert line == (f"gateway pools hold {per_rank} sessions per rank (init_pool 2 + ready_buffer 2 + run_pool 1000 "
                    f"+ postrun_pool 2): a rank needs at least {needed} file descriptors ({SESSION_COST.fds} a "
                    "session), more than RLIMIT_NOFILE (ulimit -n) = 1024 here; lower the pools or raise the limit "
                    "(ulimit -Hn)")
    assert "\n" not in line


def test_processes_and_memory_count_every_rank_on_the_machine() -> None:
    cfg = _cfg(100, ranks=4)
    tight = MachineLimits(pids=800, pids_from="/sys/fs/cgroup/x/pids.max", mem_mb=1024, mem_from="memory.max")
    pids, mem = pool_problems(cfg, tight)
    per_rank = sessions_per_rank(cfg)
    assert f"× 4 rank(s): at least {4 * (RANK_COST.pids + per_rank * SESSION_COST.pids)} processes" in pids
    assert pids.endswith("more than /sys/fs/cgroup/x/pids.max = 800 here; lower the pools or gateway.num_ranks")
    assert "MB of memory" in mem and "more than memory.max = 1024 MB here" in mem
    assert pool_problems(_cfg(100, ranks=1), tight) == []  # one rank of those fits
    assert pool_problems(_cfg(300, ranks=1), tight)[0].startswith("gateway pools hold 306 sessions per rank")


def test_machine_limits_read_this_machine() -> None:
    import resource

    limits = machine_limits()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert limits.fds == (None if hard == resource.RLIM_INFINITY else hard)
    assert limits.pids is not None and limits.pids > 0 and limits.pids_from
    assert limits.mem_mb is not None and limits.mem_mb > 100 and limits.mem_from


def test_preflight_refuses_only_on_the_local_backend() -> None:
    big = ["gateway.run_pool=100000000"]
    local = preflight_problems(load_recipe(SHELL, big))
    assert any("file descriptors" in p and "RLIMIT_NOFILE" in p for p in local), local
    slurm = load_recipe(SHELL, [*big, "launch.backend=slurm"])
    from polar_hpc.launch.preflight import check_capacity

    assert check_capacity(slurm) == []


def test_launch_refuses_before_submit_exit_2_no_traceback(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    out = subprocess.run([sys.executable, "-m", "polar_hpc", "launch", str(SHELL), "--run-dir", str(run_dir),
                          "--set", "gateway.run_pool=100000000"], capture_output=True, text=True, timeout=120,
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 2, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    (line,) = [x for x in out.stderr.splitlines() if "file descriptors" in x]
    assert "RLIMIT_NOFILE hard limit (ulimit -Hn" in line and "run_pool 100000000" in line
    assert not run_dir.exists(), "nothing made, nothing submitted"


def test_a_forwarder_per_sandbox_costs_a_process_and_memory_more() -> None:
    from polar_hpc.launch.capacity import FORWARDER_COST, session_cost

    handoff = load_recipe(SHELL, ["runtime.backend=bwrap", "runtime.network=none"])
    forwarder = load_recipe(SHELL, ["runtime.backend=bwrap", "runtime.network=none", "runtime.bridge=forwarder"])
    assert session_cost(handoff) == SESSION_COST  # the hand-off leaves no process of ours in the sandbox
    cost = session_cost(forwarder)
    assert cost.pids == SESSION_COST.pids + FORWARDER_COST.pids
    assert cost.mem_mb == SESSION_COST.mem_mb + FORWARDER_COST.mem_mb


def test_a_rank_raises_its_open_files_soft_limit_to_the_hard_one() -> None:
    import resource

    from polar_hpc.util.limits import raise_open_files

    code = ("import resource; from polar_hpc.util.limits import raise_open_files; "
            "print(raise_open_files(), resource.getrlimit(resource.RLIMIT_NOFILE))")
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)},
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard)))
    assert out.stdout.strip() == f"({min(256, hard)}, {hard}) ({hard}, {hard})", out.stderr
    assert raise_open_files()[1] == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
