"""``polar-hpc doctor`` on the target partitions: what Slurm says of each partition a recipe's components use
(exists, up, nodes that can run jobs, time limit against the component's ``time_min``, GPUs), and, when asked
(``--on-partition``), doctor's node checks run on one of its compute nodes through a short ``srun``.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import msgspec

from polar_hpc.config import RunConfig, SlurmResources
from polar_hpc.runtime.backend import Finding, run_quiet
from polar_hpc.wire.rundir import Component

USABLE_NODE_STATES = frozenset({"idle", "mixed", "allocated", "completing", "planned"})
"""``sinfo %T`` states (flags such as ``*`` or ``~`` stripped) of nodes that run, or will run, jobs."""
PROBE_TIME_MIN = 5
PROBE_TIMEOUT_S = 300.0
NODE_JSON = "--node-json"
"""doctor's hidden flag: print only this node's findings, as JSON (what the probe job runs)."""
LOGIN_NODE_ONLY = frozenset({"sbatch", "sacct"})
"""Node checks that are about where jobs are submitted from, not where they run."""


class Partition(msgspec.Struct, kw_only=True):
    name: str
    default: bool
    state: str
    """UP, DOWN, DRAIN or INACTIVE (``scontrol show partition``)."""
    max_time_min: int | None
    """None: UNLIMITED."""


def parse_slurm_minutes(text: str) -> int | None:
    """Slurm's time format (``UNLIMITED``, ``MM``, ``MM:SS``, ``HH:MM:SS``, ``D-HH[:MM[:SS]]``) in whole minutes."""
    if text in ("UNLIMITED", "INFINITE", "NONE"):
        return None
    days, _, rest = text.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        h, m, s = (parts + [0, 0])[:3]
    elif len(parts) == 3:
        h, m, s = parts
    else:
        h, (m, s) = 0, (parts + [0])[:2]
    return (int(days or 0) * 24 + h) * 60 + m + (1 if s else 0)


def parse_partitions(text: str) -> dict[str, Partition]:
    """``scontrol show partition -o`` (one line of KEY=VALUE per partition)."""
    out = {}
    for line in text.splitlines():
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        if "PartitionName" not in fields:
            continue
        name = fields["PartitionName"]
        out[name] = Partition(name=name, default=fields.get("Default") == "YES", state=fields.get("State", "?"),
                              max_time_min=parse_slurm_minutes(fields.get("MaxTime", "UNLIMITED")))
    return out


def node_states(partition: str) -> dict[str, int]:
    """Node count per state (``idle``, ``down`` ...; flags stripped) of one partition, from ``sinfo``."""
    code, text = run_quiet(["sinfo", "-h", "-p", partition, "-o", "%T %D"], sep="\n")
    counts: dict[str, int] = {}
    if code != 0:
        return counts
    for line in text.splitlines():
        state, _, n = line.strip().partition(" ")
        key = state.rstrip("*~#!%$@^-+")
        counts[key] = counts.get(key, 0) + int(n or 0)
    return counts


def partition_gres(partition: str) -> str:
    code, text = run_quiet(["sinfo", "-h", "-p", partition, "-o", "%G"], sep=",")
    return text if code == 0 else ""


def used_partitions(cfg: RunConfig) -> dict[str | None, list[tuple[Component, SlurmResources]]]:
    """Components (with their site-resolved resources) by the partition they ask for (None: the default one)."""
    from polar_hpc.launch.submit import component_resources, planned_jobs

    resources = component_resources(cfg)
    wanted = dict.fromkeys(c for c, _ in planned_jobs(cfg))
    by: dict[str | None, list[tuple[Component, SlurmResources]]] = {}
    for component in wanted:
        by.setdefault(resources[component].partition, []).append((component, resources[component]))
    return by


def check_partitions(cfg: RunConfig | None) -> list[Finding]:
    if cfg is None or cfg.launch.backend != "slurm":
        return []
    code, text = run_quiet(["scontrol", "show", "partition", "-o"], sep="\n")
    if code != 0:
        return [Finding(name="partitions", ok=False, required=True, detail=f"scontrol show partition: {text[:200]}",
                        fix="run on a Slurm login node (SLURM_CONF set if the cluster needs it)")]
    parts = parse_partitions(text)
    default = next((p.name for p in parts.values() if p.default), None)
    out = []
    for name, users in used_partitions(cfg).items():
        who = ", ".join(c for c, _ in users)
        label = f"partition {name or default or '(default)'}"
        part = parts.get(name or default or "")
        if part is None:
            what = f"{name!r} does not exist" if name else "there is no default partition"
            out.append(Finding(name=label, ok=False, required=True,
                               detail=f"{what} (partitions: {', '.join(parts) or 'none'}); used by {who}",
                               fix="set resources.partition (or launch.site) to one of them"))
            continue
        problems, fixes = [], []
        if part.state != "UP":
            problems.append(f"state {part.state}")
            fixes.append("ask your admins, or use another partition")
        states = node_states(part.name)
        usable = sum(n for s, n in states.items() if s in USABLE_NODE_STATES)
        nodes = ", ".join(f"{n} {s}" for s, n in sorted(states.items())) or "no nodes"
        if usable == 0:
            problems.append(f"no node can run jobs ({nodes})")
            fixes.append("sinfo -R shows why the nodes are down")
        limit = "no time limit" if part.max_time_min is None else f"MaxTime {part.max_time_min} min"
        for component, res in users:
            if part.max_time_min is not None and res.time_min > part.max_time_min:
                problems.append(f"{component} asks time_min {res.time_min} > MaxTime {part.max_time_min} min")
                fixes.append(f"set {component}.resources.time_min <= {part.max_time_min} (requeue continues a run)")
            if res.gpus_per_node and "gpu" not in partition_gres(part.name):
                problems.append(f"{component} asks {res.gpus_per_node} GPU(s), the nodes have no gpu GRES")
                fixes.append("use a GPU partition for it")
        out.append(Finding(name=label, ok=not problems, required=True,
                           detail=f"{'; '.join(problems) + ' | ' if problems else ''}{part.state}, {nodes}, {limit}"
                                  f"; used by {who}", fix="; ".join(fixes)))
    return out


def probe_argv(res: SlurmResources, job_name: str, doctor_argv: list[str]) -> list[str]:
    argv = ["srun", f"--job-name={job_name}", "--nodes=1", "--ntasks=1", "--cpus-per-task=1",
            f"--time={PROBE_TIME_MIN}", "--quiet"]
    for key in ("partition", "account", "qos", "constraint"):
        if getattr(res, key) is not None:
            argv.append(f"--{key}={getattr(res, key)}")
    if res.gpus_per_node:
        argv.append(f"--gpus-per-node={res.gpus_per_node}")
    return [*argv, *doctor_argv]


def probe_partitions(cfg: RunConfig, doctor_args: list[str], timeout_s: float = PROBE_TIMEOUT_S) -> list[Finding]:
    """Doctor's node checks on one compute node of each partition the recipe uses (``srun``, ``timeout_s`` from
    submission to the answer; a job still pending then is cancelled and reported with its reason)."""
    import polar_hpc

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(polar_hpc.__file__).resolve().parents[1]), *filter(None, [os.environ.get("PYTHONPATH")])])}
    _, text = run_quiet(["scontrol", "show", "partition", "-o"], sep="\n")
    default = next((p.name for p in parse_partitions(text).values() if p.default), "the default partition")
    out = []
    for name, users in used_partitions(cfg).items():
        res = users[0][1]
        label = f"on partition {name or default}"
        job_name = f"polar-doctor-{uuid.uuid4().hex[:8]}"
        argv = probe_argv(res, job_name, [sys.executable, "-m", "polar_hpc", "doctor", *doctor_args, NODE_JSON])
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            stdout, stderr = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _, state = run_quiet(["squeue", "-h", "--name", job_name, "-o", "%i %T (%r)"])
            run_quiet(["scancel", "--name", job_name])
            proc.kill()
            proc.communicate()
            out.append(Finding(name=label, ok=False, required=True,
                               detail=f"the probe job did not answer within {timeout_s:.0f} s: "
                                      f"{state or 'no longer in squeue'}; cancelled",
                               fix="the reason above says why it waits; a longer --probe-timeout S waits for it"))
            continue
        found = _decode_probe(stdout)
        if proc.returncode != 0 and found is None:
            out.append(Finding(name=label, ok=False, required=True,
                               detail=f"{shlex.join(argv[:8])} ... exited {proc.returncode}: "
                                      f"{' / '.join(stderr.strip().splitlines()[-3:])[:300]}",
                               fix="check that the partition accepts jobs and sees this interpreter"))
            continue
        node, findings = found or ("?", [])
        out.append(Finding(name=label, ok=True, detail=f"the probe job ran on node {node} "
                                                         f"({time.monotonic() - t0:.0f} s from submission)"))
        out += [msgspec.structs.replace(f, name=f"{node}: {f.name}") for f in findings
                if f.name not in LOGIN_NODE_ONLY]
    return out


class NodeReport(msgspec.Struct, kw_only=True):
    node: str
    findings: list[Finding]


def _decode_probe(stdout: str) -> tuple[str, list[Finding]] | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith("{"):
            try:
                report = msgspec.json.decode(line, type=NodeReport)
            except msgspec.DecodeError:
                return None
            return report.node, report.findings
    return None


def node_report(findings: list[Finding]) -> str:
    return msgspec.json.encode(NodeReport(node=os.uname().nodename, findings=findings)).decode()
