"""A FAKE SGLang server (in-process aiohttp) that answers ``/generate`` instantly, for benchmarks and for
testing client failure handling (5xx, slow answers, dropped connections) that a real server won't produce
on demand. Its responses have SGLang's shape (the contract tests validate them); its tokens are
``(prompt[-1] + i + 1) % 1000`` with logprob ``-0.5``. ``stream: true`` is answered with SSE chunks (deltas, as
SGLang's ``--incremental-streaming-output``; ``cumulative=True``: SGLang's default), the first token after
``first_token_delay_s`` and then one every ``token_delay_s`` (paced by the clock: a late wake-up is caught up
at once, as an engine's steps would be); as in SGLang 0.5.23, the first token is sent at
once and later ones whenever the request's ``sampling_params.stream_interval`` (default 1) are unsent, and at
the end. ``/abort_request`` ends such a stream with an abort chunk (holding the tokens not yet sent).
``stop_at_end``: the last token is the request's first stop token id (finish ``stop``). ``keep_requests=False``:
``requests`` stays empty (a soak's millions of calls would otherwise grow the stub without bound).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web

from polar_hpc.engine.protocol import (
    AbortRequest,
    ErrorBody,
    ErrorResponse,
    FinishAbort,
    FinishLength,
    FinishReason,
    FinishStop,
    GenerateRequest,
    GenerateResponse,
    MetaInfo,
)

Behaviour = Callable[[GenerateRequest], Awaitable[web.StreamResponse | None]]
"""Called before the normal answer; a returned response replaces it (an error, a delay then None, ...)."""

_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder(GenerateRequest)


def stub_tokens(req: GenerateRequest, n_tokens: int | None = None, stop_at_end: bool = False,
                token_base: int | None = None) -> tuple[list[int], FinishReason]:
    """``token_base``: the tokens are ``token_base + i`` instead."""
    n = n_tokens if n_tokens is not None else (req.sampling_params.max_new_tokens or 1)
    last = (req.input_ids or [0])[-1]
    ids = [(last + i + 1) % 1000 if token_base is None else token_base + i for i in range(n)]
    stops = req.sampling_params.stop_token_ids
    if stop_at_end and stops and ids:
        ids[-1] = stops[0]
        return ids, FinishStop(matched=stops[0])
    return ids, FinishLength(length=n)


def instant_response(req: GenerateRequest, n_tokens: int | None = None, weight_version: str = "stub",
                     token_base: int | None = None) -> bytes:
    ids, finish = stub_tokens(req, n_tokens, token_base=token_base)
    n = len(ids)
    meta = MetaInfo(
        id=req.rid or "",
        finish_reason=finish,
        prompt_tokens=len(req.input_ids or []),
        completion_tokens=n,
        weight_version=weight_version,
        e2e_latency=0.0,
        output_token_logprobs=[(-0.5, t, None) for t in ids] if req.return_logprob else None,
    )
    return _ENC.encode(GenerateResponse(text="", output_ids=ids, meta_info=meta))


class StubServer:
    def __init__(self, behaviour: Behaviour | None = None, *, n_tokens: int | None = None,
                 first_token_delay_s: float = 0.0, token_delay_s: float = 0.0, cumulative: bool = False,
                 stop_at_end: bool = False, token_base: int | None = None, keep_requests: bool = True) -> None:
        self.behaviour = behaviour
        self.keep_requests = keep_requests
        self.token_base = token_base
        self.n_tokens = n_tokens
        self.first_token_delay_s = first_token_delay_s
        self.token_delay_s = token_delay_s
        self.cumulative = cumulative
        self.stop_at_end = stop_at_end
        self.requests: list[GenerateRequest] = []
        self.aborted: list[str] = []
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._streams: dict[str, asyncio.Event] = {}

    async def _stream(self, request: web.Request, req: GenerateRequest) -> web.StreamResponse:
        rid = req.rid or ""
        ids, finish = stub_tokens(req, self.n_tokens, self.stop_at_end, self.token_base)
        stop = self._streams[rid] = asyncio.Event()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        n_prompt = len(req.input_ids or [])
        interval = req.sampling_params.stream_interval or 1
        sampled = sent = 0

        def chunk(finish_reason: FinishReason | None) -> bytes:
            lo = 0 if self.cumulative else sent
            meta = MetaInfo(id=rid, finish_reason=finish_reason, prompt_tokens=n_prompt, completion_tokens=sampled,
                            weight_version="stub", output_token_logprobs=[(-0.5, t, None) for t in ids[lo:sampled]])
            return b"data: " + _ENC.encode(GenerateResponse(text="", output_ids=ids[lo:sampled], meta_info=meta)) \
                + b"\n\n"

        start = time.monotonic() + self.first_token_delay_s
        try:
            for i in range(len(ids)):
                wait = start + i * self.token_delay_s - time.monotonic()  # paced by the clock, as an engine's steps
                if wait > 0:
                    try:
                        await asyncio.wait_for(stop.wait(), wait)
                    except TimeoutError:
                        pass
                if stop.is_set():
                    break
                sampled = i + 1
                last = sampled == len(ids)
                if last or sampled == 1 or sampled - sent >= interval:
                    await resp.write(chunk(finish if last else None))
                    sent = sampled
            if stop.is_set():
                await resp.write(chunk(FinishAbort(message="Abort request", status_code=200)))
            await resp.write(b"data: [DONE]\n\n")
            await resp.write_eof()
        except (ConnectionError, RuntimeError):
            pass
        finally:
            self._streams.pop(rid, None)
        return resp

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        req = _DEC.decode(await request.read())
        if self.keep_requests:
            self.requests.append(req)
        if self.behaviour is not None:
            replaced = await self.behaviour(req)
            if replaced is not None:
                return replaced
        if req.stream:
            return await self._stream(request, req)
        n = len(stub_tokens(req, self.n_tokens)[0])
        if self.first_token_delay_s or self.token_delay_s:  # as long as the same reply streamed
            await asyncio.sleep(self.first_token_delay_s + self.token_delay_s * max(0, n - 1))
        body = instant_response(req, self.n_tokens, token_base=self.token_base)
        return web.Response(body=body, content_type="application/json")

    async def _abort(self, request: web.Request) -> web.Response:
        body = msgspec.json.decode(await request.read(), type=AbortRequest)
        self.aborted.append(body.rid)
        if body.rid in self._streams:
            self._streams[body.rid].set()
        return web.Response(status=200)

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response(status=200)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        app = web.Application()
        app.router.add_post("/generate", self._generate)
        app.router.add_post("/abort_request", self._abort)
        app.router.add_get("/health", self._health)
        app.router.add_get("/health_generate", self._health)
        app.router.add_post("/pause_generation", self._health)
        app.router.add_post("/continue_generation", self._health)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.2)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        self.url = f"http://{host}:{self._runner.addresses[0][1]}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


def error_response(status: int, message: str) -> web.Response:
    return web.Response(
        body=_ENC.encode(ErrorResponse(error=ErrorBody(message=message, code=status))),
        status=status,
        content_type="application/json",
    )


def sleep_then(seconds: float) -> Behaviour:
    async def behaviour(_: GenerateRequest) -> None:
        await asyncio.sleep(seconds)

    return behaviour
