"""Admin calls of the engine client: health, model info, abort, pause/continue, weight updates.

Weight updates follow SGLang's RL sequence, applied to every server: ``pause_generation`` →
``update_weights_from_disk`` → ``continue_generation``. A call that fails on some servers raises
:class:`EngineError` naming each failed server and what it answered.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import msgspec

from polar_hpc.engine.errors import EngineError, EngineUnavailable
from polar_hpc.engine.protocol import (
    AbortRequest,
    ModelInfo,
    PauseRequest,
    UpdateWeightsFromDisk,
    UpdateWeightsResult,
)
from polar_hpc.engine.routing import ServerPool
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.log import get_logger

log = get_logger("engine")


class EngineAdmin:
    pool: ServerPool
    settings: EngineSettings
    _background: set[asyncio.Task[Any]]
    """Aborts sent in the background (awaited a while by ``close``)."""
    api_key: str | None = None
    """Sent as ``Authorization: Bearer <key>`` on every call (SGLang's ``--api-key``)."""

    def request_headers(self, json_body: bool) -> dict[str, str]:
        headers = {"Content-Type": "application/json"} if json_body else {}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

    def http(self) -> aiohttp.ClientSession:
        raise NotImplementedError

    async def _call(self, method: str, url: str, body: msgspec.Struct | None, timeout_s: float) -> tuple[int, bytes]:
        data = msgspec.json.encode(body) if body is not None else None
        headers = self.request_headers(data is not None)
        timeout = aiohttp.ClientTimeout(total=timeout_s)
        async with self.http().request(method, url, data=data, headers=headers, timeout=timeout) as resp:
            return resp.status, await resp.read()

    async def _all(
        self, method: str, path: str, body: msgspec.Struct | None, timeout_s: float
    ) -> list[tuple[str, bytes]]:
        """``(url, body)`` of every server; raises naming each server that failed."""
        urls = [s.url for s in self.pool.servers]
        outcomes = await asyncio.gather(
            *(self._call(method, f"{u}{path}", body, timeout_s) for u in urls), return_exceptions=True
        )
        failed, bodies = [], []
        for url, out in zip(urls, outcomes, strict=True):
            if isinstance(out, BaseException):
                failed.append(f"{url}: {type(out).__name__}: {out}")
            elif out[0] != 200:
                failed.append(f"{url}: HTTP {out[0]}: {out[1][:300].decode(errors='replace')}")
            else:
                bodies.append((url, out[1]))
        if failed:
            raise EngineError(f"{method} {path} failed on {len(failed)}/{len(urls)} server(s): " + "; ".join(failed))
        return bodies

    async def abort(self, url: str, rid: str, timeout_s: float = 5.0) -> None:
        """Abort request ``rid`` on the server at ``url``; failures are logged, not raised."""
        try:
            status, raw = await self._call("POST", f"{url}/abort_request", AbortRequest(rid=rid), timeout_s)
            if status != 200:
                log.warning("abort of rid %s at %s answered HTTP %d: %s", rid, url, status, raw[:200])
        except (aiohttp.ClientError, TimeoutError) as err:
            log.warning("abort of rid %s at %s failed: %s", rid, url, err)

    def abort_in_background(self, url: str, rid: str) -> None:
        """:meth:`abort` without waiting for it (a cancelled or timed-out call, a stream closed early)."""
        try:
            task = asyncio.get_running_loop().create_task(self.abort(url, rid))
        except RuntimeError:
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def health(self, timeout_s: float = 30.0) -> dict[str, bool]:
        """``GET /health_generate`` on every server (it runs a one-token generation); url → healthy."""
        servers = list(self.pool.servers)
        outcomes = await asyncio.gather(
            *(self._call("GET", f"{s.url}/health_generate", None, timeout_s) for s in servers), return_exceptions=True
        )
        result: dict[str, bool] = {}
        for server, out in zip(servers, outcomes, strict=True):
            ok = not isinstance(out, BaseException) and out[0] == 200
            result[server.url] = ok
            if ok:
                self.pool.mark_ok(server)
            else:
                self.pool.mark_failed(server, f"health_generate: {out!r}"[:300])
        return result

    async def model_info(self, timeout_s: float = 30.0) -> ModelInfo:
        """``GET /model_info`` of the first server that answers."""
        errors = []
        for s in self.pool.servers:
            try:
                status, raw = await self._call("GET", f"{s.url}/model_info", None, timeout_s)
            except (aiohttp.ClientError, TimeoutError) as err:
                errors.append(f"{s.url}: {err}")
                continue
            if status == 200:
                return msgspec.json.decode(raw, type=ModelInfo)
            errors.append(f"{s.url}: HTTP {status}")
        raise EngineUnavailable("no server answered /model_info: " + "; ".join(errors))

    async def pause_generation(self, mode: str = "abort") -> None:
        """Pause every server. ``abort`` (SGLang's default) ends in-flight requests with finish_reason abort;
        ``in_place``/``retract`` keep them until ``continue_generation``."""
        if mode not in ("abort", "retract", "in_place"):
            raise ValueError(f"pause mode must be abort, retract or in_place, got {mode!r}")
        await self._all("POST", "/pause_generation", PauseRequest(mode=mode), self.settings.admin_timeout_s)  # type: ignore[arg-type]  # mode checked above

    async def continue_generation(self) -> None:
        await self._all("POST", "/continue_generation", _Empty(), self.settings.admin_timeout_s)

    async def update_weights_from_disk(self, path: str, weight_version: str | None = None) -> list[UpdateWeightsResult]:
        body = UpdateWeightsFromDisk(model_path=str(path), weight_version=weight_version)
        raws = await self._all("POST", "/update_weights_from_disk", body, self.settings.admin_timeout_s)
        results = [(url, msgspec.json.decode(r, type=UpdateWeightsResult)) for url, r in raws]
        bad = [f"{url}: {r.message}" for url, r in results if not r.success]
        if bad:
            raise EngineError(f"update_weights_from_disk({path}) failed: " + "; ".join(bad))
        return [r for _, r in results]


class _Empty(msgspec.Struct):
    pass
