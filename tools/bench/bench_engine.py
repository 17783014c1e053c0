"""Engine client overhead and reference server throughput.

1. ``SGLangEngine.generate`` against an instant in-process ``/generate`` stub (the FAKE
   ``polar_hpc.sim.sglang_stub.StubServer``) beside a bare aiohttp POST of a prebuilt body to the same stub,
   interleaved in one run; the difference of the medians is what the client adds (target <= 0.3 ms p50).
2. Reference server decode throughput (tokens/s) on tiny-qwen3 and smollm2, 1, 4 and 8 concurrent requests
   of a ``--model-prompt-tokens`` prompt (an agent's turn is ~1,000), each concurrency with the decode batch
   (``--decode-batch 16``, the default) beside one request a forward (``--decode-batch 1``), in one run.

    python tools/bench/bench_engine.py [--calls 3000] [--prompt-tokens 100] [--new-tokens 16] [--skip-models]
        [--model-new-tokens 64] [--model-prompt-tokens 1000] [--threads 1]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import aiohttp
import msgspec

from polar_hpc.assets import asset_path
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.reference.options import DEFAULTS, ReferenceOptions
from polar_hpc.reference.process import start_reference_server
from polar_hpc.sim.sglang_stub import StubServer
from polar_hpc.wire.calls import SamplingParams


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, int(q * len(s)))]


async def client_overhead(calls: int, prompt_tokens: int, new_tokens: int) -> None:
    stub = StubServer()
    url = await stub.start()
    prompt = list(range(1000, 1000 + prompt_tokens))
    params = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, top_p=0.95)
    engine = SGLangEngine([url], EngineSettings(context_length=32768))
    body = msgspec.json.encode(engine.build_request(prompt, params, rid="bench"))
    bare_http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0), trust_env=False)
    headers = {"Content-Type": "application/json"}

    async def bare() -> None:
        async with bare_http.post(f"{url}/generate", data=body, headers=headers) as resp:
            await resp.read()

    async def client() -> None:
        await engine.generate(prompt, params, session_id="s")

    for _ in range(200):  # warm up both paths
        await bare()
        await client()
    t_bare: list[float] = []
    t_client: list[float] = []
    for i in range(calls):
        for fn, out in ((bare, t_bare), (client, t_client)) if i % 2 == 0 else ((client, t_client), (bare, t_bare)):
            t0 = time.perf_counter()
            await fn()
            out.append((time.perf_counter() - t0) * 1e3)
    await bare_http.close()
    await engine.close()
    await stub.stop()
    p50b, p99b = statistics.median(t_bare), pct(t_bare, 0.99)
    p50c, p99c = statistics.median(t_client), pct(t_client, 0.99)
    print(f"\nEngine client vs bare aiohttp, instant stub, {calls} calls each, "
          f"{prompt_tokens}-token prompt, {new_tokens} new tokens (ms)")
    print(f"{'path':<22}{'p50':>9}{'p99':>9}")
    print(f"{'bare aiohttp POST':<22}{p50b:>9.3f}{p99b:>9.3f}")
    print(f"{'SGLangEngine.generate':<22}{p50c:>9.3f}{p99c:>9.3f}")
    print(f"{'added by the client':<22}{p50c - p50b:>9.3f}{p99c - p99b:>9.3f}   (target: <= 0.300 p50)")


async def throughput(url: str, prompt: list[int], new_tokens: int, concurrency: int) -> tuple[float, int]:
    params = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, seed=0)
    async with SGLangEngine([url], EngineSettings(request_timeout_s=600)) as engine:
        await engine.generate(prompt, SamplingParams(max_new_tokens=2))
        t0 = time.perf_counter()
        results = await asyncio.gather(*(engine.generate(prompt, params) for _ in range(concurrency)))
        wall = time.perf_counter() - t0
    tokens = sum(r.completion_tokens for r in results)
    return tokens / wall, tokens


def model_throughput(new_tokens: int, prompt_tokens: int, threads: int) -> None:
    from tokenizers import Tokenizer

    rows = []
    for name in ("tiny-qwen3", "smollm2"):
        model = asset_path(name)
        tok = Tokenizer.from_file(str(Path(model) / "tokenizer.json"))
        story = "The lighthouse keeper counted the ships that passed the rocks each night. " * (prompt_tokens // 12)
        text = f"<|im_start|>user\n{story}\nGo on with the story.<|im_end|>\n<|im_start|>assistant\n"
        prompt = tok.encode(text, add_special_tokens=False).ids
        tps: dict[tuple[int, int], float] = {}
        for batch in (1, DEFAULTS.decode_batch):
            options = ReferenceOptions(threads=threads, decode_batch=batch)
            with start_reference_server(model, options, startup_timeout_s=300) as server:
                for conc in (1, 4, 8):
                    tps[batch, conc], _ = asyncio.run(throughput(server.url, prompt, new_tokens, conc))
        for conc in (1, 4, 8):
            rows.append((name, len(prompt), conc, tps[1, conc], tps[DEFAULTS.decode_batch, conc]))
    print(f"\nReference server decode throughput (torch CPU, {threads} thread(s), temperature 1, "
          f"{new_tokens} new tokens a request; tokens/s)")
    print(f"{'model':<12}{'prompt':>7}{'concurrent':>11}{'one a forward':>15}{'batched':>9}{'ratio':>7}")
    for name, plen, conc, one, batched in rows:
        print(f"{name:<12}{plen:>7}{conc:>11}{one:>15.1f}{batched:>9.1f}{batched / one:>7.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--prompt-tokens", type=int, default=100)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--model-new-tokens", type=int, default=64)
    ap.add_argument("--model-prompt-tokens", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-models", action="store_true")
    args = ap.parse_args()
    asyncio.run(client_overhead(args.calls, args.prompt_tokens, args.new_tokens))
    if not args.skip_models:
        model_throughput(args.model_new_tokens, args.model_prompt_tokens, args.threads)


if __name__ == "__main__":
    main()
