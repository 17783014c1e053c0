"""Read Harbor task folders with Harbor's own ``Task`` (the ``harbor`` package) and with ``polar-hpc tasks import
harbor``, and compare what both take from them: instruction, agent and verifier timeouts, cpus, memory, workdir,
whether a solution is there.

``harbor`` needs Python >= 3.12, so it runs in a venv of its own (``--harbor-python``; made by hand, not by setup):

    python3.12 -m venv /tmp/harbor-venv && /tmp/harbor-venv/bin/pip install 'harbor==0.25.*'
    python tools/harbor_crosscheck.py --harbor-python /tmp/harbor-venv/bin/python tests/fixtures/harbor/*

Prints one line per task and field that differ; exit 1 if any does, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from polar_hpc.tasks.harbor import HARBOR_KEY, SOLUTION_COMMANDS, HarborError, read_task  # noqa: E402

HARBOR_SIDE = """
import json, sys
from harbor.models.task.task import Task
out = {}
for d in sys.argv[1:]:
    t = Task(d)
    c = t.config
    out[d] = {"instruction": t.instruction.strip(), "agent_timeout_s": c.agent.timeout_sec,
              "verifier_timeout_s": c.verifier.timeout_sec, "cpus": c.environment.cpus,
              "memory_mb": c.environment.memory_mb, "workdir": c.environment.workdir,
              "solution": t.paths.solve_path.is_file()}
print(json.dumps(out))
"""


def ours(folder: Path) -> dict[str, object]:
    row = read_task(folder)
    meta = row[HARBOR_KEY]
    memory_gb = meta["memory_gb"]
    return {"instruction": row["instruction"], "agent_timeout_s": meta["agent_timeout_s"],
            "verifier_timeout_s": meta["verifier_timeout_s"], "cpus": meta["cpus"],
            "memory_mb": round(memory_gb * 1024) if memory_gb else None, "workdir": meta["workdir"],
            "solution": SOLUTION_COMMANDS in row}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--harbor-python", required=True, help="a Python >= 3.12 with the harbor package")
    p.add_argument("tasks", nargs="+", type=Path, help="Harbor task folders")
    args = p.parse_args()
    folders = [t.resolve() for t in args.tasks]
    try:
        mine_all = {f: ours(f) for f in folders}
    except HarborError as err:
        sys.stderr.write(f"harbor_crosscheck: {err}\n")
        return 2
    run = subprocess.run([args.harbor_python, "-c", HARBOR_SIDE, *map(str, folders)], capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(f"harbor_crosscheck: harbor could not read the tasks: {run.stderr.strip()[-500:]}\n")
        return 2
    theirs = json.loads(run.stdout)
    differ = 0
    for folder in folders:
        mine, harbor = mine_all[folder], theirs[str(folder)]
        if harbor["workdir"] is None:  # task.toml sets none: ours is the Dockerfile's WORKDIR, Harbor leaves it
            mine["workdir"] = None
        bad = [k for k in mine if mine[k] != harbor[k]]
        for key in bad:
            sys.stdout.write(f"{folder.name}: {key}: harbor {harbor[key]!r}, polar-hpc {mine[key]!r}\n")
        differ += len(bad)
        fields = ", ".join(f"{k}={harbor[k]!r}" for k in harbor if k != "instruction")
        sys.stdout.write(f"{folder.name}: {'differs' if bad else 'same'} ({fields})\n")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
