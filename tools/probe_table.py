"""Probe every harness under the oracle and print the per-harness table of docs/harnesses.md.

    python tools/probe_table.py [--harness pi --harness codex ...] [--out DIR] [--json rows.json]

One reference server (tiny Qwen3) is shared by all probes; each probe is ``polar-hpc probe HARNESS --json``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec

from polar_hpc.probe.report import ProbeRow

HARNESSES = ["shell", "pi", "codex", "claude_code", "gemini_cli", "qwen_code", "opencode", "mini_swe_agent", "cline",
             "openhands"]


def table(rows: list[ProbeRow]) -> str:
    out = ["| harness | version | exit | reward | main calls (side) | tool calls (parallel turns) | chains | breaks "
           "| tokens held / rendered | drift prevented |",
           "|---|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        breaks = "; ".join(f"{b.reason}: {b.detail}" for b in r.breaks) or "none"
        out.append(f"| {r.harness} | {r.version or '-'} | {r.returncode} | {r.reward:g} | {r.calls} ({r.side_calls}) "
                   f"| {r.tool_calls} ({r.parallel_turns}) | {r.chains} | {breaks} | {r.tokens_held:,} / "
                   f"{r.tokens_rendered:,} | {r.drift_prevented} |")
    return "\n".join(out)


def main() -> int:
    from polar_hpc.assets import asset_path
    from polar_hpc.reference.options import ReferenceOptions
    from polar_hpc.reference.process import start_reference_server

    ap = argparse.ArgumentParser()
    ap.add_argument("--harness", action="append", default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--json", default=None, help="also write the rows here")
    args = ap.parse_args()
    out = Path(args.out or tempfile.mkdtemp(prefix="probe-table-"))
    rows: list[ProbeRow] = []
    options = ReferenceOptions(context_length=32768, threads=1)
    with start_reference_server(asset_path("tiny-qwen3"), options, log_path=out / "reference.log") as ref:
        for h in args.harness or HARNESSES:
            done = subprocess.run([sys.executable, "-m", "polar_hpc", "probe", h, "--engine", ref.url, "--json",
                                   "--out", str(out / h)], capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                print(f"{h}: probe exited {done.returncode}: {done.stderr[-1000:]}", file=sys.stderr)
                continue
            rows.append(msgspec.json.decode(done.stdout.strip().splitlines()[-1], type=ProbeRow))
            print(f"{h}: done", file=sys.stderr)
    if args.json:
        Path(args.json).write_bytes(msgspec.json.encode(rows))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
