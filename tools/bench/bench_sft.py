"""SFT throughput on the CPU: forward+backward tokens/s of ``train sft`` for several trainable-parameter choices and
thread counts, side by side on the same rows (each variant in its own process, variants interleaved in rounds).

    python tools/bench/bench_sft.py SOURCE --model asset:smollm2 --steps 4 --rounds 2 \
        --variant layers=0,threads=1 --variant layers=8,threads=1 --variant layers=0,threads=2

SOURCE: an SFT export or run dirs (as ``polar-hpc train sft``). A variant is ``sft.KEY=VALUE`` pairs, comma
separated. Each run trains ``--steps`` optimizer steps of one row each on the first ``--rows`` rows (same order for
every variant: no shuffle matters, batch_rows=1); tokens/s is measured from the end of step 1 to the end of the
last step (the first step's warm-up left out). Prints one line a run and a table of medians; ``--json PATH``
writes them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one(args: argparse.Namespace) -> None:
    """Child: one variant, prints a JSON line."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import msgspec

    from polar_hpc.assets import resolve_model
    from polar_hpc.config.base import apply_override, decode
    from polar_hpc.config.sft import SftConfig
    from polar_hpc.train.sft.data import SftCorpus, load_corpus
    from polar_hpc.train.sft.run import SftStep, train_sft

    data: dict[str, object] = {}
    for item in args.one.split(","):
        apply_override(data, item)
    cfg = decode(data, SftConfig, source=args.one)
    cfg = msgspec.structs.replace(cfg, max_steps=args.steps, batch_rows=1, epochs=1000.0)
    with tempfile.TemporaryDirectory(prefix="bench-sft-") as tmp:
        corpus = load_corpus(args.sources, Path(tmp) / "work")
        rows = SftCorpus(corpus.input_ids[: args.rows], corpus.loss_mask[: args.rows], corpus.source)
        steps: list[SftStep] = []
        r = train_sft(rows, Path(tmp) / "out", cfg, resolve_model(args.model), report=steps.append)
    a, b = steps[0], steps[-1]
    print(json.dumps({"variant": args.one, "tokens_per_s": (b.tokens - a.tokens) / (b.elapsed_s - a.elapsed_s),
                      "s_per_step": (b.elapsed_s - a.elapsed_s) / max(1, b.step - a.step),
                      "trainable_params": r.trainable_params, "total_params": r.total_params,
                      "tokens": b.tokens - a.tokens, "loss_first": a.loss, "loss_last": b.loss,
                      "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("sources", nargs="+")
    p.add_argument("--model", default="asset:smollm2")
    p.add_argument("--variant", action="append", default=[])
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--rows", type=int, default=8, help="rows used (one per step, cycling)")
    p.add_argument("--rounds", type=int, default=1)
    p.add_argument("--json", type=Path)
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        one(args)
        return 0
    variants = args.variant or ["layers=0,threads=1"]
    runs: list[dict[str, object]] = []
    load = os.getloadavg()[0]
    for rnd in range(args.rounds):
        for v in variants:
            cmd = [sys.executable, __file__, *args.sources, "--model", args.model, "--steps", str(args.steps),
                   "--rows", str(args.rows), "--one", v]
            t0 = time.monotonic()
            out = subprocess.run(cmd, capture_output=True, text=True)
            if out.returncode != 0:
                sys.stderr.write(out.stderr[-2000:])
                return 1
            res = json.loads(out.stdout.strip().splitlines()[-1])
            res["round"], res["wall_s"], res["load"] = rnd, time.monotonic() - t0, os.getloadavg()[0]
            runs.append(res)
            print(json.dumps(res), flush=True)
    print(f"\nload average {load:.1f} before, {os.getloadavg()[0]:.1f} after")
    print(f"{'variant':32s} {'tok/s':>8s} {'s/step':>8s} {'trainable':>12s} {'rss MB':>8s}")
    for v in variants:
        mine = [r for r in runs if r["variant"] == v]
        tps = statistics.median(float(r["tokens_per_s"]) for r in mine)  # type: ignore[arg-type]
        sps = statistics.median(float(r["s_per_step"]) for r in mine)  # type: ignore[arg-type]
        rss = max(float(r["max_rss_mb"]) for r in mine)  # type: ignore[arg-type]
        print(f"{v:32s} {tps:8.1f} {sps:8.2f} {mine[0]['trainable_params']:12,d} {rss:8.0f}")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
