"""``polar-hpc shards logprobs``: trainer-vs-rollout logprob agreement of recorded traces
(:mod:`polar_hpc.train.agreement`). Light module: numpy, h5py and torch are imported inside ``run``.

Exit codes: 0 every chain within the tolerance; 1 a chain over it, or nothing to compare (one line naming it);
2 bad input (a run without committed shards, a model dir the loader cannot load, traces the model cannot score).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from polar_hpc.log import get_logger
from polar_hpc.train.agreement import DEFAULT_TOLERANCE, DEFAULT_WORST

PROG = "polar-hpc shards logprobs"


def add_parser(sub: Any, add_filters: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``logprobs`` to the ``shards`` subcommands (``add_filters``: the selection options they share)."""
    p = sub.add_parser("logprobs", help="recompute every trainable token's logprob with transformers and compare "
                                        "with the recorded ones (per harness, policy and chain)")
    p.add_argument("runs", nargs="+", metavar="RUN", help="run dirs (or shard dirs/files), one per run")
    p.add_argument("--model", required=True, metavar="DIR",
                   help="the weights the run sampled from: a transformers model dir or asset:NAME")
    add_filters(p)
    p.add_argument("--policy", action="append", choices=["sample", "oracle"], dest="policies",
                   help="keep traces of this token policy (repeatable; default: both)")
    p.add_argument("--temperature", type=float,
                   help="score sampled tokens at this temperature (their recorded logprobs are under "
                        "softmax(logits / T); greedy: 0) instead of the one recorded for each trace (traces recorded "
                        "without one: 1); oracle tokens are always scored at 1")
    p.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE,
                   help="largest |rollout - trainer| in nats a token may show (default: %(default)s, float32 noise)")
    p.add_argument("--worst", type=int, default=DEFAULT_WORST,
                   help="chains listed by their largest difference (default: %(default)s)")
    p.add_argument("--max-chains", type=int, help="score only the first N selected chains")
    p.add_argument("--threads", type=int, help="torch threads (default: one per two CPUs)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=run)


def _fail(message: str, code: int) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return code


def _select(args: argparse.Namespace) -> Any:
    from polar_hpc.store.select import TraceSelect
    from polar_hpc.wire.traces import TraceStatus

    return TraceSelect(
        status=tuple(TraceStatus[s.upper()] for s in args.status) if args.status else None,
        min_reward=args.min_reward,
        harness=tuple(args.harness) if args.harness else None,
        task_ids=frozenset(args.task_ids) if args.task_ids else None,
        policies=tuple(args.policies) if args.policies else None,
    )


def run(args: argparse.Namespace) -> int:
    import msgspec

    from polar_hpc.assets import AssetError, resolve_model
    from polar_hpc.store.reader import EmptySelection, MissingShards
    from polar_hpc.train.agreement import format_agreement
    from polar_hpc.train.agreement_shards import AgreementInputError, measure
    from polar_hpc.train.scoring import ModelLoadError

    for name in ("tolerance", "temperature"):
        if getattr(args, name) is not None and getattr(args, name) < 0:
            return _fail(f"--{name}: expected a number >= 0, got {getattr(args, name)}", 2)
    try:
        model = resolve_model(args.model)
    except (AssetError, FileNotFoundError) as err:
        return _fail(f"--model: {err}", 2)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the weight-loading bar: one line of a report on stderr is an error here
    try:
        rep = measure(args.runs, model, select=_select(args), temperature=args.temperature,
                      tolerance=args.tolerance, worst=args.worst, threads=args.threads, max_chains=args.max_chains)
    except (MissingShards, ModelLoadError, AgreementInputError, EmptySelection) as err:
        return _fail(str(err), err.exit_code)
    if len(args.runs) == 1 and _is_run_dir(Path(args.runs[0])):
        from polar_hpc.util.fs import write_atomic
        from polar_hpc.wire.rundir import RunDir

        path = RunDir(args.runs[0]).logprobs_path
        try:
            path.parent.mkdir(exist_ok=True)
            write_atomic(path, msgspec.json.format(msgspec.json.encode(rep)))
        except OSError as err:  # a run dir we may read but not write: the report still goes to stdout
            get_logger("train").warning("could not keep the report for `polar-hpc report` in %s: %s", path, err)
    sys.stdout.write((msgspec.json.encode(rep).decode() if args.json else format_agreement(rep)) + "\n")
    if rep.within_tolerance:
        return 0
    w = rep.worst[0]
    return _fail(f"{rep.chains_over} of {rep.chains} chains exceed |Δ| {rep.tolerance:g} nat: worst {w.key} trace "
                 f"{w.trace_index}, first at response position {w.first_over} (turn {w.turn}), "
                 f"max |Δ| {w.stats.max_abs:.3g}", 1)


def _is_run_dir(path: Path) -> bool:
    from polar_hpc.wire.rundir import RunDir, shards_of

    return path.is_dir() and shards_of(path) != path and RunDir(path).shards.is_dir()
