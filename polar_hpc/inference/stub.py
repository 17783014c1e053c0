"""A FAKE SGLang server (in-process aiohttp) that answers ``/generate`` instantly, for benchmarks and for
testing client failure handling (5xx, slow answers, dropped connections) that a real server won't produce
on demand. Its responses have SGLang's shape (the contract tests validate them); its tokens are
``(prompt[-1] + i + 1) % 1000`` with logprob ``-0.5``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web

from polar_hpc.inference.protocol import (
    AbortRequest,
    ErrorBody,
    ErrorResponse,
    FinishLength,
    GenerateRequest,
    GenerateResponse,
    MetaInfo,
)

Behaviour = Callable[[GenerateRequest], Awaitable[web.StreamResponse | None]]
"""Called before the normal answer; a returned response replaces it (an error, a delay then None, ...)."""

_ENC = msgspec.json.Encoder()
_DEC = msgspec.json.Decoder(GenerateRequest)


def instant_response(req: GenerateRequest, n_tokens: int | None = None, weight_version: str = "stub") -> bytes:
    n = n_tokens if n_tokens is not None else (req.sampling_params.max_new_tokens or 1)
    last = (req.input_ids or [0])[-1]
    ids = [(last + i + 1) % 1000 for i in range(n)]
    meta = MetaInfo(
        id=req.rid or "",
        finish_reason=FinishLength(length=n),
        prompt_tokens=len(req.input_ids or []),
        completion_tokens=n,
        weight_version=weight_version,
        e2e_latency=0.0,
        output_token_logprobs=[(-0.5, t, None) for t in ids] if req.return_logprob else None,
    )
    return _ENC.encode(GenerateResponse(text="", output_ids=ids, meta_info=meta))


class StubServer:
    def __init__(self, behaviour: Behaviour | None = None, *, n_tokens: int | None = None) -> None:
        self.behaviour = behaviour
        self.n_tokens = n_tokens
        self.requests: list[GenerateRequest] = []
        self.aborted: list[str] = []
        self.url = ""
        self._runner: web.AppRunner | None = None

    async def _generate(self, request: web.Request) -> web.StreamResponse:
        req = _DEC.decode(await request.read())
        self.requests.append(req)
        if self.behaviour is not None:
            replaced = await self.behaviour(req)
            if replaced is not None:
                return replaced
        return web.Response(body=instant_response(req, self.n_tokens), content_type="application/json")

    async def _abort(self, request: web.Request) -> web.Response:
        body = msgspec.json.decode(await request.read(), type=AbortRequest)
        self.aborted.append(body.rid)
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
        sock = site._server.sockets[0]  # type: ignore[union-attr]
        self.url = f"http://{host}:{sock.getsockname()[1]}"
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
