"""``polar-hpc serve-reference`` and ``polar-hpc serve-inference`` (light: heavy imports happen in ``run``)."""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "serve-reference",
        help="serve SGLang's /generate subset on the CPU with a small transformers model",
        description="Reference inference server: SGLang's native /generate protocol on torch CPU.",
    )
    p.add_argument("--model", required=True, help="model dir (config.json, safetensors, tokenizer.json) or asset:NAME")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=30000, help="0 picks a free port (see --ready-file)")
    p.add_argument("--seed", type=int, default=0, help="seeds requests that carry no sampling_seed")
    p.add_argument("--context-length", type=int, default=None, help="default: max_position_embeddings")
    p.add_argument("--served-model-name", default=None)
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: half the cores, 1..4)")
    p.add_argument("--ready-file", default=None, help="write the endpoint (url, pid) here as JSON once listening")
    p.add_argument("--logprob-mode", choices=["processed", "original"], default="processed",
                   help="processed: softmax(logits/T) as SGLang reports; original: raw log_softmax")
    p.add_argument("--api-key", default=None,
                   help="require 'Authorization: Bearer KEY' on every route but /health* (as SGLang's --api-key); "
                   "default: $POLAR_INFERENCE_API_KEY, which keeps the key out of ps")
    p.add_argument("--first-token-delay", type=float, default=0.0, metavar="S",
                   help="a deliberately slow engine: no request's first token sooner than S seconds after it arrived")
    p.add_argument("--token-delay", type=float, default=0.0, metavar="S",
                   help="a deliberately slow engine: each round of tokens takes at least S seconds")
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

    return serve(
        resolve_model(args.model),
        host=args.host,
        port=args.port,
        seed=args.seed,
        context_length=args.context_length,
        served_model_name=args.served_model_name,
        threads=args.threads,
        ready_file=args.ready_file,
        logprob_mode=args.logprob_mode,
        api_key=args.api_key,
        first_token_delay_s=args.first_token_delay,
        token_delay_s=args.token_delay,
    )


def run_server_job(args: argparse.Namespace) -> int:
    from polar_hpc.inference.server import run_from_run_dir

    return run_from_run_dir(args.run_dir, args.index, args.config)
