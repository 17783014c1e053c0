"""Engine against two real reference servers: stickiness, and failover when one dies mid-run (killed by pid)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from polar_hpc.assets import asset_path
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.reference.options import ReferenceOptions
from polar_hpc.reference.process import start_reference_server
from polar_hpc.wire.calls import SamplingParams

pytestmark = pytest.mark.slow


async def test_failover_when_a_server_dies_mid_run(tmp_path: Path) -> None:
    model = asset_path("tiny-qwen3")
    with (
        start_reference_server(model, ReferenceOptions(seed=1, threads=1), log_path=tmp_path / "a.log") as a,
        start_reference_server(model, ReferenceOptions(seed=2, threads=1), log_path=tmp_path / "b.log") as b,
    ):
        async with SGLangEngine([a.url, b.url], EngineSettings(backoff_s=0.05, max_retries=4)) as engine:
            sessions = [f"s{i}" for i in range(6)]
            first = await asyncio.gather(
                *(engine.generate([1, 2, 3], SamplingParams(max_new_tokens=2), session_id=s) for s in sessions)
            )
            home = {s: r.server for s, r in zip(sessions, first, strict=True)}
            assert set(home.values()) == {a.url, b.url}
            again = await asyncio.gather(
                *(engine.generate([1, 2, 3, 4], SamplingParams(max_new_tokens=2), session_id=s) for s in sessions)
            )
            assert [r.server for r in again] == [home[s] for s in sessions]  # sticky while healthy

            long = [
                asyncio.create_task(
                    engine.generate([5, 6, 7], SamplingParams(max_new_tokens=60, temperature=1.0), session_id=s)
                )
                for s in sessions
            ]
            await asyncio.sleep(0.4)
            os.kill(a.pid, signal.SIGKILL)
            results = await asyncio.wait_for(asyncio.gather(*long), 120)
            assert all(r.completion_tokens == 60 for r in results)
            assert all(r.server == b.url for r in results)
            moved = [r for s, r in zip(sessions, results, strict=True) if home[s] == a.url]
            assert moved and all(r.attempts >= 2 for r in moved)
            health = await engine.health(timeout_s=5)
            assert health == {a.url: False, b.url: True}
