"""``polar-hpc doctor --on-partition`` on the real single-node Slurm cluster: the partition checks (exists, state,
time limit) against partitions made for the test, and the node checks run on the compute node through srun,
with a probe job that cannot start (a DOWN partition) reported with its reason and cancelled at its timeout."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator

import pytest

from tests.integration.launch.helpers import ROOT, polar

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

RECIPE = str(ROOT / "recipes" / "local-shell.toml")
SLURM = ["--set", "launch.backend=slurm", "--set", "inference.resources.gpus_per_node=0",
         "--set", "gateway.resources.time_min=20"]


@pytest.fixture
def partitions() -> Iterator[None]:
    if shutil.which("sbatch") is None or not os.environ.get("SLURM_CONF"):
        pytest.fail("the slurm tier needs the cluster from `bash .ci/slurm.sh up` and SLURM_CONF "
                    "(tools/test.sh does both)")
    made = {"polar-short": ["MaxTime=10", "State=UP"], "polar-closed": ["State=DOWN"]}
    try:
        for name, spec in made.items():
            subprocess.run(["scontrol", "create", f"PartitionName={name}", "Nodes=ALL", *spec], check=True, timeout=30)
        yield
    finally:
        for name in made:
            subprocess.run(["scontrol", "delete", f"PartitionName={name}"], check=False, timeout=30)


def _line(out: str, name: str) -> str:
    found = re.search(rf"^(ok  |FAIL|miss) {re.escape(name)}\s+(.*)$", out, re.M)
    assert found, f"no {name!r} row in:\n{out}"
    return f"{found.group(1).strip()} {found.group(2)}"


@pytest.mark.timeout(240)
def test_doctor_checks_the_partition_and_runs_node_checks_on_a_compute_node(partitions: None) -> None:
    out = polar("doctor", RECIPE, *SLURM, "--on-partition", "--probe-timeout", "120", timeout=200)
    assert out.returncode == 0, out.stdout + out.stderr
    assert re.match(r"ok UP, \d+ (idle|mixed|allocated).*, no time limit; used by inference, coordinator, gateway$",
                    _line(out.stdout, "partition debug")), out.stdout
    node = subprocess.run(["sinfo", "-h", "-p", "debug", "-o", "%N"], capture_output=True, text=True,
                          timeout=30).stdout.strip()
    assert re.match(rf"ok the probe job ran on node {node} ", _line(out.stdout, "on partition debug")), out.stdout
    # the node checks came from the compute node: the login-only ones (sbatch, sacct) are not repeated there
    assert _line(out.stdout, f"{node}: bwrap") == "ok user namespaces work"
    assert _line(out.stdout, f"{node}: harness pi").startswith("ok ")
    assert re.match(r"ok [\d.]+ GB free for run dirs under ", _line(out.stdout, f"{node}: disk"))
    assert f"{node}: sbatch" not in out.stdout and f"{node}: sacct" not in out.stdout


@pytest.mark.timeout(240)
def test_doctor_names_a_missing_down_or_too_short_partition_and_cancels_a_probe_that_cannot_start(
        partitions: None) -> None:
    sets = ["--set", "gateway.resources.partition=polar-short", "--set", "inference.resources.partition=polar-closed",
            "--set", "coordinator.resources.partition=nope"]
    out = polar("doctor", RECIPE, *SLURM, *sets, "--on-partition", "--probe-timeout", "8", timeout=200)
    assert out.returncode == 1, out.stdout + out.stderr
    assert re.match(r"FAIL 'nope' does not exist \(partitions: [^)]*polar-short[^)]*\); used by coordinator$",
                    _line(out.stdout, "partition nope")), out.stdout
    assert re.match(r"FAIL state DOWN \| DOWN, .*; used by inference$", _line(out.stdout, "partition polar-closed"))
    assert _line(out.stdout, "partition polar-short").startswith(
        "FAIL gateway asks time_min 20 > MaxTime 10 min | UP, "), out.stdout
    assert "fix: set gateway.resources.time_min <= 10" in out.stdout
    probe = _line(out.stdout, "on partition polar-closed")
    found = re.match(r"FAIL the probe job did not answer within 8 s: (\d+) PENDING \(PartitionDown\); cancelled$",
                     probe)
    assert found, out.stdout
    state = subprocess.run(["squeue", "-h", "-j", found.group(1), "-o", "%T"], capture_output=True, text=True,
                           timeout=30).stdout.strip()
    assert state in ("", "CANCELLED"), f"the probe job {found.group(1)} is still {state}"
    assert _line(out.stdout, "on partition polar-short").startswith("ok the probe job ran on node ")
