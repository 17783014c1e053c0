"""The paper's service API: submit its sample TaskRequest (runtime adapted to `local`), get the callback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from polar_hpc.coordinator.server import Coordinator
from polar_hpc.gateway.control import GatewayControl
from polar_hpc.harness import ADAPTERS
from polar_hpc.sim.rank import SimulatedRank
from polar_hpc.wire.endpoints import read_endpoint
from polar_hpc.wire.security import load_keys
from tests.fixtures.waits import async_wait_for
from tests.integration.coordinator.helpers import make_config

pytestmark = pytest.mark.timeout(60)

# Appendix A.3 of the paper, with the Docker runtime swapped for polar-hpc's `local` backend
PAPER_PAYLOAD = {
    "task_id": "polar-swegym-7-0",
    "instruction": "Fix the issue in /polar/session/workspace.",
    "num_samples": 3,
    "timeout_seconds": 1200,
    "runtime": {
        "backend": "local",
        "image": None,
        "network": "host",
        "workdir": "/polar/session/workspace",
        "prepare": [{"type": "exec", "command": "echo prepare repository, harness, and dependencies"}],
    },
    "agent": {"harness": "codex", "model_name": "policy"},
    "builder": {"strategy": "prefix_merging"},
    "evaluator": {
        "strategy": "swebench_harness",
        "refresh_runtime": True,
        "config": {"repo_dir": "/testbed",
                   "patch_command": "cd /polar/session/workspace && git add -A && git diff --cached --binary",
                   "instance": "demo__repo-1"},
    },
    "callback_url": "",
    "metadata": {"group_id": "g7", "policy_version": "3", "rollout_step": "7"},
}


async def test_paper_payload_submit_poll_and_callback(tmp_path: Path) -> None:
    received: list[dict[str, object]] = []
    calls = 0

    async def callback(request: web.Request) -> web.Response:
        nonlocal calls
        calls += 1
        if calls == 1:
            return web.Response(status=503)  # first delivery fails: the facade retries
        received.append(json.loads(await request.read()))
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/callback/task_result", callback)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    run_dir = tmp_path / "run"
    coord = Coordinator(make_config(tmp_path, http_facade=True), run_dir, host="127.0.0.1")
    coord_task = asyncio.create_task(coord.run())
    control = None
    try:
        await async_wait_for(lambda: read_endpoint(run_dir, "coordinator") is not None, 10, "endpoint")
        ep = read_endpoint(run_dir, "coordinator")
        assert ep is not None and ep.http_url
        sim = SimulatedRank(run_dir, 0, capacity=2, duration_s=0.01, commit_every=1)
        control = GatewayControl(sim, run_dir, rank_id=0, heartbeat_interval_s=0.2, heartbeat_timeout_s=2.0)
        rank_task = asyncio.create_task(control.run())
        token = load_keys(run_dir).token
        auth = {"Authorization": f"Bearer {token}"}
        payload = {**PAPER_PAYLOAD, "callback_url": f"http://127.0.0.1:{port}/callback/task_result"}
        async with aiohttp.ClientSession(trust_env=False) as http:
            async with http.get(f"{ep.http_url}/rollout/status") as r:
                assert r.status == 401
            async with http.post(f"{ep.http_url}/rollout/task/submit", json={"task_id": "x"}, headers=auth) as r:
                assert r.status == 400 and "instruction" in (await r.json())["error"]
            bad = {**PAPER_PAYLOAD, "task_id": "bad-1", "agent": {"harness": "kodex"}}
            async with http.post(f"{ep.http_url}/rollout/task/submit", json=bad, headers=auth) as r:
                assert r.status == 400
                assert (await r.json())["error"] == (
                    f"task 'bad-1': agent.harness = 'kodex': unknown harness (known: {', '.join(ADAPTERS)})")
            bad = {**PAPER_PAYLOAD, "task_id": "bad-2", "num_samples": 0}
            async with http.post(f"{ep.http_url}/rollout/task/submit", json=bad, headers=auth) as r:
                assert r.status == 400
                assert (await r.json())["error"] == "task 'bad-2': num_samples = 0: expected an integer >= 1"
            assert "bad-1" not in coord.state.tasks and "bad-2" not in coord.state.tasks
            async with http.post(f"{ep.http_url}/rollout/task/submit", json=payload, headers=auth) as r:
                assert r.status == 200, await r.text()
                assert (await r.json())["num_sessions"] == 3
            task = coord.state.tasks["polar-swegym-7-0"].task
            assert task.runtime is not None and task.runtime.backend == "local"
            assert task.agent is not None and task.agent.settings["model_name"] == "policy"
            assert task.evaluator is not None and task.evaluator.fresh_runtime
            await async_wait_for(lambda: bool(received), 20, "callback delivery")
            async with http.get(f"{ep.http_url}/rollout/task/polar-swegym-7-0", headers=auth) as r:
                body = await r.json()
                assert body["state"] == "completed" and len(body["results"]) == 3
            async with http.get(f"{ep.http_url}/rollout/status", headers=auth) as r:
                assert (await r.json())["sessions"]["committed"] == 3
        (result,) = received
        assert result["task_id"] == "polar-swegym-7-0" and result["status"] == "completed"
        assert len(result["results"]) == 3  # type: ignore[arg-type]
        assert calls == 2
        control.request_drain()
        await asyncio.wait_for(rank_task, 10)
    finally:
        coord.stop()
        await asyncio.wait_for(coord_task, 10)
        await runner.cleanup()
