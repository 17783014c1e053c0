"""Streaming from the engine as it samples (``proxy.stream_upstream``) beside today's synthesized stream, in one run.

Processes: the FAKE engine (``sim.sglang_stub.StubServer``, SGLang's streaming ``/generate`` with deltas, the
first token at once and then a chunk per ``sampling_params.stream_interval`` tokens, as SGLang 0.5.23) and the
load generator on CPU 0; the proxies on CPU 1 (tiny-qwen3 template): ``live`` (stream_upstream, the default
``proxy.stream_interval``), ``live ... 1`` (the same asking for every token, SGLang's own default) and ``synth``
(one non-streaming engine call, then a synthesized stream).

Reports:
  1. time to first content byte of a 1,000-token reply (the engine's first token after ``--first-ms``, then
     one every ``--token-ms``), the client watching for the first text: direct to the engine (its own
     first-token time, measured the same way), through a bare TCP relay (the two process hops a proxy adds,
     with no work), through ``live``, through ``synth``; p50 over ``--reps``,
     interleaved, a new prompt each call (and ``live`` once more with one prompt repeated: the proxy keeps
     whole renders, so a task's samples and retries skip rendering). Once with the processes scheduled as the
     host is, once under ``SCHED_FIFO`` (all alike: on a host shared with other work each cross-process
     wake-up can wait for a busy CPU's time slice, and a proxy adds two hops), once with the proxies and the
     relay moved to CPU 0 as well ("one CPU": the direct path never wakes a process on the other CPU, a proxy's
     path does so four times, and on a VM waking an idle virtual CPU goes through the hypervisor, which can
     cost a millisecond and more: the bare relay's row in each layout shows it), and that under ``SCHED_FIFO``
     (each process runs until it waits: the sum of the work on the path, with no other process's timer
     cutting in). Then the proxy's own share
     measured inside one process, a new prompt each call (``bench_first_byte_split.shares``);
  2. proxy CPU-ms per completion of a 1,000-token reply (median per call, the cells in alternating rounds):
     from an instant engine, live stream (both stream intervals), synthesized stream, non-streaming JSON (the
     goal: live ≤ 2× JSON); then the same against the engine sampling a token every ``--token-ms``, one call
     at a time and ``--concurrent`` sessions at once (the streams of one proxy wake together). This VM charges
     ≈0.2–0.3 CPU-ms to every wake-up of a sleeping process, so the paced cells count mostly how often the
     proxy wakes (the deltas it hands on);
  3. ``--sessions`` concurrent streaming sessions held through ``live`` (a token every 0.5 s per session):
     how many finish cleanly, proxy CPU % and RSS while they stream;
  4. the records of the same call on both paths compared (prompt ids, sampled ids, logprobs, finish reason).

    python tools/bench/bench_stream.py            # ≈9 min on 2 cores
    python tools/bench/bench_stream.py --quick
    python tools/bench/bench_stream.py --only 2   # the CPU cells alone
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
from bench_first_byte_split import shares
from common import cpu_s, free_port, load_average, pinned, raise_nofile, realtime, rss_mb, wait_up, wakeups
from common import spawn as spawn_in

from polar_hpc.config.run import ProxyConfig

KEY = "sk-bench"
REPLY = 1000
TOKEN_BASE = 9707
"""The stub's tokens are 9707, 9708, ...: words ("Hello", ...), so the first token is visible text."""
FIRST_CONTENT = {"engine": b"[9707", "chat": b'"content":"Hello'}
SILENCE_S = 60.0
"""A call that receives nothing for this long fails naming its target (a lost request is an error, not a hang)."""
"""What the first content byte arrives with: the engine's first token, the chat stream's first text delta."""


# ---------------------------------------------------------------------------------------------- processes
def serve_stub(port: int, first_s: float, token_s: float, n_tokens: int) -> None:
    from polar_hpc.sim.sglang_stub import StubServer

    async def main() -> None:
        stub = StubServer(n_tokens=n_tokens, first_token_delay_s=first_s, token_delay_s=token_s,
                          token_base=TOKEN_BASE)
        await stub.start("127.0.0.1", port)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_relay(port: int, upstream_port: int) -> None:
    """A bare TCP relay in front of the engine: the two process hops a proxy adds, doing no work."""

    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(1 << 16):
                writer.write(data)
        finally:
            writer.close()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer), return_exceptions=True)

    async def main() -> None:
        await asyncio.start_server(relay, "127.0.0.1", port)
        await asyncio.Event().wait()

    asyncio.run(main())


def serve_proxy(port: int, upstream: str, live: bool, records: str, stream_interval: int, max_delay_s: float) -> None:
    from polar_hpc.assets import asset_path
    from polar_hpc.chat.template import ChatTemplate
    from polar_hpc.engine.engine import SGLangEngine
    from polar_hpc.engine.settings import EngineSettings
    from polar_hpc.proxy.server import ProxyServer
    from polar_hpc.proxy.settings import ProxySettings

    async def main() -> None:
        template = ChatTemplate.from_model_dir(asset_path("tiny-qwen3"))
        engine = SGLangEngine([upstream], EngineSettings(request_timeout_s=600, context_length=40000,
                                                         stream_interval=stream_interval,
                                                         stream_max_delay_s=max_delay_s))
        settings = ProxySettings(model_name="policy", context_length=40000, max_new_tokens=REPLY, sse_keepalive_s=10.0,
                                 stream_upstream=live, session_memory_bytes=64 * 1024 * 1024)
        server = ProxyServer(template, engine, settings, records_dir=records)
        server.open_session("bench", api_key=KEY)
        for i in range(2000):
            server.open_session(f"s{i}", api_key=f"{KEY}-{i}")
        await server.start("127.0.0.1", port)
        await asyncio.Event().wait()

    asyncio.run(main())


def spawn(role: str, *args: str, cpu: int) -> subprocess.Popen[bytes]:
    return spawn_in(__file__, role, *args, cpu=cpu)


def chat_body(stream: bool, seed: int = 1, prompt: str = "Write a long story.") -> bytes:
    return msgspec.json.encode({"model": "policy", "stream": stream, "max_tokens": REPLY, "seed": seed,
                                "messages": [{"role": "user", "content": prompt}]})


def new_prompt(i: int) -> str:
    """A prompt no earlier call rendered (the proxy keeps whole renders of repeated ones)."""
    return f"Write a long story, number {i}."


def gen_body() -> bytes:
    return msgspec.json.encode({"input_ids": list(range(1000, 1020)), "stream": True, "return_logprob": True,
                                "sampling_params": {"max_new_tokens": REPLY}})


# ---------------------------------------------------------------------------------------------- measurements
async def first_byte(http: Any, url: str, body: bytes, marker: bytes = b"", key: str = KEY) -> tuple[float, float]:
    """(seconds to the first body byte holding content, i.e. the body so far holds ``marker``; to the end)."""
    import aiohttp

    hdr = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
    t0 = time.perf_counter()
    first = 0.0
    seen = b""
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=SILENCE_S, sock_read=SILENCE_S)
    try:
        async with http.post(url, data=body, headers=hdr, timeout=timeout) as resp:
            assert resp.status == 200, await resp.text()
            async for data in resp.content.iter_any():
                if not first:
                    seen += data
                    if marker in seen:
                        first = time.perf_counter() - t0
    except TimeoutError:
        raise RuntimeError(f"{url}: nothing received for {SILENCE_S:.0f}s after {time.perf_counter() - t0:.1f}s "
                           f"({len(seen)} bytes before); the request was lost (see the processes' logs)") from None
    assert first, f"{url}: the reply never held {marker!r}"
    return first, time.perf_counter() - t0


_PROMPTS = itertools.count()


async def ttfb(urls: dict[str, str], reps: int) -> dict[str, tuple[float, float]]:
    import aiohttp

    chat = urls["live_slow"] + "/v1/chat/completions"
    targets = {"engine (direct)": (urls["slow_stub"] + "/generate", lambda i: gen_body(), FIRST_CONTENT["engine"]),
               "engine through a bare relay": (urls["relay"] + "/generate", lambda i: gen_body(),
                                               FIRST_CONTENT["engine"]),
               "live": (chat, lambda i: chat_body(True, prompt=new_prompt(i)), FIRST_CONTENT["chat"]),
               "live, a repeated prompt": (chat, lambda i: chat_body(True), FIRST_CONTENT["chat"]),
               "synth": (urls["synth_slow"] + "/v1/chat/completions", lambda i: chat_body(True, prompt=new_prompt(i)),
                         FIRST_CONTENT["chat"])}
    out: dict[str, list[tuple[float, float]]] = {k: [] for k in targets}
    async with aiohttp.ClientSession() as http:
        for _ in range(reps):  # interleaved
            for name, (url, body, marker) in targets.items():
                out[name].append(await first_byte(http, url, body(next(_PROMPTS)), marker))
    return {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in out.items()}


CPU_CELLS = {
    "live stream": ("live_fast", True),
    f"live stream, stream_interval 1 (SGLang's own default) instead of {ProxyConfig().stream_interval}":
        ("live_fast1", True),
    "synthesized stream": ("synth_fast", True),
    "non-streaming JSON": ("live_fast", False),
}
PACED_CELLS = {
    "live stream, engine sampling a token every --token-ms": ("live_slow", True),
    "same, stream_interval 1": ("live_slow1", True),
    "non-streaming JSON, same engine": ("live_slow", False),
}


async def cpu_per_completion(urls: dict[str, str], pids: dict[str, int], n: int) -> dict[str, tuple[float, float]]:
    """Median (CPU-ms, wake-ups) of the proxy per completion (read from the kernel per call, so the cells can be
    measured in alternating rounds: the host's changing load hits all alike): ``n`` rounds against the instant
    engine, ``n // 6`` (at least 3) against the engine that samples a token every ``--token-ms``."""
    import aiohttp

    res: dict[str, tuple[float, float]] = {}
    async with aiohttp.ClientSession() as http:
        for cells, rounds in ((CPU_CELLS, n), (PACED_CELLS, max(3, n // 6))):
            calls: dict[str, list[tuple[float, int]]] = {name: [] for name in cells}
            for i in range(rounds + 2):  # two rounds of warm-up
                for name, (target, stream) in cells.items():
                    pid = pids[target]
                    c0, w0 = cpu_s(pid), wakeups(pid)
                    await first_byte(http, urls[target] + "/v1/chat/completions", chat_body(stream))
                    if i >= 2:
                        calls[name].append((cpu_s(pid) - c0, wakeups(pid) - w0))
            res |= {name: (statistics.median(c for c, _ in v) * 1000, statistics.median(w for _, w in v))
                    for name, v in calls.items()}
    return res


async def concurrent_cpu(url: str, pid: int, n: int, rounds: int) -> dict[str, tuple[float, float]]:
    """Median over ``rounds`` (alternating) of the proxy's (CPU-ms, wake-ups) per completion while ``n`` sessions
    each stream one reply at once, against the same pace, beside the same sessions as non-streaming JSON calls."""
    import aiohttp

    cells: dict[str, list[tuple[float, float]]] = {"live stream": [], "non-streaming JSON": []}
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn) as http:
        for i in range(rounds + 1):  # a round of warm-up
            for name, stream in (("live stream", True), ("non-streaming JSON", False)):
                c0, w0 = cpu_s(pid), wakeups(pid)
                await asyncio.gather(*(first_byte(http, url + "/v1/chat/completions", chat_body(stream),
                                                  key=f"{KEY}-{j}") for j in range(n)))
                if i:
                    cells[name].append(((cpu_s(pid) - c0) * 1000 / n, (wakeups(pid) - w0) / n))
    return {k: (statistics.median(c for c, _ in v), statistics.median(w for _, w in v)) for k, v in cells.items()}


async def wakeup_cost_ms(n: int = 50) -> float:
    """CPU-ms this process is charged per sleep and wake-up of its event loop."""
    t0 = time.process_time()
    for _ in range(n):
        await asyncio.sleep(0.02)
    return (time.process_time() - t0) / n * 1000


async def held_sessions(url: str, pid: int, n: int) -> dict[str, Any]:
    import aiohttp

    body = msgspec.json.encode({"model": "policy", "stream": True, "max_tokens": 10,
                                "messages": [{"role": "user", "content": "hi"}]})
    ok = 0
    conn = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=conn, timeout=aiohttp.ClientTimeout(total=120)) as http:
        async def one(i: int) -> None:
            nonlocal ok
            hdr = {"Authorization": f"Bearer {KEY}-{i}", "Content-Type": "application/json"}
            async with http.post(url + "/v1/chat/completions", data=body, headers=hdr) as resp:
                raw = await resp.read()
            ok += resp.status == 200 and raw.endswith(b"data: [DONE]\n\n")

        c0, t0 = cpu_s(pid), time.monotonic()
        tasks = [asyncio.create_task(one(i)) for i in range(n)]
        await asyncio.sleep(2.0)
        rss = rss_mb(pid)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        wall = time.monotonic() - t0
        cpu = cpu_s(pid) - c0
    errors = [r for r in results if isinstance(r, BaseException)]
    return {"sessions": n, "finished_ok": ok, "errors": len(errors), "first_error": repr(errors[0]) if errors else None,
            "wall_s": round(wall, 2), "proxy_cpu_pct": round(100 * cpu / wall, 1), "proxy_rss_mb": round(rss, 1)}


async def compare_records(urls: dict[str, str], live_dir: Path, synth_dir: Path) -> str:
    import aiohttp

    from polar_hpc.wire import codec
    from polar_hpc.wire.calls import CompletionRecord

    async with aiohttp.ClientSession() as http:
        for target in ("live_fast", "synth_fast"):
            await first_byte(http, urls[target] + "/v1/chat/completions", chat_body(True))

    def first(d: Path) -> CompletionRecord:
        return codec.from_json((d / "bench.jsonl").read_bytes().splitlines()[0], CompletionRecord)

    a, b = first(live_dir), first(synth_dir)
    same = (a.prompt_ids.tolist() == b.prompt_ids.tolist() and a.output_ids.tolist() == b.output_ids.tolist()
            and a.output_logprobs.tolist() == b.output_logprobs.tolist() and a.finish_reason == b.finish_reason
            and a.response.content == b.response.content)
    return f"identical: {same} ({len(a.output_ids)} sampled tokens, finish {a.finish_reason})"


async def main_async(args: argparse.Namespace, urls: dict[str, str], pids: dict[str, int],
                     dirs: dict[str, Path]) -> None:
    if "1" in args.only:
        await section_ttfb(args, urls, pids)
    if "2" in args.only:
        await section_cpu(args, urls, pids)
    print("\n## 4. records of the same call on both paths")
    print(await compare_records(urls, dirs["live_fast"], dirs["synth_fast"]))
    if "3" in args.only:
        print(f"\n## 3. {args.sessions:,} concurrent streaming sessions through live (10 tokens, one every 0.5 s)")
        print(msgspec.json.encode(await held_sessions(urls["live_held"], pids["live_held"], args.sessions)).decode())


SCHEDULING = (("as the host is", False, None), ("SCHED_FIFO", True, None), ("one CPU", False, 0),
              ("one CPU, SCHED_FIFO", True, 0))
"""The first-byte rows: (label, SCHED_FIFO, the CPU the proxies and the relay are moved to for the row)."""


async def section_ttfb(args: argparse.Namespace, urls: dict[str, str], pids: dict[str, int]) -> None:
    print(f"\n## 1. time to first content byte, {REPLY}-token reply, engine's first token after {args.first_ms} ms, "
          f"then one every {args.token_ms} ms (p50 of {args.reps})")
    slow = [pids[k] for k in ("slow_stub", "live_slow", "synth_slow", "relay")]
    rows = {}
    for label, rt, cpu in SCHEDULING:
        with realtime(slow, enabled=rt) as ok, pinned([pids["live_slow"], pids["synth_slow"], pids["relay"]], cpu):
            if rt and not ok:
                print("(SCHED_FIFO not permitted here: that row is left out)")
                continue
            rows[label] = await ttfb(urls, args.reps)
    print("| target | scheduling | first content byte | whole reply |\n|---|---|---|---|")
    for label, t in rows.items():
        for k, (f, w) in t.items():
            print(f"| {k} | {label} | {f * 1000:.2f} ms | {w:.3f} s |")
    for label, t in rows.items():
        added = (t["live"][0] - t["engine (direct)"][0]) * 1000
        again = (t["live, a repeated prompt"][0] - t["engine (direct)"][0]) * 1000
        hops = (t["engine through a bare relay"][0] - t["engine (direct)"][0]) * 1000
        print(f"{label}: live adds {added:.2f} ms to the engine's own first-content time for a new prompt (goal ≤ "
              f"2 ms), {again:.2f} ms for a repeated one; a bare relay (the two hops, no work) adds {hops:.2f} ms, "
              f"so the proxy's work adds {added - hops:.2f} ms (new prompt), {again - hops:.2f} ms (repeated); "
              f"synthesized: first content after {t['synth'][0]:.3f} s (the whole reply)")
    before, after = await shares(args.reps, distinct=True, pause_s=0.02)
    print(f"the proxy's own share, in one process, a new prompt each call: request → engine call {before:.2f} ms "
          "(read, render, tokenize), "
          f"first sampled token → client's first content byte {after:.2f} ms (p50); load average {load_average()}")


async def section_cpu(args: argparse.Namespace, urls: dict[str, str], pids: dict[str, int]) -> None:
    print(f"\n## 2. proxy CPU-ms per completion, {REPLY}-token reply ({args.n} calls per cell)")
    c = await cpu_per_completion(urls, pids, args.n)
    print("| path | CPU-ms (median) | / JSON | wake-ups of the proxy |\n|---|---|---|---|")
    ms = {k: v[0] for k, v in c.items()}
    json_ms = {**dict.fromkeys(CPU_CELLS, ms["non-streaming JSON"]),
               **dict.fromkeys(PACED_CELLS, ms["non-streaming JSON, same engine"])}
    for k, (v, w) in c.items():
        print(f"| {k} | {v:.2f} | {v / json_ms[k]:.2f}× | {w:.0f} |")
    paced = ms["live stream, engine sampling a token every --token-ms"] / ms["non-streaming JSON, same engine"]
    print(f"instant engine: live / JSON = {ms['live stream'] / ms['non-streaming JSON']:.2f}× (goal ≤ 2×); "
          f"engine at its pace: {paced:.2f}×; live / synthesized = {ms['live stream'] / ms['synthesized stream']:.2f}×;"
          f" load average {load_average()}")
    many = await concurrent_cpu(urls["live_slow"], pids["live_slow"], args.concurrent, max(3, args.n // 10))
    print(f"\n{args.concurrent} sessions at once, each one reply, the engine sampling a token every --token-ms "
          "for each (CPU-ms and wake-ups per completion, medians of alternating rounds):")
    print("| path | CPU-ms per completion | / JSON | wake-ups per completion |\n|---|---|---|---|")
    for k, (v, w) in many.items():
        print(f"| {k} | {v:.2f} | {v / many['non-streaming JSON'][0]:.2f}× | {w:.1f} |")
    cost = await wakeup_cost_ms()
    print(f"one wake-up of a sleeping process costs this host {cost:.3f} CPU-ms (an asyncio.sleep(0.02))")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20, help="calls per first-byte cell")
    ap.add_argument("--first-ms", type=float, default=0.0, help="the slow engine's time to its first token")
    ap.add_argument("--token-ms", type=float, default=1.0)
    ap.add_argument("--n", type=int, default=30, help="completions per CPU cell")
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--concurrent", type=int, default=16, help="sessions at once in the paced CPU cells")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--stream-max-delay", type=float, default=ProxyConfig().stream_max_delay_s, metavar="S",
                    help="the live proxies' proxy.stream_max_delay_s (default: %(default)s)")
    ap.add_argument("--only", default="123", help="the sections to run, e.g. 12 (the records are always compared)")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.n, args.sessions, args.concurrent = 3, 5, 200, 4
    raise_nofile()
    tmp = Path(tempfile.mkdtemp(prefix="bench-stream-"))
    ports = {k: free_port() for k in ("slow_stub", "fast_stub", "held_stub", "live_slow", "synth_slow", "live_fast",
                                       "synth_fast", "live_held", "live_fast1", "live_slow1", "relay")}
    urls = {k: f"http://127.0.0.1:{p}" for k, p in ports.items()}
    procs = {
        "slow_stub": spawn("stub", str(ports["slow_stub"]), str(args.first_ms / 1000), str(args.token_ms / 1000),
                           str(REPLY), cpu=0),
        "fast_stub": spawn("stub", str(ports["fast_stub"]), "0", "0", str(REPLY), cpu=0),
        "held_stub": spawn("stub", str(ports["held_stub"]), "0.5", "0.5", "10", cpu=0),
        "relay": spawn("relay", str(ports["relay"]), str(ports["slow_stub"]), cpu=1),
    }
    dirs = {k: tmp / k for k in ("live_slow", "synth_slow", "live_fast", "synth_fast", "live_held", "live_fast1",
                                 "live_slow1")}
    try:
        for k in ("slow_stub", "fast_stub", "held_stub", "relay"):
            wait_up(urls[k], procs[k])
        for k in dirs:
            stub = urls["slow_stub" if "slow" in k else "held_stub" if k.endswith("held") else "fast_stub"]
            interval = 1 if k.endswith("1") else ProxyConfig().stream_interval
            procs[k] = spawn("proxy", str(ports[k]), stub, "1" if k.startswith("live") else "0", str(dirs[k]),
                             str(interval), str(args.stream_max_delay), cpu=1)
        for k in dirs:
            wait_up(urls[k], procs[k])
        os.sched_setaffinity(0, {0})
        print("# bench_stream: live (stream_upstream) vs synthesized stream, FAKE streaming engine stub")
        print(f"host: {os.cpu_count()} cores, load average {load_average()}; proxies pinned to CPU 1, stubs + load "
              "generator to CPU 0")
        asyncio.run(main_async(args, urls, {k: p.pid for k, p in procs.items()}, dirs))
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        role, rest = sys.argv[1][1:], sys.argv[2:]
        if role == "stub":
            serve_stub(int(rest[0]), float(rest[1]), float(rest[2]), int(rest[3]))
        elif role == "relay":
            serve_relay(int(rest[0]), int(rest[1]))
        elif role == "proxy":
            serve_proxy(int(rest[0]), rest[1], rest[2] == "1", rest[3], int(rest[4]), float(rest[5]))
        sys.exit(0)
    sys.exit(main())
