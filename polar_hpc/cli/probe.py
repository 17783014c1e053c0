"""``polar-hpc probe HARNESS``: run one oracle session of a harness on a bundled task (or a recipe's tasks, or
``--task``) locally and
print what it did: main-agent calls, chains and every chain break with its reason, tokens held vs rendered, the
tokens a canonical re-render would have changed, and where the records and the shard are. Run it before spending
GPU hours on a new harness or version."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, get_args

from polar_hpc.config.run import InferenceConfig, Policy, RuntimeSpec
from polar_hpc.runtime import BACKENDS


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("probe", help="one oracle session of a harness, locally: calls, chains, breaks",
                              description=__doc__)
    p.add_argument("harness", help="a harness adapter's name (docs/harnesses.md; an unknown name lists them)")
    p.add_argument("--recipe", default=None, metavar="RECIPE",
                   help="take the task source (file and template), runtime and evaluator from this recipe, so "
                        "tasks of any layout probe as they run (default: the demo layout)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a value of --recipe, e.g. --set tasks.path=\"my.jsonl\" (repeatable)")
    p.add_argument("--task", default=None, metavar="FILE",
                   help="JSONL task file with solution_patch / solution_commands (default: the recipe's "
                        "tasks.path, else recipes/tasks/demo.jsonl)")
    p.add_argument("--task-id", default=None, help="which task of the file (default: the first)")
    p.add_argument("--command", default=None, help="the shell harness's command, {instruction} substituted")
    p.add_argument("--engine", default=None, metavar="URL", help="a running server (default: start a reference server)")
    p.add_argument("--model", default=InferenceConfig().model,
                   help="model dir or asset:NAME (template and reference server; "
                        "default: %(default)s, as inference.model)")
    p.add_argument("--runtime", choices=BACKENDS, default=None,
                   help=f"default: the recipe's runtime.backend, else {RuntimeSpec().backend}")
    p.add_argument("--policy", choices=[p for p in get_args(Policy) if p != "sample"], default="oracle",
                   help="oracle_noop: the same turns without applying the solution (graded 0); oracle_subagent: "
                        "hand the task to the harness's sub-agent tool")
    p.add_argument("--harness-arg", action="append", default=[], metavar="ARG",
                   help="extra argument for the harness CLI (agent.settings.extra_args), e.g. "
                        "-c model_auto_compact_token_limit=8000 for Codex; repeatable")
    p.add_argument("--harness-setting", action="append", default=[], metavar="KEY=VALUE",
                   help="agent.settings of the harness, e.g. mode=text for mini_swe_agent's text actions; repeatable")
    p.add_argument("--timeout", type=float, default=300.0, help="the harness's budget in seconds")
    p.add_argument("--max-turns", type=int, help="agent.max_turns: the harness's model calls (its own flag, or "
                                                  "enforced by the proxy for a harness without one)")
    p.add_argument("--out", default=None, metavar="DIR", help="where the run goes (default: ./probe-HARNESS-TIME)")
    p.add_argument("--json", action="store_true", help="print the row as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys
    import time

    import msgspec

    from polar_hpc.probe.report import format_row
    from polar_hpc.probe.run import ProbeError, ProbeSpec, run_probe

    settings = [tuple(kv.split("=", 1)) for kv in args.harness_setting]
    if any(len(kv) != 2 or not kv[0] for kv in settings):
        bad = next(kv for kv in args.harness_setting if "=" not in kv or kv.startswith("="))
        sys.stderr.write(f"polar-hpc probe: --harness-setting: expected KEY=VALUE, got {bad!r}\n")
        return 2
    if args.max_turns is not None and args.max_turns < 1:
        sys.stderr.write(f"polar-hpc probe: --max-turns: expected a whole number >= 1, got {args.max_turns}\n")
        return 2
    out = Path(args.out or f"probe-{args.harness}-{time.strftime('%Y%m%d-%H%M%S')}")
    spec = ProbeSpec(harness=args.harness, out=out.resolve(),
                     recipe=Path(args.recipe).resolve() if args.recipe else None, overrides=tuple(args.overrides),
                     tasks=Path(args.task).resolve() if args.task else None,
                     task_id=args.task_id, command=args.command, engine=args.engine, model=args.model,
                     runtime=args.runtime, policy=args.policy, agent_timeout_s=args.timeout, max_turns=args.max_turns,
                     harness_args=tuple(args.harness_arg),
                     harness_settings=tuple((k, v) for k, v in settings))
    try:
        row = run_probe(spec)
    except ProbeError as err:
        sys.stderr.write(f"polar-hpc probe: {err}\n")
        return err.exit_code
    sys.stdout.write((msgspec.json.encode(row).decode() if args.json else format_row(row)) + "\n")
    return 0
