"""The proxy's own share of the time to the first content byte of a live stream, split in its two halves and
measured inside one process (client, proxy and the FAKE engine stub in one event loop, free of the wake-ups of
separate processes), for the same request repeated (its render is cached) and for a new
prompt each time (every render fresh):

  request → engine call: the request's arrival (``Timings.received``) to the engine call (``Timings.engine_start``):
    reading, normalizing, rendering and tokenizing the prompt, building the record;
  request → request sent: the same to the streamed ``/generate`` body, built and about to be written (the
    engine's ``request_hook``): all of the proxy's work before the engine can start;
  first token → first byte: the first sampled token reaching the proxy's engine client
    (``EngineStream.first_token_at``) to the client's first content byte (shaping, the provider's event, the
    write, and the client's read of it in the same loop).

Each figure is the median over ``--reps`` calls after 3 warm-ups; ``--rounds N`` runs each row N times,
alternating, and gives the median of their medians; ``--new-only``: the new-prompt row alone. To compare trees,
``--trees A,B`` runs this script under each tree's ``PYTHONPATH`` in turn, round after round, in one run:

    python tools/bench/bench_first_byte_split.py --trees /work/wt/base6,. --new-only --rounds 4 --reps 120

``--tools N``: every request carries N tools (the same ones each call, as a coding harness sends them).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
from common import load_average

FIRST = b'"content":"Hello'
"""The first text delta of the stub's reply (its tokens start at 9707, "Hello")."""


def tool(i: int) -> dict[str, Any]:
    """A function tool with a coding harness's kind of schema (eight described parameters)."""
    params = {f"arg{j}": {"type": "string", "description": f"Parameter {j} of tool {i}: " + "what it means. " * 6,
                          "enum": ["a", "b", "c"]} for j in range(8)}
    return {"type": "function", "function": {"name": f"tool_{i}", "description": "Does one thing. " * 20,
                                             "parameters": {"type": "object", "properties": params,
                                                            "required": ["arg0"]}}}


def body(i: int | None, n_tools: int = 0) -> bytes:
    text = "Write a long story." if i is None else f"Write a long story about the number {i}."
    extra = {"tools": [tool(k) for k in range(n_tools)]} if n_tools else {}
    return msgspec.json.encode({"model": "policy", "stream": True, "max_tokens": 50, "seed": 1,
                                "messages": [{"role": "user", "content": text}], **extra})


async def shares(reps: int, distinct: bool, pause_s: float) -> tuple[float, float]:
    """(request → engine call, first token → first byte), ms, p50 (the figures of ``bench_stream``)."""
    before, _, after = await split(reps, distinct, pause_s)
    return before, after


async def split(reps: int, distinct: bool, pause_s: float, n_tools: int = 0) -> tuple[float, float, float]:
    """(request → engine call, request → request sent, first token → first byte), ms, p50 after 3 warm-ups;
    ``n_tools``: each request carries that many tools (the same ones every call, as a harness sends them)."""
    import aiohttp

    from polar_hpc.assets import asset_path
    from polar_hpc.chat.template import ChatTemplate
    from polar_hpc.engine.engine import SGLangEngine
    from polar_hpc.engine.settings import EngineSettings
    from polar_hpc.engine.stream import EngineStream
    from polar_hpc.proxy.server import ProxyServer
    from polar_hpc.proxy.settings import ProxySettings
    from polar_hpc.sim.sglang_stub import StubServer

    streams: list[EngineStream] = []

    class Recording(SGLangEngine):
        async def open_stream(self, *a: Any, **kw: Any) -> EngineStream:
            s = await super().open_stream(*a, **kw)
            streams.append(s)
            return s

    sent: list[float] = []
    stub = StubServer(n_tokens=50, token_delay_s=0.001, token_base=9707)
    engine = Recording([await stub.start()], EngineSettings(context_length=40000),
                       request_hook=lambda _: sent.append(time.time()))
    template = ChatTemplate.from_model_dir(asset_path("tiny-qwen3"))
    server = ProxyServer(template, engine, ProxySettings(model_name="policy", context_length=40000, max_new_tokens=50))
    base = await server.start()
    key = server.open_session("b")
    hdr = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    after = []
    try:
        async with aiohttp.ClientSession() as http:
            for i in range(reps + 3):
                await asyncio.sleep(pause_s)  # the proxy idles between calls, as between benchmark replies
                async with http.post(base + "/v1/chat/completions", data=body(i if distinct else None, n_tools),
                                     headers=hdr) as resp:
                    first, seen = 0.0, b""
                    async for data in resp.content.iter_any():
                        seen += data
                        if not first and FIRST in seen:
                            first = time.monotonic()
                stamp = streams[-1].first_token_at
                assert stamp is not None and first, "no first token / content byte"
                after.append((first - stamp) * 1000)
        records = server.close_session(key)
    finally:
        await server.stop()
        await engine.close()
        await stub.stop()
    before = [(r.timings.engine_start - r.timings.received) * 1000 for r in records if r.timings.engine_start]
    out = [(t - r.timings.received) * 1000 for r, t in zip(records, sent, strict=True)]
    return statistics.median(before[3:]), statistics.median(out[3:]), statistics.median(after[3:])


ROWS = (("same request repeated", False), ("a new prompt each call", True))
HEAD = "| prompt | request → engine call | request → request sent | first token → first byte |\n|---|---|---|---|"


def measure(args: argparse.Namespace) -> dict[str, list[list[float]]]:
    rows = ROWS[1:] if args.new_only else ROWS
    got: dict[str, list[list[float]]] = {label: [] for label, _ in rows}
    for _ in range(args.rounds):
        for label, distinct in rows:
            got[label].append(list(asyncio.run(split(args.reps, distinct, args.pause_ms / 1000, args.tools))))
    return got


def table(got: dict[str, list[list[float]]]) -> str:
    lines = [HEAD]
    for label, runs in got.items():
        b, s, a = (statistics.median(x) for x in zip(*runs, strict=True))
        lines.append(f"| {label} | {b:.3f} ms | {s:.3f} ms | {a:.3f} ms |")
    return "\n".join(lines)


def compare(args: argparse.Namespace) -> None:
    """This script under each tree in turn (a fresh process per tree and round), then each tree's table."""
    trees = [str(Path(t).resolve()) for t in args.trees.split(",")]
    got: dict[str, dict[str, list[list[float]]]] = {t: {} for t in trees}
    for _ in range(args.rounds):
        for tree in trees:
            cmd = [sys.executable, __file__, "--json", "--reps", str(args.reps), "--pause-ms", str(args.pause_ms),
                   "--tools", str(args.tools)]
            out = subprocess.run(cmd + (["--new-only"] if args.new_only else []), check=True, capture_output=True,
                                 env={**os.environ, "PYTHONPATH": tree}).stdout
            for label, runs in json.loads(out).items():
                got[tree].setdefault(label, []).extend(runs)
    for tree in trees:
        print(f"# the proxy's own share of the first content byte, in one process: {tree}")
        print(table(got[tree]))
    print(f"p50 of {args.reps}, median of {args.rounds} alternating rounds, {args.tools} tools per request; "
          f"load average {load_average()}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--pause-ms", type=float, default=20.0, help="idle time between calls")
    ap.add_argument("--new-only", action="store_true", help="only the new-prompt row")
    ap.add_argument("--tools", type=int, default=0, help="tools each request carries (a coding harness sends 10-20)")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each row, alternating (median of their p50s)")
    ap.add_argument("--trees", help="comma-separated source trees to compare, each run in turn in its own process")
    ap.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.trees:
        compare(args)
        return
    got = measure(args)
    if args.json:
        print(json.dumps(got))
        return
    import polar_hpc

    print(f"# the proxy's own share of the first content byte, in one process ({polar_hpc.__file__})")
    print(table(got))
    print(f"p50 of {args.reps}{f', median of {args.rounds} rounds' if args.rounds > 1 else ''}, {args.tools} tools "
          f"per request; load average {load_average()}")


if __name__ == "__main__":
    main()
