"""The oracle policy end to end without a sandbox: the proxy (in-process, continuation rendering) in front of the
real reference server (tiny Qwen3), the shell harness's own agent (``polar_hpc.harness.mini_agent``, official
``openai`` SDK) solving a real git repo. Every agent call is forced and scored; the repo's tests decide."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.config.run import BuilderSpec
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.policy.script import OracleScript
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.proxy.settings import ProxySettings
from polar_hpc.trajectory.registry import get_builder
from tests.fixtures.floats import assert_logprobs_close
from tests.fixtures.oracle_repo import PATCH, TESTS, git_repo, run_mini_agent

pytestmark = pytest.mark.slow






async def test_mini_agent_solves_the_repo_under_the_oracle(reference_server: Any, tmp_path: Path) -> None:
    """(The no-op oracle, graded 0 by the evaluator, is in tests/integration/gateway/test_oracle_harnesses.py.)"""
    noop = False
    repo = git_repo(tmp_path / "calc")
    template = ChatTemplate.from_model_dir(reference_server.model_dir)
    engine = SGLangEngine([reference_server.url], EngineSettings(request_timeout_s=120, context_length=8192))
    server = ProxyServer(template, engine, ProxySettings(model_name="policy", context_length=8192, max_new_tokens=64,
                                                         render_mode="continuation", measure_divergence=True))
    base = await server.start()
    try:
        key = server.open_session("calc/0#0", oracle=OracleScript(solution_patch=PATCH, verify=TESTS, noop=noop))
        transcript = await run_mini_agent(base, key, repo)
        records = server.close_session(key)
        forced_again = [await engine.teacher_force(r.prompt_ids.tolist(), r.output_ids.tolist()) for r in records]
    finally:
        await server.stop()
        await engine.close()
    assert len(records) == (3 if noop else 4), transcript
    assert all(r.policy == "oracle" and r.finish_reason == "stop" and r.parse_error is None for r in records)
    assert [len(r.response.tool_calls) for r in records] == ([2, 1, 0] if noop else [2, 1, 1, 0])
    for rec, again in zip(records, forced_again, strict=True):
        assert_logprobs_close(rec.output_logprobs, again.logprobs)
        assert rec.output_ids[-1] == template.end_of_turn_id
    assert [r.render_mode for r in records] == ["canonical"] + ["continuation"] * (len(records) - 1)
    assert all(r.divergence_tokens == 0 for r in records)  # a canonical re-render would have changed nothing
    passed = subprocess.run(TESTS, shell=True, cwd=repo, capture_output=True, text=True).returncode == 0
    assert passed is not noop, transcript

    traj = get_builder(BuilderSpec(name="prefix_merging"), end_of_turn_id=template.end_of_turn_id).build(records)
    assert traj.stats.chains == 1 and len(traj.traces) == 1
    trace = traj.traces[0]
    assert trace.policy == "oracle"
    mask = trace.loss_mask.astype(bool)
    np.testing.assert_array_equal(trace.response_ids[mask], np.concatenate([r.output_ids for r in records]))
    np.testing.assert_array_equal(trace.response_logprobs[mask], np.concatenate([r.output_logprobs for r in records]))
