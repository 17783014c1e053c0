"""The proxy's own share of the time to the first content byte of a live stream, split in its two halves and
measured inside one process (client, proxy and the FAKE engine stub in one event loop, free of the wake-ups of
separate processes), for the same request repeated (its render is cached) and for a new
prompt each time (every render fresh):

  request → engine call: the request's arrival (``Timings.received``) to the engine call (``Timings.engine_start``):
    reading, normalizing, rendering and tokenizing the prompt, building the record;
  request → request sent: the same to the streamed ``/generate`` body handed to the socket (the engine's
    ``request_hook``): the whole of the proxy's work before the engine can start;
  first token → first byte: the first sampled token reaching the proxy's engine client
    (``EngineStream.first_token_at``) to the client's first content byte (shaping, the provider's event, the
    write, and the client's read of it in the same loop).

Run it against two trees back to back to compare (each line is the median over ``--reps``, after 3 warm-ups):

    PYTHONPATH=/work/wt/base5 python tools/bench/bench_first_byte_split.py
    PYTHONPATH=. python tools/bench/bench_first_byte_split.py

(``--new-only``: the new-prompt row alone; ``--rounds N``: N alternating runs of each row, each in a fresh
event loop, and the median of their medians.)
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from typing import Any

import msgspec
from common import load_average

FIRST = b'"content":"Hello'
"""The first text delta of the stub's reply (its tokens start at 9707, "Hello")."""


def body(i: int | None) -> bytes:
    text = "Write a long story." if i is None else f"Write a long story about the number {i}."
    return msgspec.json.encode({"model": "policy", "stream": True, "max_tokens": 50, "seed": 1,
                                "messages": [{"role": "user", "content": text}]})


async def shares(reps: int, distinct: bool, pause_s: float) -> tuple[float, float]:
    """(request → engine call, first token → first byte), ms, p50 (the figures of ``bench_stream``)."""
    before, _, after = await split(reps, distinct, pause_s)
    return before, after


async def split(reps: int, distinct: bool, pause_s: float) -> tuple[float, float, float]:
    """(request → engine call, request → request sent, first token → first byte), ms, p50 after 3 warm-ups."""
    import aiohttp

    from polar_hpc.assets import asset_path
    from polar_hpc.inference.engine import SGLangEngine
    from polar_hpc.inference.stream import EngineStream
    from polar_hpc.inference.template import ChatTemplate
    from polar_hpc.proxy.server import ProxyServer
    from polar_hpc.sim.sglang_stub import StubServer

    streams: list[EngineStream] = []

    class Recording(SGLangEngine):
        async def open_stream(self, *a: Any, **kw: Any) -> EngineStream:
            s = await super().open_stream(*a, **kw)
            streams.append(s)
            return s

    sent: list[float] = []
    stub = StubServer(n_tokens=50, token_delay_s=0.001, token_base=9707)
    engine = Recording([await stub.start()], context_length=40000, request_hook=lambda _: sent.append(time.time()))
    template = ChatTemplate.from_model_dir(asset_path("tiny-qwen3"))
    server = ProxyServer(template, engine, model_name="policy", context_length=40000, max_new_tokens=50)
    base = await server.start()
    key = server.open_session("b")
    hdr = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    after = []
    try:
        async with aiohttp.ClientSession() as http:
            for i in range(reps + 3):
                await asyncio.sleep(pause_s)  # the proxy idles between calls, as between benchmark replies
                async with http.post(base + "/v1/chat/completions", data=body(i if distinct else None),
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--pause-ms", type=float, default=20.0, help="idle time between calls")
    ap.add_argument("--new-only", action="store_true", help="only the new-prompt row")
    ap.add_argument("--rounds", type=int, default=1, help="alternating runs of each row (median of their p50s)")
    args = ap.parse_args()
    import polar_hpc

    rows = [("a new prompt each call", True)] if args.new_only else [("same request repeated", False),
                                                                      ("a new prompt each call", True)]
    got: dict[str, list[tuple[float, float, float]]] = {label: [] for label, _ in rows}
    for _ in range(args.rounds):
        for label, distinct in rows:
            got[label].append(asyncio.run(split(args.reps, distinct, args.pause_ms / 1000)))
    print(f"# the proxy's own share of the first content byte, in one process ({polar_hpc.__file__})")
    print("| prompt | request → engine call | request → request sent | first token → first byte |\n|---|---|---|---|")
    for label, _ in rows:
        b, s, a = (statistics.median(x) for x in zip(*got[label], strict=True))
        print(f"| {label} | {b:.3f} ms | {s:.3f} ms | {a:.3f} ms |")
    print(f"p50 of {args.reps}{f', median of {args.rounds} rounds' if args.rounds > 1 else ''}; "
          f"load average {load_average()}")


if __name__ == "__main__":
    main()
