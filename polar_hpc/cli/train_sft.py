"""``polar-hpc train sft SOURCE... --out DIR``: fine-tune on the token-level SFT export (``polar_hpc.train.sft.run``).

Settings come from ``SftConfig`` (``[sft]`` of ``--recipe``, ``--set sft.KEY=VALUE``, or a flag per field:
``--epochs 2``, ``--layers 8``...). Light module: torch, TRL and transformers load inside ``run``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.config.sft import SftConfig

SECTION = "sft"


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def register(sub: Any) -> None:
    s = sub.add_parser("sft", help="supervised fine-tuning (TRL SFTTrainer) on the token-level SFT export: loss only "
                                   "on the tokens the policy produced, no re-templating")
    s.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="an SFT export folder (its train split), or run / shard dirs (their accepted sessions)")
    s.add_argument("--out", required=True, type=Path, help="the model dir to write (new or empty)")
    s.add_argument("--recipe", help="a recipe TOML whose [sft] section (and inference.model) set the defaults")
    s.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe value, e.g. --set sft.epochs=2 (repeatable)")
    defaults = SftConfig()
    for f in msgspec.structs.fields(SftConfig):
        s.add_argument(flag(f.name), dest=f"sft_{f.name}", metavar="VALUE",
                       help=f"sft.{f.name} (default: {getattr(defaults, f.name)!r})")
    s.set_defaults(func=run)


def settings(args: argparse.Namespace) -> Any:
    """The RunConfig of ``--recipe`` (or the defaults) with ``--set`` and the per-field flags applied."""
    from polar_hpc.config import load_recipe
    from polar_hpc.config.base import apply_override, decode
    from polar_hpc.config.run import RunConfig

    overrides = list(args.overrides) + [
        f"{SECTION}.{f.name}={getattr(args, 'sft_' + f.name)}" for f in msgspec.structs.fields(SftConfig)
        if getattr(args, "sft_" + f.name) is not None]
    if args.recipe:
        return load_recipe(args.recipe, overrides)
    data: dict[str, Any] = {}
    applied = {tuple(apply_override(data, item)): item for item in overrides}
    return decode(data, RunConfig, source="train sft", overrides=applied)


def run(args: argparse.Namespace) -> int:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads (see polar_hpc.train.grpo.run)
    import warnings

    from transformers.utils import logging as hf_logging

    from polar_hpc.assets import resolve_model
    from polar_hpc.train.sft.data import SftInputError
    from polar_hpc.train.sft.run import WORK_DIR, check_out, decoder_layers

    hf_logging.disable_progress_bar()
    from datasets.utils import logging as ds_logging

    ds_logging.disable_progress_bar()  # TRL's dataset preparation: the step lines are the progress
    hf_logging.set_verbosity_error()
    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")
    cfg = settings(args)
    sft = cfg.sft
    check_out(args.out)
    spec = sft.model or cfg.inference.model
    try:
        model_dir = resolve_model(spec)
    except Exception as err:
        raise SftInputError(f"sft.model: cannot resolve {spec!r}: {err}") from None
    from polar_hpc.train.grpo.run import load_policy

    model, tok = load_policy(model_dir, key="sft.model")
    if sft.layers:
        decoder_layers(model, sft.layers)
    created = not args.out.exists()
    try:
        return _train(args, sft, model_dir, model, tok)
    except BaseException:
        shutil.rmtree(args.out / WORK_DIR, ignore_errors=True)
        if created and args.out.is_dir() and not any(args.out.iterdir()):
            args.out.rmdir()
        raise


def _train(args: argparse.Namespace, sft: Any, model_dir: Path, model: Any, tok: Any) -> int:
    from polar_hpc.train.sft.data import check_context, load_corpus
    from polar_hpc.train.sft.run import WORK_DIR, step_line, train_sft

    corpus = load_corpus(args.sources, args.out / WORK_DIR, min_reward=sft.min_reward)
    check_context(corpus, sft.max_length, model)
    out = sys.stdout
    out.write(f"sft: {len(corpus)} rows from {corpus.source}: {corpus.tokens} tokens, {corpus.trainable} "
              f"trainable; model {model_dir}; {sft.epochs:g} epochs, {sft.batch_rows} rows/step, lr "
              f"{sft.learning_rate:g}, layers {sft.layers or 'all'}, {sft.threads} threads\n")
    out.flush()

    def report(step: Any) -> None:
        out.write(step_line(step) + "\n")
        out.flush()

    r = train_sft(corpus, args.out, sft, model_dir, report=report, model=model, tokenizer=tok)
    first, last = (r.steps[0].loss, r.steps[-1].loss) if r.steps else (float("nan"), float("nan"))
    out.write(f"sft: {len(r.steps)} steps in {r.train_s:.0f}s ({r.tokens_per_s:.0f} tok/s): loss {first:.4f} -> "
              f"{last:.4f}; model dir {r.out} (inference.model / trainer.model = this dir)\n")
    return 0
