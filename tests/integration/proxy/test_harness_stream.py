"""Every real harness CLI streams through the proxy from a deliberately slow engine: its first token 11 s after
the request (queueing, a long prefill), then a token every 0.05 s, ending with the stop token. Each CLI's own
stream watchdogs are shortened below that (Claude Code's byte-stream idle timeout: it clamps to >= 10 s;
Codex's stream idle timeout with no stream retries; Qwen Code's API timeout) and the proxy's keep-alive
interval is 1 s: each must finish (exit 0) with no error and no retry (no prompt sent twice), its streamed
call recorded. The CLIs run at once, so the tier costs about one slow reply.

The engine is the FAKE ``StubServer`` (SGLang's streaming protocol, instant tokens, delays on demand): the
real reference server takes minutes to prefill and decode these CLIs' 8-19k-token prompts on this CPU. The
live path against the real reference server is tested in ``test_stream_reference.py``. With any CPU model
each CLI makes one call and stops.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.assets import AssetError, asset_path
from polar_hpc.chat.template import ChatTemplate
from polar_hpc.config.run import AgentSpec
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.harness import HarnessContext, HarnessError, get_adapter
from polar_hpc.harness.toolchain import resolve_harness
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.proxy.settings import ProxySettings
from polar_hpc.sim.sglang_stub import StubServer
from polar_hpc.wire.calls import CompletionRecord

pytestmark = [pytest.mark.harness, pytest.mark.slow]
FIRST_TOKEN_S = 11.0  # Claude Code clamps its byte-stream idle timeout to >= 10 s
KEEPALIVE_S = 1.0
RUN_TIMEOUT_S = 120
HARNESSES: dict[str, tuple[str, dict[str, Any], dict[str, str], str]] = {
    # key: (adapter, settings, env, provider)
    "codex": ("codex", {}, {}, "openai_responses"),
    "claude_code": ("claude_code", {}, {"CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "10000"}, "anthropic"),
    "gemini_cli": ("gemini_cli", {}, {}, "google"),
    "qwen_code": ("qwen_code", {}, {"QWEN_CODE_API_TIMEOUT_MS": "5000"}, "openai_chat"),
    "opencode": ("opencode", {}, {}, "openai_chat"),
    "pi-chat": ("pi", {"api": "openai-completions"}, {}, "openai_chat"),
    "pi-responses": ("pi", {"api": "openai-responses"}, {}, "openai_responses"),
    "pi-anthropic": ("pi", {"api": "anthropic-messages"}, {}, "anthropic"),
    "pi-google": ("pi", {"api": "google-generative-ai"}, {}, "google"),
}
CODEX_WATCHDOG = ('wire_api = "responses"\nstream_idle_timeout_ms = 3000\nstream_max_retries = 0\n'
                  'request_max_retries = 0')


class Run:
    def __init__(self, returncode: int | None, stdout: str, stderr: str, records: list[CompletionRecord]) -> None:
        self.returncode, self.stdout, self.stderr, self.records = returncode, stdout, stderr, records


async def _launch(key: str, base: str, work: Path) -> asyncio.subprocess.Process:
    adapter_name, settings, env, _ = HARNESSES[key]
    session = work / "sessions" / key
    (session / "work").mkdir(parents=True)
    ctx = HarnessContext(instruction="Say hello", base_url=base, api_key=key, model="policy",
                         agent=AgentSpec(harness=adapter_name, settings=settings, env=env), session_dir=str(session),
                         sandbox_session_dir=str(session), is_root=os.geteuid() == 0, workdir=str(session / "work"))
    cmd = get_adapter(adapter_name).prepare(ctx)
    if adapter_name == "codex":
        config = Path(cmd.files[0])
        config.write_text(config.read_text().replace('wire_api = "responses"', CODEX_WATCHDOG))
    full_env = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", **cmd.env}
    argv = [*resolve_harness(cmd.argv[0]).argv, *cmd.argv[1:]]
    return await asyncio.create_subprocess_exec(*argv, env=full_env, cwd=cmd.cwd, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)


async def _finish(proc: asyncio.subprocess.Process) -> tuple[int | None, str, str]:
    try:
        out, err = await asyncio.wait_for(proc.communicate(), RUN_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


async def test_every_cli_streams_through_a_slow_engine(tmp_path: Path) -> None:
    for adapter, *_ in HARNESSES.values():
        try:
            resolve_harness(get_adapter(adapter).binary)
        except HarnessError as err:
            pytest.fail(f"{err} (the harness CLIs from npm: tools/setup.sh)", pytrace=False)
    try:
        template = ChatTemplate.from_model_dir(asset_path("tiny-qwen3"))
    except AssetError as err:
        pytest.fail(str(err), pytrace=False)
    stub = StubServer(n_tokens=24, first_token_delay_s=FIRST_TOKEN_S, token_delay_s=0.05, stop_at_end=True)
    engine = SGLangEngine([await stub.start()], EngineSettings(context_length=65536))
    proxy = ProxyServer(template, engine, ProxySettings(model_name="policy", context_length=65536, max_new_tokens=24,
                                                        render_mode="continuation", sse_keepalive_s=KEEPALIVE_S))
    base = await proxy.start()
    keys = {key: proxy.open_session(key, api_key=key) for key in HARNESSES}
    try:
        procs = {key: await _launch(key, base, tmp_path) for key in HARNESSES}
        done = await asyncio.gather(*(_finish(p) for p in procs.values()))
    finally:
        await proxy.stop()
        await engine.close()
        await stub.stop()
    runs = {key: Run(*res, proxy.close_session(keys[key])) for key, res in zip(procs, done, strict=True)}
    problems = [why for key, run in runs.items() if (why := _check(key, run))]
    assert not problems, "\n\n".join(problems)
    assert not stub.aborted  # no stream was given up


def _check(key: str, run: Run) -> str | None:
    why = f"{key}: exit {run.returncode}\nstdout: {run.stdout[-1200:]}\nstderr: {run.stderr[-2000:]}"
    if run.returncode != 0:
        return why
    streamed = [r for r in run.records if r.canonical.stream and not r.side_request]
    if not streamed:
        return f"no streamed call recorded; {why}"
    prompts = [r.prompt_ids.tobytes() for r in run.records]
    if len(prompts) != len(set(prompts)):
        return f"a prompt was sent twice (a retry); {why}"
    for r in streamed:
        if r.provider != HARNESSES[key][3] or r.finish_reason != "stop" or not len(r.output_ids):
            return f"record {r.index}: {r.provider} {r.finish_reason} {len(r.output_ids)} tokens; {why}"
        if r.timings.engine_end - r.timings.engine_start < FIRST_TOKEN_S:
            return f"record {r.index} did not wait for the slow engine; {why}"
    return None
