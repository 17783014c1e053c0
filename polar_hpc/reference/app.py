"""The reference server's HTTP side: SGLang's native routes on aiohttp, model work in the scheduler thread."""

from __future__ import annotations

import asyncio
import hmac
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
from aiohttp import web

from polar_hpc.engine.protocol import (
    AbortRequest,
    ErrorBody,
    ErrorResponse,
    FinishStop,
    GenerateResponse,
    LogprobEntry,
    MetaInfo,
    ModelInfo,
    PauseRequest,
    UpdateWeightsFromDisk,
    UpdateWeightsResult,
)
from polar_hpc.log import get_logger
from polar_hpc.reference.model import ModelRunner
from polar_hpc.reference.options import DEFAULTS, ReferenceOptions
from polar_hpc.reference.requests import (
    BadRequest,
    ServerGenerateRequest,
    check_context,
    forcing_start,
    input_entries,
    prompt_ids,
    single,
    to_spec,
)
from polar_hpc.reference.scheduler import Generation, Scheduler
from polar_hpc.wire.versions import engine_name, parse_version

log = get_logger("reference")

_ENC = msgspec.json.Encoder()
_REQ = msgspec.json.Decoder(ServerGenerateRequest)
HEALTH_TIMEOUT_S = 30.0


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=_ENC.encode(obj), status=status, content_type="application/json")


def _error(message: str, status: int = 400) -> web.Response:
    kind = "BadRequestError" if status == 400 else "InternalServerError"
    return _json(ErrorResponse(error=ErrorBody(message=message, type=kind, code=status)), status)


def api_key_middleware(api_key: str) -> Any:
    """SGLang's ``--api-key`` check: every route but ``/health*`` needs ``Authorization: Bearer <key>``, else
    401 ``{"error": "Unauthorized"}``."""
    expected = f"Bearer {api_key}".encode()

    @web.middleware
    async def check(request: web.Request,
                    handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if request.method == "OPTIONS" or request.path.startswith("/health"):
            return await handler(request)
        given = request.headers.get("Authorization", "").encode()
        if not hmac.compare_digest(given, expected):
            return _json({"error": "Unauthorized"}, 401)
        return await handler(request)

    return check


class ReferenceServer:
    """``options``: the server's (``served_model_name`` None: the model dir's name)."""

    def __init__(self, runner: ModelRunner, options: ReferenceOptions = DEFAULTS, *,
                 api_key: str | None = None) -> None:
        self.api_key = api_key
        self.runner = runner
        self.served_model_name = options.served_model_name or Path(runner.model_dir).name
        self.scheduler = Scheduler(runner, seed=options.seed, decode_batch=options.decode_batch,
                                   first_token_delay_s=options.first_token_delay_s, token_delay_s=options.token_delay_s)
        self._inflight: set[str] = set()

    def app(self) -> web.Application:
        middlewares = [api_key_middleware(self.api_key)] if self.api_key else []
        app = web.Application(client_max_size=256 * 1024 * 1024, middlewares=middlewares)
        app.router.add_route("POST", "/generate", self.generate)
        app.router.add_route("PUT", "/generate", self.generate)
        app.router.add_get("/health", self.health)
        app.router.add_get("/health_generate", self.health_generate)
        app.router.add_get("/model_info", self.model_info)
        app.router.add_get("/get_model_info", self.model_info)
        app.router.add_get("/v1/models", self.models)
        app.router.add_get("/get_weight_version", self.weight_version)
        app.router.add_post("/abort_request", self.abort_request)
        app.router.add_post("/pause_generation", self.pause_generation)
        app.router.add_post("/continue_generation", self.continue_generation)
        app.router.add_post("/update_weights_from_disk", self.update_weights_from_disk)
        app.on_startup.append(self._on_startup)
        app.on_cleanup.append(self._on_cleanup)
        return app

    async def _on_startup(self, _: web.Application) -> None:
        self.scheduler.start()

    async def _on_cleanup(self, _: web.Application) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self.scheduler.stop)

    def response(self, gen: Generation, *, return_logprob: bool, started: float, since: int = 0,
                 text_since: int = 0) -> GenerateResponse:
        """The whole result, or (``since``: tokens already streamed, ``text_since``: their characters) a streamed
        delta: the tokens from ``since`` on and the text from ``text_since`` on."""
        spec = gen.spec
        text_ids = gen.output_ids
        fin = gen.finish
        if isinstance(fin, FinishStop) and not spec.no_stop_trim and isinstance(fin.matched, int):
            text_ids = text_ids[:-1]
        text = self.runner.decode(text_ids, spec.skip_special_tokens)
        if isinstance(fin, FinishStop) and not spec.no_stop_trim and isinstance(fin.matched, str):
            cut = text.find(fin.matched)
            text = text[:cut] if cut >= 0 else text
        entries: list[LogprobEntry] | None = (
            [(lp, tok, None) for lp, tok in zip(gen.logprobs[since:], gen.output_ids[since:], strict=True)]
            if return_logprob else None
        )
        meta = MetaInfo(
            id=gen.rid,
            finish_reason=fin,
            prompt_tokens=len(gen.input_ids),
            completion_tokens=len(gen.output_ids),
            cached_tokens=gen.cached_tokens,
            weight_version=gen.weight_version if fin is not None else self.runner.weight_version,
            e2e_latency=time.monotonic() - started,
            output_token_logprobs=entries,
            output_top_logprobs=[[(lp, tok, None) for lp, tok in row] for row in gen.top[since:]]
            if return_logprob and gen.top_logprobs_num else None,
            input_token_logprobs=input_entries(gen) if return_logprob and gen.score_from is not None else None,
        )
        return GenerateResponse(text=text[text_since:], output_ids=list(gen.output_ids[since:]), meta_info=meta)

    async def generate(self, request: web.Request) -> web.StreamResponse:
        started = time.monotonic()
        raw = await request.read()
        try:
            req = _REQ.decode(raw)
            gen, return_logprob = self._make_generation(req)
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            return _error(str(err))
        except BadRequest as err:
            return _error(str(err))
        loop = asyncio.get_running_loop()
        if req.stream:
            sampling = single(req.sampling_params, "sampling_params")
            interval = (sampling.stream_interval if sampling is not None else None) or 1
            return await self._stream(request, gen, return_logprob, started, loop, interval)
        done: asyncio.Future[Generation] = loop.create_future()

        gen.on_done = _resolver(loop, done)
        self._inflight.add(gen.rid)
        self.scheduler.submit(gen)
        try:
            await done
        except asyncio.CancelledError:
            self.scheduler.abort(gen.rid)
            raise
        finally:
            self._inflight.discard(gen.rid)
        return _json(self.response(gen, return_logprob=return_logprob, started=started))

    def _make_generation(self, req: ServerGenerateRequest) -> tuple[Generation, bool]:
        if req.input_embeds is not None:
            raise BadRequest("input_embeds is not supported by the reference server; send input_ids")
        if (req.input_ids is None) == (req.text is None):
            raise BadRequest("give exactly one of text or input_ids")
        if req.input_ids is not None:
            ids = prompt_ids(req.input_ids)
        else:
            ids = self.runner.encode(single(req.text, "text"))
        too_big = [i for i in ids if i >= self.runner.vocab_size]
        if too_big:
            raise BadRequest(f"input_ids holds token id {too_big[0]}, "
                             f"outside the model's vocabulary of {self.runner.vocab_size}")
        start = single(req.logprob_start_len, "logprob_start_len")
        score_from = forcing_start(start, req.sampling_params, len(ids))
        if req.token_ids_logprob is not None:
            raise BadRequest("token_ids_logprob is not supported by the reference server")
        top = single(req.top_logprobs_num, "top_logprobs_num") or 0
        if top < 0:
            raise BadRequest(f"top_logprobs_num must be >= 0, got {top}")
        sampling = single(req.sampling_params, "sampling_params")
        room = self.runner.context_length - len(ids)
        spec = to_spec(sampling, max_new_default=128)
        check_context(len(ids), spec.max_new_tokens, self.runner.context_length)
        spec.max_new_tokens = min(spec.max_new_tokens, room)
        rid = single(req.rid, "rid") or uuid.uuid4().hex
        if rid in self._inflight:
            raise BadRequest(f"Duplicate request ID detected: {rid}")
        gen = Generation(rid=rid, input_ids=ids, spec=spec, on_done=lambda g: None, score_from=score_from,
                         top_logprobs_num=top)
        return gen, bool(single(req.return_logprob, "return_logprob"))

    async def _stream(
        self, request: web.Request, gen: Generation, return_logprob: bool, started: float,
        loop: asyncio.AbstractEventLoop, interval: int,
    ) -> web.StreamResponse:
        """Delta chunks, as SGLang launched by polar-hpc sends them (``--incremental-streaming-output``): the first
        token at once, then whenever ``interval`` tokens are unsent (SGLang's ``stream_interval``), and the last.
        A chunk's text leaves out a character still unfinished at its end."""
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        sent = text_sent = 0

        def push(g: Generation, final: bool) -> None:
            nonlocal sent, text_sent
            if not final and sent and len(g.output_ids) - sent < interval:
                return
            chunk = self.response(g, return_logprob=return_logprob, started=started, since=sent, text_since=text_sent)
            if not final and chunk.text.endswith("\ufffd"):
                chunk.text = chunk.text.rstrip("\ufffd")
            sent, text_sent = len(g.output_ids), text_sent + len(chunk.text)
            frame = b"data: " + _ENC.encode(chunk) + b"\n\n"
            loop.call_soon_threadsafe(queue.put_nowait, frame)
            if final:
                loop.call_soon_threadsafe(queue.put_nowait, None)

        gen.on_token = lambda g: push(g, False)
        gen.on_done = lambda g: push(g, True)
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await resp.prepare(request)
        self._inflight.add(gen.rid)
        self.scheduler.submit(gen)
        try:
            while (frame := await queue.get()) is not None:
                await resp.write(frame)
            await resp.write(b"data: [DONE]\n\n")
        except ConnectionResetError:
            # The client went away (a cancelled call, or one that stopped reading at the last chunk): not an error.
            self.scheduler.abort(gen.rid)
            log.debug("%s: client closed the stream", gen.rid)
            return resp
        except asyncio.CancelledError:
            self.scheduler.abort(gen.rid)
            raise
        finally:
            self._inflight.discard(gen.rid)
        await resp.write_eof()
        return resp

    async def health(self, _: web.Request) -> web.Response:
        return web.Response(status=200)

    async def health_generate(self, _: web.Request) -> web.Response:
        loop = asyncio.get_running_loop()
        done: asyncio.Future[Generation] = loop.create_future()
        spec = to_spec(None, max_new_default=1)
        spec.temperature = 0.0
        gen = Generation(
            rid=f"HEALTH_CHECK_{uuid.uuid4().hex}",
            input_ids=[0],
            spec=spec,
            internal=True,
            on_done=_resolver(loop, done),
        )
        self.scheduler.submit(gen)
        try:
            await asyncio.wait_for(done, HEALTH_TIMEOUT_S)
        except TimeoutError:
            self.scheduler.abort(gen.rid)
            return web.Response(status=503, text=f"health generation did not finish within {HEALTH_TIMEOUT_S}s")
        if len(gen.output_ids) != 1:
            return web.Response(status=503, text=f"health generation failed: {gen.finish}")
        return web.Response(status=200)

    def _model_info(self) -> ModelInfo:
        return ModelInfo(
            model_path=str(self.runner.model_dir),
            tokenizer_path=str(self.runner.model_dir),
            is_generation=True,
            weight_version=self.runner.weight_version,
            served_model_name=self.served_model_name,
            context_length=self.runner.context_length,
        )

    async def model_info(self, _: web.Request) -> web.Response:
        return _json(self._model_info())

    async def models(self, _: web.Request) -> web.Response:
        card = {
            "id": self.served_model_name,
            "object": "model",
            "created": 0,
            "owned_by": "sglang",
            "root": str(self.runner.model_dir),
            "max_model_len": self.runner.context_length,
        }
        return _json({"object": "list", "data": [card]})

    async def weight_version(self, _: web.Request) -> web.Response:
        return _json({"weight_version": self.runner.weight_version})

    async def _body(self, request: web.Request, tp: type[Any]) -> Any:
        raw = await request.read()
        return msgspec.json.decode(raw or b"{}", type=tp)

    async def abort_request(self, request: web.Request) -> web.Response:
        try:
            body = await self._body(request, AbortRequest)
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            return _error(str(err))
        if body.abort_all:
            self.scheduler.abort_all()
        elif body.rid:
            self.scheduler.abort(body.rid)
        return web.Response(status=200)

    async def pause_generation(self, request: web.Request) -> web.Response:
        try:
            body = await self._body(request, PauseRequest)
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            return _error(str(err))
        self.scheduler.pause(body.mode)
        return _json({"success": True, "message": f"Generation paused ({body.mode})."})

    async def continue_generation(self, _: web.Request) -> web.Response:
        self.scheduler.resume()
        return _json({"success": True, "message": "Generation continued."})

    async def update_weights_from_disk(self, request: web.Request) -> web.Response:
        try:
            body = await self._body(request, UpdateWeightsFromDisk)
        except (msgspec.ValidationError, msgspec.DecodeError) as err:
            return _error(str(err))
        if body.abort_all_requests:
            self.scheduler.abort_all()

        def load() -> str:
            old = self.runner.weight_version
            self.runner.load_weights(Path(body.model_path))
            self.runner.weight_version = body.weight_version or _bump(old)
            return self.runner.weight_version

        try:
            version = await asyncio.wrap_future(self.scheduler.run_admin(load))
        except Exception as err:
            log.warning("update_weights_from_disk(%s) failed: %s", body.model_path, err)
            return _json(UpdateWeightsResult(success=False, message=f"Failed to update weights: {err}"), 400)
        return _json(UpdateWeightsResult(success=True,
                                         message=f"Succeeded to update model weights (version {version})."))


def _resolver(loop: asyncio.AbstractEventLoop, fut: asyncio.Future[Generation]) -> Callable[[Generation], None]:
    """A callback for the scheduler thread that completes ``fut`` on the event loop."""

    def settle(gen: Generation) -> None:
        if not fut.done():
            fut.set_result(gen)

    def on_done(gen: Generation) -> None:
        loop.call_soon_threadsafe(settle, gen)

    return on_done


def _bump(version: str) -> str:
    """The next version name: ``default`` -> ``1``, ``N`` -> ``N+1``; a name that is not a step number -> ``1``."""
    return engine_name(max(parse_version(version), 0) + 1)
