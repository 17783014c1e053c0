"""``polar-hpc serve-reference`` and ``polar-hpc serve-inference`` (light: heavy imports happen in ``run``)."""

from __future__ import annotations

import argparse
from typing import Any, get_args

from polar_hpc.reference.options import DEFAULTS, FLAGS, LogprobMode, ReferenceOptions


def _at_least_one(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text}")
    return value


_REFERENCE_FLAGS: dict[str, dict[str, Any]] = {
    "port": {"type": int, "help": "0 picks a free port (see --ready-file)"},
    "seed": {"type": int, "help": "seeds requests that carry no sampling_seed"},
    "context_length": {"type": int, "help": "default: max_position_embeddings"},
    "threads": {"type": int, "help": "torch threads (default: half the cores, 1..4)"},
    "ready_file": {"help": "write the endpoint (url, pid) here as JSON once listening"},
    "logprob_mode": {"choices": get_args(LogprobMode),
                     "help": "processed: softmax(logits/T) as SGLang reports; original: raw log_softmax"},
    "decode_batch": {"type": _at_least_one, "metavar": "N",
                     "help": "requests that decode in one forward at most (1: one at a time)"},
    "first_token_delay_s": {"type": float, "metavar": "S", "help": "a deliberately slow engine: no request's first "
                            "token sooner than S seconds after it arrived"},
    "token_delay_s": {"type": float, "metavar": "S",
                      "help": "a deliberately slow engine: each round of tokens takes at least S seconds"},
}
"""How ``polar-hpc serve-reference`` reads each of the reference server's options (their defaults are the
options'; ``reference.options.FLAGS`` names the flags)."""


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve-reference",
        help="serve SGLang's /generate subset on the CPU with a small transformers model",
        description="Reference inference server: SGLang's native /generate protocol on torch CPU.",
    )
    p.add_argument("--model", required=True, help="model dir (config.json, safetensors, tokenizer.json) or asset:NAME")
    for name, flag in FLAGS.items():  # the options' own defaults (``ReferenceOptions``)
        p.add_argument(flag, dest=name, default=getattr(DEFAULTS, name), **_REFERENCE_FLAGS.get(name, {}))
    p.add_argument("--api-key", default=None,
                   help="require 'Authorization: Bearer KEY' on every route but /health* (as SGLang's --api-key); "
                   "default: $POLAR_INFERENCE_API_KEY, which keeps the key out of ps")
    p.set_defaults(func=run_reference)

    s = subparsers.add_parser(
        "serve-inference",
        help="job body: start one inference server from the run config, publish its endpoint, supervise it",
    )
    s.add_argument("--run-dir", required=True)
    s.add_argument("--config", default=None, help="resolved RunConfig TOML (default: RUN_DIR/config.toml)")
    s.add_argument("--index", type=int, default=0, help="server number N (endpoints/inference-N.json)")
    s.set_defaults(func=run_server_job)


def run_reference(args: argparse.Namespace) -> int:
    from polar_hpc.assets import resolve_model
    from polar_hpc.reference.serve import serve

    options = ReferenceOptions(**{name: getattr(args, name) for name in FLAGS})
    return serve(resolve_model(args.model), options, api_key=args.api_key)


def run_server_job(args: argparse.Namespace) -> int:
    from polar_hpc.inference.server import run_from_run_dir

    return run_from_run_dir(args.run_dir, args.index, args.config)
