"""Proxy overhead, side by side in one run, against an instant engine stub process.

Targets (each its own process; the proxy under test pinned to CPU 1, stub and load generator to CPU 0):
  direct-gen   client → stub ``/generate``            (what our proxy calls)
  direct-chat  client → stub ``/v1/chat/completions`` (what the pass-through relays)
  passthrough  client → bare aiohttp pass-through → stub chat   (the floor for a Python proxy)
  polar        client → ProxyServer (tiny-qwen3 template, SGLangEngine) → stub ``/generate``
LiteLLM is not run here (its figures from the same machine: ``shared/reference/anchors-proxy.md``).

Reports: added latency p50/p99 at 1 session (≈100-token prompt, JSON and SSE), proxy CPU-ms per request,
CPU per completion by stage at 100/500/8k/32k prompt tokens (in-process), req/s at 64 concurrent sessions as a
ratio of the pass-through, and N idle streaming connections held (proxy RSS).

    python tools/bench/bench_proxy.py            # ≈3 min on 2 cores
    python tools/bench/bench_proxy.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import msgspec
from common import cpu_s, free_port, raise_nofile, rss_mb, wait_up
from common import spawn as spawn_in

OUT_TEXT_IDS = [9707, 0, 2585, 646, 358, 1492, 30, 151645]  # "Hello! How can I help?" + <|im_end|>
KEY = "sk-bench"


# ---------------------------------------------------------------------------------------------- processes
def serve_stub(port: int) -> None:
    from aiohttp import web

    enc = msgspec.json.Encoder()
    state: dict[str, Any] = {"delay": 0.0, "pending": 0, "release": asyncio.Event()}
    state["release"].set()

    async def generate(req: web.Request) -> web.Response:
        body: dict[str, Any] = msgspec.json.decode(await req.read())
        if not state["release"].is_set():
            state["pending"] += 1
            await state["release"].wait()
            state["pending"] -= 1
        n = len(body["input_ids"])
        finish = {"type": "stop", "matched": 151645}
        meta_info: dict[str, Any] = {
            "id": body.get("rid") or "x", "finish_reason": finish, "prompt_tokens": n,
            "completion_tokens": len(OUT_TEXT_IDS), "cached_tokens": 0, "weight_version": "0",
            "output_token_logprobs": [[-0.1, i, None] for i in OUT_TEXT_IDS]}
        out = {"text": "Hello! How can I help?", "output_ids": OUT_TEXT_IDS, "meta_info": meta_info}
        if body.get("stream"):  # SGLang's deltas (``--incremental-streaming-output``), one token a chunk
            frames = []
            for k, i in enumerate(OUT_TEXT_IDS, 1):
                meta = {**meta_info, "completion_tokens": k, "output_token_logprobs": [[-0.1, i, None]],
                        "finish_reason": finish if k == len(OUT_TEXT_IDS) else None}
                frames.append(b"data: " + enc.encode({"text": "", "output_ids": [i], "meta_info": meta}) + b"\n\n")
            return web.Response(body=b"".join(frames) + b"data: [DONE]\n\n", content_type="text/event-stream")
        return web.Response(body=enc.encode(out), content_type="application/json")

    chat_json = enc.encode({"id": "c", "object": "chat.completion", "created": 0, "model": "m", "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Hello! How can I help?"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108}})
    chunk = (b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
             b'"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}\n\n')
    chat_sse = chunk * 2 + (b'data: {"id":"c","object":"chat.completion.chunk","created":0,"model":"m",'
                            b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')

    async def chat(req: web.Request) -> web.Response:
        body = await req.read()
        if b'"stream":true' in body or b'"stream": true' in body:
            return web.Response(body=chat_sse, content_type="text/event-stream")
        return web.Response(body=chat_json, content_type="application/json")

    async def hold(req: web.Request) -> web.Response:
        on = (await req.json())["hold"]
        if on:
            state["release"].clear()
        else:
            state["release"].set()
        return web.json_response({"pending": state["pending"]})

    async def pending(req: web.Request) -> web.Response:
        return web.json_response({"pending": state["pending"]})

    app = web.Application()
    app.router.add_post("/generate", generate)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/admin/hold", hold)
    app.router.add_get("/admin/pending", pending)
    app.router.add_get("/health", pending)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None, backlog=4096)


def serve_passthrough(port: int, upstream: str) -> None:
    import aiohttp
    from aiohttp import web

    async def relay(req: web.Request) -> web.StreamResponse:
        sess: aiohttp.ClientSession = req.app["http"]
        body = await req.read()
        async with sess.post(upstream + req.path, data=body, headers={"Content-Type": "application/json"}) as up:
            resp = web.StreamResponse(status=up.status, headers={"Content-Type": up.headers.get("Content-Type", "")})
            await resp.prepare(req)
            async for data in up.content.iter_any():
                await resp.write(data)
            await resp.write_eof()
            return resp

    async def health(req: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def startup(app: web.Application) -> None:
        app["http"] = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))

    app = web.Application()
    app.on_startup.append(startup)
    app.router.add_get("/health", health)
    app.router.add_post("/{tail:.*}", relay)
    web.run_app(app, host="127.0.0.1", port=port, access_log=None, print=None, backlog=4096)


def make_engine(upstream: str, limit: int = 512) -> Any:
    from polar_hpc.engine.engine import SGLangEngine
    from polar_hpc.engine.settings import EngineSettings

    # a bounded number of engine connections: 10k idle clients must not mean 10k engine sockets
    return SGLangEngine([upstream], EngineSettings(request_timeout_s=600, context_length=40000, max_connections=limit))


def serve_polar(port: int, upstream: str) -> None:
    from polar_hpc.assets import asset_path
    from polar_hpc.chat.template import ChatTemplate
    from polar_hpc.proxy.server import ProxyServer
    from polar_hpc.proxy.settings import ProxySettings

    async def main() -> None:
        template = ChatTemplate.from_model_dir(asset_path("tiny-qwen3"))
        server = ProxyServer(template, make_engine(upstream), ProxySettings(model_name="policy", context_length=40000,
                                                                            max_new_tokens=64, sse_keepalive_s=10.0,
                                                                            session_memory_bytes=64 * 1024 * 1024))
        server.open_session("bench", api_key=KEY)
        await server.start("127.0.0.1", port)
        await asyncio.Event().wait()

    asyncio.run(main())


# ---------------------------------------------------------------------------------------------- helpers
def chat_body(stream: bool) -> bytes:
    words = " ".join(f"word{i}" for i in range(45))
    return msgspec.json.encode({"model": "policy", "stream": stream, "max_tokens": 32, "messages": [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": f"Please answer briefly: {words}"}]})


def gen_body() -> bytes:
    return msgspec.json.encode({"input_ids": list(range(1000, 1100)), "sampling_params": {"max_new_tokens": 32},
                                "return_logprob": True, "stream": False})


def spawn(role: str, *args: str, cpu: int) -> subprocess.Popen[bytes]:
    return spawn_in(__file__, role, *args, cpu=cpu)


# ---------------------------------------------------------------------------------------------- measurements
async def latency(http: Any, url: str, body: bytes, n: int) -> list[float]:
    hdr = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    out = []
    for _ in range(n):
        t = time.perf_counter()
        async with http.post(url, data=body, headers=hdr) as r:
            await r.read()
            assert r.status == 200, r.status
        out.append((time.perf_counter() - t) * 1000)
    return out


async def throughput(http: Any, url: str, body: bytes, conc: int, seconds: float) -> tuple[float, int]:
    hdr = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    stop = time.perf_counter() + seconds
    done = 0
    errors = 0

    async def worker() -> None:
        nonlocal done, errors
        while time.perf_counter() < stop:
            async with http.post(url, data=body, headers=hdr) as r:
                await r.read()
                if r.status == 200:
                    done += 1
                else:
                    errors += 1

    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(conc)))
    return done / (time.perf_counter() - t), errors


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def stage_breakdown(sizes: list[int], reps: int, stub_url: str) -> list[dict[str, Any]]:
    """In-process CPU per stage (thread CPU time, median of ``reps``), on a history of ≈N prompt tokens."""
    from polar_hpc.assets import asset_path
    from polar_hpc.chat.parse import parse_reply
    from polar_hpc.chat.template import ChatTemplate, to_template_messages
    from polar_hpc.providers import provider_api
    from polar_hpc.providers.detect import Route
    from polar_hpc.proxy.capture import SessionLog
    from polar_hpc.proxy.generate import Generator
    from polar_hpc.proxy.prompt import PromptBuilder
    from polar_hpc.proxy.settings import ProxySettings

    template = ChatTemplate.from_model_dir(asset_path("tiny-qwen3"))
    route = Route("openai_chat", "generate")
    rows = []

    async def run() -> None:
        engine = make_engine(stub_url)
        gen = Generator(template, engine, ProxySettings(tool_parser="qwen", context_length=40000, max_new_tokens=64))
        for size in sizes:
            turn = " ".join(f"tok{i}" for i in range(60))  # ≈ 120+ tokens per message
            msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a helpful assistant."}]
            while len(template.encode(" ".join(m["content"] for m in msgs))) < size - 20:
                msgs.append({"role": "user" if len(msgs) % 2 else "assistant", "content": turn})
            if msgs[-1]["role"] != "user":
                msgs.append({"role": "user", "content": "go on"})
            raw = msgspec.json.encode({"model": "policy", "messages": msgs, "stream": True})
            t: dict[str, list[float]] = {k: [] for k in ("json", "normalize", "render", "encode", "engine", "parse",
                                                            "response", "record", "total")}
            for _ in range(reps):
                c = time.thread_time
                marks = [c()]
                body = msgspec.json.decode(raw)
                marks.append(c())
                norm = provider_api(route.provider).normalize(route, body)
                marks.append(c())
                text = template.render(to_template_messages(norm.canonical.messages), None,
                                       **norm.canonical.template_kwargs)
                marks.append(c())
                ids = template.encode(text)
                marks.append(c())
                builder = PromptBuilder(template, "canonical")
                slog = SessionLog("s", memory_limit_bytes=1 << 30, spill_dir=Path(tempfile.gettempdir()))
                marks.append(c())
                reply, rec = await gen.complete(norm, builder, provider="openai_chat", session_id="s", index=0,
                                                raw_request=raw, received=0.0)
                marks.append(c())
                data = provider_api("openai_chat").sse_body(reply)
                marks.append(c())
                slog.finish(slog.reserve(), rec)
                marks.append(c())
                parse_reply(template.decode(OUT_TEXT_IDS[:-1]), "qwen", [])  # the parse step of complete()
                marks.append(c())
                d = [b - a for a, b in zip(marks, marks[1:], strict=False)]
                json_s, norm_s, render_s, encode_s, _, complete_s, resp_s, rec_s, parse_s = d
                for k, v in (("json", json_s), ("normalize", norm_s), ("render", render_s), ("encode", encode_s),
                             ("parse", parse_s), ("response", resp_s), ("record", rec_s)):
                    t[k].append(v)
                # complete() = render + encode (again) + engine call + parse + record build
                t["engine"].append(max(0.0, complete_s - render_s - encode_s - parse_s))
                t["total"].append(json_s + norm_s + complete_s + resp_s + rec_s)
                assert len(rec.prompt_ids) == len(ids) and data
            rows.append({"tokens": len(ids), **{k: statistics.median(v) * 1000 for k, v in t.items()}})
        await engine.close()

    asyncio.run(run())
    return rows


async def idle_connections(base: str, stub: str, n: int, hold_s: float, pid: int) -> dict[str, Any]:
    import aiohttp

    body = chat_body(stream=True)
    hdr = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"}
    rss0 = rss_mb(pid)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=600)) as http:
        await (await http.post(stub + "/admin/hold", json={"hold": True})).read()
        results: list[int] = []
        keepalive = [0]

        async def one() -> None:
            try:
                async with http.post(base + "/v1/chat/completions", data=body, headers=hdr) as r:
                    data = await r.read()
                    keepalive[0] += data.startswith(b": keep-alive")
                    results.append(r.status if data.rstrip().endswith(b"data: [DONE]") else -r.status)
            except Exception:  # noqa: BLE001
                results.append(-1)

        t = time.perf_counter()
        tasks = [asyncio.ensure_future(one()) for _ in range(n)]
        # wait until every request reached the proxy (the engine pool holds 512 at the stub, the rest queue)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            await asyncio.sleep(0.5)
            pend = (await (await http.get(stub + "/admin/pending")).json())["pending"]
            conns = len(os.listdir(f"/proc/{pid}/fd"))
            if conns >= n:
                break
        opened_s = time.perf_counter() - t
        await asyncio.sleep(hold_s)
        rss_held = rss_mb(pid)
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        await (await http.post(stub + "/admin/hold", json={"hold": False})).read()
        await asyncio.wait(tasks, timeout=300)
    ok = sum(1 for s in results if s == 200)
    return {"n": n, "ok": ok, "errors": n - ok, "rss_before_mb": rss0, "rss_held_mb": rss_held, "proxy_fds": fds,
            "open_s": opened_s, "stub_pending_peak": pend, "got_keepalive": keepalive[0], "rss_after_mb": rss_mb(pid)}


async def main_async(args: argparse.Namespace, urls: dict[str, str], pids: dict[str, int]) -> None:
    import aiohttp

    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
        routes = {"direct-gen": (urls["stub"] + "/generate", {False: gen_body(), True: gen_body()}),
                  "direct-chat": (urls["stub"] + "/v1/chat/completions", {s: chat_body(s) for s in (False, True)}),
                  "passthrough": (urls["pass"] + "/v1/chat/completions", {s: chat_body(s) for s in (False, True)}),
                  "polar": (urls["polar"] + "/v1/chat/completions", {s: chat_body(s) for s in (False, True)})}
        for url, bodies in routes.values():  # warm-up
            await latency(http, url, bodies[False], 50)
        print(f"\n## Latency at 1 session, ≈100-token prompt ({args.n} requests x {args.reps} interleaved reps)")
        print("| target | stream | p50 ms | p99 ms | added p50 | added p99 | proxy CPU-ms/req |")
        print("|---|---|---|---|---|---|---|")
        for stream in (False, True):
            lat: dict[str, list[float]] = {k: [] for k in routes}
            cpu: dict[str, float] = {"passthrough": 0.0, "polar": 0.0}
            for _ in range(args.reps):
                for name, (url, bodies) in routes.items():
                    pid = pids.get({"passthrough": "pass", "polar": "polar"}.get(name, ""), 0)
                    c0 = cpu_s(pid) if pid else 0.0
                    lat[name] += await latency(http, url, bodies[stream], args.n)
                    if pid:
                        cpu[name] += cpu_s(pid) - c0
            base = {"passthrough": "direct-chat", "polar": "direct-gen"}
            for name in routes:
                p50, p99 = pct(lat[name], 0.5), pct(lat[name], 0.99)
                add = ""
                if name in base:
                    b = lat[base[name]]
                    add = f"+{p50 - pct(b, 0.5):.3f} (vs {base[name]}) | +{p99 - pct(b, 0.99):.3f}"
                else:
                    add = "— | —"
                cpu_ms = f"{cpu[name] * 1000 / (args.n * args.reps):.3f}" if name in cpu else "—"
                print(f"| {name} | {'SSE' if stream else 'JSON'} | {p50:.3f} | {p99:.3f} | {add} | {cpu_ms} |")

        print(f"\n## Throughput at 64 concurrent sessions ({args.seconds:.0f} s each; load generator on CPU 0)")
        print("| target | stream | req/s | errors | proxy CPU-ms/req | req/s per proxy core (1000/CPU-ms) |")
        print("|---|---|---|---|---|---|")
        ratio = {}
        for stream in (False, True):
            got = {}
            for name, key in (("passthrough", "pass"), ("polar", "polar")):
                url, bodies = routes[name]
                c0 = cpu_s(pids[key])
                rps, errs = await throughput(http, url, bodies[stream], 64, args.seconds)
                c = (cpu_s(pids[key]) - c0) * 1000 / max(1, rps * args.seconds)
                got[name] = (rps, c)
                print(f"| {name} | {'SSE' if stream else 'JSON'} | {rps:,.0f} | {errs} | {c:.3f} | {1000 / c:,.0f} |")
            ratio[stream] = (got["polar"][0] / got["passthrough"][0], got["passthrough"][1] / got["polar"][1])
        for stream, (r, rc) in ratio.items():
            print(f"polar / pass-through ({'SSE' if stream else 'JSON'}): req/s ratio {r:.2f}; "
                  f"per-core capacity ratio {rc:.2f}")

    if args.idle:
        print(f"\n## {args.idle:,} idle streaming connections to the proxy (engine stub holds every /generate)")
        res = await idle_connections(urls["polar"], urls["stub"], args.idle, args.hold, pids["polar"])
        print(msgspec.json.encode(res).decode())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=400, help="requests per target per rep at c=1")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=4.0, help="per throughput cell")
    ap.add_argument("--sizes", default="100,500,8000,32000")
    ap.add_argument("--stage-reps", type=int, default=5)
    ap.add_argument("--idle", type=int, default=10000)
    ap.add_argument("--hold", type=float, default=3.0, help="seconds the idle connections are held")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if args.quick:
        args.n, args.reps, args.seconds, args.sizes, args.stage_reps, args.idle, args.hold = (
            100, 1, 2.0, "100,8000", 3, 500, 1.0)
    raise_nofile()
    ports = {k: free_port() for k in ("stub", "pass", "polar")}
    urls = {k: f"http://127.0.0.1:{p}" for k, p in ports.items()}
    procs = {"stub": spawn("stub", str(ports["stub"]), cpu=0)}
    wait_up(urls["stub"], procs["stub"])
    procs["pass"] = spawn("passthrough", str(ports["pass"]), urls["stub"], cpu=1)
    procs["polar"] = spawn("polar", str(ports["polar"]), urls["stub"], cpu=1)
    try:
        for k in ("pass", "polar"):
            wait_up(urls[k], procs[k])
        os.sched_setaffinity(0, {0})
        print("# bench_proxy: polar proxy vs bare aiohttp pass-through, instant engine stub")
        print(f"host: {os.cpu_count()} cores; proxies pinned to CPU 1, stub + load generator to CPU 0")
        sizes = [int(s) for s in args.sizes.split(",")]
        print("\n## CPU per completion by stage (ms, in-process thread CPU, median; SSE response)")
        rows = stage_breakdown(sizes, args.stage_reps, urls["stub"])
        keys = ["json", "normalize", "render", "encode", "engine", "parse", "response", "record", "total"]
        print("| prompt tokens | " + " | ".join(keys) + " |")
        print("|---" * (len(keys) + 1) + "|")
        for r in rows:
            print(f"| {r['tokens']:,} | " + " | ".join(f"{r[k]:.3f}" for k in keys) + " |")
        print("(total = json + normalize + complete() [render + encode + engine call + parse + record build] "
              "+ response + capture)")
        asyncio.run(main_async(args, urls, {k: p.pid for k, p in procs.items()}))
        print(f"\nRSS after run: polar {rss_mb(procs['polar'].pid):.0f} MB, "
              f"pass-through {rss_mb(procs['pass'].pid):.0f} MB, "
              f"stub {rss_mb(procs['stub'].pid):.0f} MB")
    finally:
        for p in procs.values():
            p.terminate()
        for p in procs.values():
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1].startswith("_"):
        role = sys.argv[1][1:]
        {"stub": lambda: serve_stub(int(sys.argv[2])),
         "passthrough": lambda: serve_passthrough(int(sys.argv[2]), sys.argv[3]),
         "polar": lambda: serve_polar(int(sys.argv[2]), sys.argv[3])}[role]()
    else:
        sys.exit(main())
