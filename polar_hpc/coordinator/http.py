"""The paper's rollout service API as an HTTP facade of the coordinator (``coordinator.http_facade = true``).

    POST /rollout/task/submit    a Polar TaskRequest (Appendix A.3) -> the task's sessions are queued
    GET  /rollout/task/{task_id} status, per-session state, results still held by the coordinator
    GET  /rollout/status         run status

Every request carries the run token (``secrets/run_token``) as ``Authorization: Bearer TOKEN``. When a task
names a ``callback_url``, its TaskResult is POSTed there once all its sessions are final, with retries.
"""

from __future__ import annotations

import asyncio
import hmac
from pathlib import Path
from typing import Any, Protocol

import aiohttp
import msgspec
from aiohttp import web

from polar_hpc.config.run import AgentSpec, BuilderSpec, EvaluatorSpec, RuntimeSpec
from polar_hpc.coordinator.state import DispatchState
from polar_hpc.log import get_logger
from polar_hpc.tasks.validate import task_problems
from polar_hpc.wire.codec import to_json
from polar_hpc.wire.control import RunStatus, SessionInfo, SubmitReply, TaskStatus
from polar_hpc.wire.session import Task
from polar_hpc.wire.shardmeta import session_json

log = get_logger("coordinator.http")

CALLBACK_ATTEMPTS = 4
CALLBACK_TIMEOUT_S = 10.0


class TaskRequest(msgspec.Struct, kw_only=True):
    task_id: str
    instruction: str
    num_samples: int = 1
    timeout_seconds: float | None = None
    runtime: dict[str, Any] | None = None
    agent: dict[str, Any] | None = None
    builder: dict[str, Any] | None = None
    evaluator: dict[str, Any] | None = None
    callback_url: str | None = None
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


class TaskResult(msgspec.Struct, kw_only=True):
    task_id: str
    status: str
    num_samples: int
    sessions: list[SessionInfo]
    results: list[dict[str, Any]]
    """``wire.shardmeta.session_json`` of each result."""
    result_paths: list[str]
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)


def _prepare(items: list[Any]) -> list[str]:
    out = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict) and isinstance(item.get("command"), str):
            out.append(item["command"])
        else:
            raise ValueError(f"runtime.prepare[{i}]: expected a command string or {{type, command}}, got {item!r}")
    return out


def task_from_request(req: TaskRequest) -> Task:
    """Map a Polar TaskRequest onto polar-hpc's Task (runtime, agent, builder, evaluator specs)."""
    rt = None
    if req.runtime is not None:
        r = dict(req.runtime)
        network = r.pop("network", "shared")
        rt = msgspec.convert({**r, "network": "shared" if network == "host" else network,
                              "prepare": _prepare(r.get("prepare", []))}, RuntimeSpec)
    agent = None
    if req.agent is not None:
        a = dict(req.agent)
        keys = set(AgentSpec.__struct_fields__)
        agent = msgspec.convert({k: v for k, v in a.items() if k in keys}, AgentSpec)
        agent.settings.update({k: v for k, v in a.items() if k not in keys})
    builder = None
    if req.builder is not None:
        b = dict(req.builder)
        name = b.pop("strategy", None) or b.pop("name", "prefix_merging")
        inc = bool(b.pop("include_side_requests", False))
        builder = BuilderSpec(name=name, include_side_requests=inc, options=b)
    evaluator = None
    if req.evaluator is not None:
        e = dict(req.evaluator)
        name = e.pop("strategy", None) or e.pop("name", "session_completed")
        options = dict(e.pop("config", {}) or {})
        evaluator = EvaluatorSpec(name=name, fresh_runtime=bool(e.pop("refresh_runtime", False)),
                                  command=options.pop("command", None), options={**options, **e})
    metadata = dict(req.metadata)
    if req.callback_url:
        metadata["callback_url"] = req.callback_url
    return Task(task_id=req.task_id, instruction=req.instruction, num_samples=req.num_samples,
                timeout_s=req.timeout_seconds, runtime=rt, agent=agent, builder=builder, evaluator=evaluator,
                metadata=metadata)


def _json(obj: Any, status: int = 200) -> web.Response:
    return web.Response(body=to_json(obj), status=status, content_type="application/json")


def _error(status: int, message: str) -> web.Response:
    return _json({"error": message}, status=status)


class CoordinatorApi(Protocol):
    """What the facade uses of :class:`polar_hpc.coordinator.server.Coordinator` (which starts it)."""

    on_task_done: list[Any]
    state: DispatchState
    shards_dir: Path

    def submit(self, tasks: list[Task], req: int = 0) -> SubmitReply: ...

    def task_status(self, task_id: str, req: int = 0, with_results: bool = False) -> TaskStatus: ...

    def run_status(self, req: int = 0) -> RunStatus: ...


class HttpFacade:
    def __init__(self, coordinator: CoordinatorApi, token: str) -> None:
        self.coord = coordinator
        self.token = token
        self.runner: web.AppRunner | None = None
        self.session: aiohttp.ClientSession | None = None
        self.callbacks: set[asyncio.Task[None]] = set()
        coordinator.on_task_done.append(self._task_done)

    async def start(self, host: str, port: int) -> str:
        app = web.Application(middlewares=[self._auth], client_max_size=64 * 1024 * 1024)
        app.router.add_post("/rollout/task/submit", self.submit)
        app.router.add_get("/rollout/task/{task_id}", self.task)
        app.router.add_get("/rollout/status", self.status)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port)
        await site.start()
        bound = self.runner.addresses[0][1]
        url = f"http://{host}:{bound}"
        log.info("HTTP facade at %s", url)
        return url

    async def stop(self) -> None:
        for t in list(self.callbacks):
            t.cancel()
        await asyncio.gather(*self.callbacks, return_exceptions=True)
        if self.session is not None:
            await self.session.close()
        if self.runner is not None:
            await self.runner.cleanup()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            return _error(401, "missing or wrong run token: send 'Authorization: Bearer <run_dir/secrets/run_token>'")
        resp: web.StreamResponse = await handler(request)
        return resp

    async def submit(self, request: web.Request) -> web.Response:
        try:
            req = msgspec.json.decode(await request.read(), type=TaskRequest)
            task = task_from_request(req)
        except (msgspec.DecodeError, msgspec.ValidationError, ValueError) as err:
            return _error(400, f"not a valid TaskRequest: {err}")
        problems = task_problems(task)
        if problems:
            return _error(400, "; ".join(problems))
        reply = self.coord.submit([task])
        if task.task_id in reply.rejected:
            return _error(409, reply.rejected[task.task_id])
        return _json({"task_id": task.task_id, "accepted": True, "num_sessions": task.num_samples})

    async def task(self, request: web.Request) -> web.Response:
        status = self.coord.task_status(request.match_info["task_id"], with_results=True)
        if not status.found:
            return _error(404, f"no task {status.task_id!r} in this run")
        body = msgspec.json.decode(to_json(status))
        body["results"] = [session_json(r) for r in status.results]
        return _json(body)

    async def status(self, request: web.Request) -> web.Response:
        return _json(self.coord.run_status())

    def _task_done(self, task_id: str) -> None:
        entry = self.coord.state.tasks[task_id]
        if entry.restored_complete:  # complete in the shards before this start: its callback already went out
            return
        task = entry.task
        url = task.metadata.get("callback_url")
        if not url:
            return
        st = self.coord.task_status(task_id, with_results=True)
        result = TaskResult(task_id=task_id, status=st.state, num_samples=st.num_samples, sessions=st.sessions,
                            results=[session_json(r) for r in st.results], result_paths=[str(self.coord.shards_dir)],
                            metadata=task.metadata)
        t = asyncio.get_running_loop().create_task(self._post(str(url), to_json(result), task_id))
        self.callbacks.add(t)
        t.add_done_callback(self.callbacks.discard)

    async def _post(self, url: str, body: bytes, task_id: str) -> None:
        if self.session is None:
            self.session = aiohttp.ClientSession(trust_env=False)
        delay = 1.0
        for attempt in range(1, CALLBACK_ATTEMPTS + 1):
            try:
                async with self.session.post(url, data=body, headers={"Content-Type": "application/json"},
                                             timeout=aiohttp.ClientTimeout(total=CALLBACK_TIMEOUT_S)) as resp:
                    if resp.status < 300:
                        log.info("task %s: result delivered to %s", task_id, url)
                        return
                    why = f"HTTP {resp.status}"
            except (aiohttp.ClientError, TimeoutError) as err:
                why = f"{type(err).__name__}: {err}"
            log.warning("task %s: callback to %s failed (%s), attempt %d/%d", task_id, url, why, attempt,
                        CALLBACK_ATTEMPTS)
            if attempt < CALLBACK_ATTEMPTS:
                await asyncio.sleep(delay)
                delay *= 2
        log.error("task %s: giving up on callback %s; results stay in the shards", task_id, url)
