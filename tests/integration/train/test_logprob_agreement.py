"""``polar-hpc shards logprobs`` on real recorded shards: the real reference server (tiny Qwen3) behind the proxy
(continuation rendering, ``prefix_merging``), one oracle session of the shell harness's own agent (4 forced turns,
teacher-forced logprobs) and one sampled session of the official ``openai`` SDK (2 turns at temperature 0.7, one
prefix-merged chain). transformers recomputes every trainable token: both agree within float noise; a corrupted
chain, shifted logprobs and the wrong temperature are caught and named; bad input is one line, exit 2.

The tiny random Qwen3 barely depends on its context: one changed context token moves later logprobs by 1e-5 to
1e-3 nat (a real model: nats). The corruption here replaces a whole tool result, which moves the next token by
~0.05 nat, far over the default tolerance (1e-3) and the float noise (float32 on the CPU: ~1e-6 measured here).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import openai
import pytest

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.cli.entry import main
from polar_hpc.config.run import BuilderSpec, ShardConfig
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.engine.settings import EngineSettings
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.proxy.settings import ProxySettings
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.writer import ShardWriter
from polar_hpc.train.agreement import AgreementReport
from polar_hpc.trajectory.registry import get_builder
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.oracle_repo import git_repo, oracle_session

pytestmark = pytest.mark.slow
FLOAT_NOISE = 1e-4
"""float32 on the CPU, the server's prefill/decode steps against one forward pass (measured: ≤ 1e-6 nat)."""
TEMPERATURE = 0.7


@pytest.fixture(autouse=True)
def _cli_log_handler() -> Iterator[None]:
    """``main()`` gives the ``polar_hpc`` logger a handler on this test's captured stderr; it goes with the test."""
    logger = logging.getLogger("polar_hpc")
    before = list(logger.handlers)
    yield
    for handler in logger.handlers:
        if handler not in before:
            logger.removeHandler(handler)


async def _sampled_session(url: str, model_dir: str) -> SessionResult:
    template = ChatTemplate.from_model_dir(model_dir)
    engine = SGLangEngine([url], EngineSettings(request_timeout_s=120, context_length=8192))
    server = ProxyServer(template, engine, ProxySettings(model_name="policy", context_length=8192, max_new_tokens=48,
                                                         render_mode="continuation"))
    base = await server.start()
    try:
        key = server.open_session("chat__chat-1/0#0")
        messages: list[Any] = [{"role": "user", "content": "Say something about the weather."}]
        async with openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0) as client:
            for follow_up in ("And tomorrow?", None):
                reply = await client.chat.completions.create(model="policy", messages=messages,
                                                             temperature=TEMPERATURE, seed=7)
                messages.append({"role": "assistant", "content": reply.choices[0].message.content or ""})
                if follow_up:
                    messages.append({"role": "user", "content": follow_up})
        records = server.close_session(key)
    finally:
        await server.stop()
        await engine.close()
    traj = get_builder(BuilderSpec(name="prefix_merging"), end_of_turn_id=template.end_of_turn_id).build(records)
    return SessionResult(task_id="chat__chat-1", sample_index=0, trajectory=traj, harness="openai_sdk",
                         model="policy")


def _write(run: Path, results: list[SessionResult]) -> Path:
    with ShardWriter(RunDir(run).shards, 0, ShardConfig(), {"test": "logprob-agreement"}) as w:
        for r in results:
            w.add(r)
    return run


@pytest.fixture(scope="module")
def recorded(reference_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run dir with one oracle session (shell, 1 chain of 4 turns) and one sampled one (2 turns, 1 chain)."""
    root = tmp_path_factory.mktemp("agreement")

    async def both() -> list[SessionResult]:
        oracle = await oracle_session(reference_server, git_repo(root / "calc"))
        return [oracle, await _sampled_session(reference_server.url, reference_server.model_dir)]

    results = asyncio.run(both())
    assert [len(r.trajectory.traces) for r in results] == [1, 1]
    assert [t.policy for r in results for t in r.trajectory.traces] == ["oracle", "sample"]
    return _write(root / "run", results)


def _logprobs(capsys: pytest.CaptureFixture[str], run: Path, model: str, *extra: str) -> tuple[int, str, str]:
    capsys.readouterr()  # not the command's: what the test logged before it (a shard written, once logging is set up)
    code = main(["shards", "logprobs", str(run), "--model", model, *extra])
    out = capsys.readouterr()
    return code, out.out, out.err


def _runs_of_mask(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of trainable tokens: the chain's completions."""
    m = mask.astype(bool)
    starts = np.flatnonzero(m & ~np.concatenate([[False], m[:-1]]))
    ends = np.flatnonzero(m & ~np.concatenate([m[1:], [False]])) + 1
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def test_recorded_logprobs_agree_within_float_noise(recorded: Path, reference_server: Any,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _logprobs(capsys, recorded, reference_server.model_dir, "--temperature", str(TEMPERATURE),
                               "--json")
    assert code == 0, err
    rep = msgspec.json.decode(out, type=AgreementReport)
    trainable = sum(int(v.loss_mask.sum()) for v in ShardReader(recorded).traces(blobs=False))
    assert rep.within_tolerance and rep.chains == 2 and rep.total.tokens == trainable
    groups = {(g.harness, g.policy): g.chains for g in rep.groups}
    assert groups == {("shell", "oracle"): 1, ("openai_sdk", "sample"): 1}
    for g in rep.groups:
        assert g.stats.max_abs <= FLOAT_NOISE and g.stats.above == 0 and g.stats.nonfinite == 0, g
        assert abs(g.stats.kl_k1) <= FLOAT_NOISE and g.stats.kl_k3 <= FLOAT_NOISE, g
    assert msgspec.json.decode(RunDir(recorded).logprobs_path.read_bytes(), type=AgreementReport) == rep

    text = _logprobs(capsys, recorded, reference_server.model_dir, "--temperature", str(TEMPERATURE))[1]
    assert "within" in text and "openai_sdk" in text
    assert main(["report", str(recorded), "--no-plots", "--out", str(recorded / "report")]) == 0
    report = capsys.readouterr().out
    assert "## Trainer-vs-rollout logprobs" in report and "| openai_sdk | sample | 1 |" in report


def test_the_recorded_temperature_is_applied_and_the_wrong_one_is_a_disagreement(
        recorded: Path, reference_server: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """Without ``--temperature`` each trace is scored at the temperature the proxy recorded for its calls (the
    SDK's 0.7): within. Scored at 1 instead: the sampled chain is over, from its first token; the oracle chain
    (teacher-forced: raw logprobs whatever the temperature) is still within."""
    sampled = next(r for r in ShardReader(recorded).results() if r.harness == "openai_sdk")
    (trace,) = sampled.trajectory.traces
    applied = trace.meta.sampling
    assert len(applied) == 2 and all(a is not None and a.temperature == TEMPERATURE and a.seed == 7
                                     for a in applied), applied
    code, out, err = _logprobs(capsys, recorded, reference_server.model_dir, "--json")
    assert code == 0, err
    rep = msgspec.json.decode(out, type=AgreementReport)
    assert rep.temperature is None and rep.temperatures == [TEMPERATURE] and rep.within_tolerance
    assert rep.mixed_temperature == 0 and rep.unrecorded_temperature == 0

    code, out, err = _logprobs(capsys, recorded, reference_server.model_dir, "--temperature", "1", "--json")
    assert code == 1
    rep = msgspec.json.decode(out, type=AgreementReport)
    assert rep.chains_over == 1 and rep.worst[0].key == "chat__chat-1/0" and rep.worst[0].first_over == 0
    assert rep.temperature == 1.0 and rep.temperatures == [1.0]
    assert next(g for g in rep.groups if g.policy == "oracle").stats.max_abs <= FLOAT_NOISE
    assert err.count("\n") == 1 and "1 of 2 chains exceed" in err and "chat__chat-1/0 trace 0" in err


def test_a_trainer_batch_gets_the_commands_figures(recorded: Path, reference_server: Any,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """``batch_agreement`` with a model in training mode (as a trainer holds it) over the sampled chains, scored
    at temperature 1 (they were sampled at 0.7, so the figures are far from 0): what the command prints for
    them, within float noise; the model is left in training mode."""
    from polar_hpc.reference.model import load_model
    from polar_hpc.train.scoring import batch_agreement

    views = [v for v in ShardReader(recorded).traces(blobs=False) if v.policy == "sample"]
    model = load_model(reference_server.model_dir)
    model.train()
    stats = batch_agreement(model, [v.prompt_ids for v in views], [v.response_ids.tolist() for v in views],
                            [v.loss_mask for v in views], [v.response_logprobs for v in views])
    assert model.training
    code, out, err = _logprobs(capsys, recorded, reference_server.model_dir, "--policy", "sample",
                               "--temperature", "1", "--json")
    assert code == 1, err
    cmd = msgspec.json.decode(out, type=AgreementReport).total
    assert stats.tokens == cmd.tokens > 0 and stats.above == cmd.above and stats.max_abs > 0.01
    for field in ("mean_abs", "max_abs", "share_above", "kl_k1", "kl_k3"):
        assert getattr(stats, field) == pytest.approx(getattr(cmd, field), abs=FLOAT_NOISE), field


def test_a_long_trace_is_scored_in_pieces_over_one_cache(recorded: Path, reference_server: Any) -> None:
    """Seven kept positions a piece (the oracle chain's 197 in 29 forward calls over one KV cache) give what one
    forward pass gives, within float noise."""
    from polar_hpc.reference.model import load_model
    from polar_hpc.train.scoring import TraceScorer

    view = next(v for v in ShardReader(recorded).traces(blobs=False) if v.policy == "oracle")
    positions = np.flatnonzero(view.loss_mask)
    model = load_model(reference_server.model_dir)
    whole = TraceScorer(model).logprobs(view.prompt_ids, view.response_ids, positions)
    small = TraceScorer(model, logit_budget=7 * model.config.vocab_size)
    pieces = small.logprobs(view.prompt_ids, view.response_ids, positions)
    assert len(positions) > 100
    np.testing.assert_allclose(pieces, whole, atol=FLOAT_NOISE, rtol=0)
    np.testing.assert_allclose(pieces, view.response_logprobs[positions], atol=FLOAT_NOISE, rtol=0)


def _altered(recorded: Path, out: Path, change: Any) -> tuple[Path, tuple[int, int]]:
    """A copy of the run whose oracle chain ``change(trace, turns)`` altered; returns it and the third turn's
    (start, end) response positions."""
    results = list(ShardReader(recorded).results())
    oracle = next(r for r in results if r.task_id == "calc__calc-1")
    trace = oracle.trajectory.traces[0]
    turns = _runs_of_mask(trace.loss_mask)
    assert len(turns) == 4
    change(trace, turns)
    return _write(out, results), turns[2]


def test_a_corrupted_context_is_caught_at_its_first_token(recorded: Path, reference_server: Any, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The tool result between the second and third turn of the prefix-merged chain is not what the engine saw
    (a continuation bug): the chain agrees up to it and is over from the third turn's first token on."""

    def corrupt(trace: Any, turns: list[tuple[int, int]]) -> None:
        gap = slice(turns[1][1], turns[2][0])
        trace.response_ids[gap] = (trace.response_ids[gap] + 1000) % 150_000

    run, (start, _) = _altered(recorded, tmp_path / "corrupt", corrupt)
    code, out, err = _logprobs(capsys, run, reference_server.model_dir, "--temperature", str(TEMPERATURE),
                               "--json")
    assert code == 1
    rep = msgspec.json.decode(out, type=AgreementReport)
    worst = rep.worst[0]
    assert rep.chains_over == 1 and (worst.key, worst.trace_index) == ("calc__calc-1/0", 0)
    assert (worst.first_over, worst.turn) == (start, 2)
    assert err.count("\n") == 1 and f"calc__calc-1/0 trace 0, first at response position {start} (turn 2)" in err


def test_shifted_logprobs_are_caught_in_their_turn(recorded: Path, reference_server: Any, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """The third turn's recorded logprobs one token late (an off-by-one when merging): over in that turn."""

    def shift(trace: Any, turns: list[tuple[int, int]]) -> None:
        a, b = turns[2]
        trace.response_logprobs[a + 1:b] = trace.response_logprobs[a:b - 1].copy()

    run, (start, end) = _altered(recorded, tmp_path / "shifted", shift)
    code, out, _ = _logprobs(capsys, run, reference_server.model_dir, "--temperature", str(TEMPERATURE), "--json")
    assert code == 1
    worst = msgspec.json.decode(out, type=AgreementReport).worst[0]
    assert worst.key == "calc__calc-1/0" and worst.turn == 2 and worst.first_over is not None
    assert start < worst.first_over < end


def test_bad_input_is_one_line(recorded: Path, smollm2_dir: Path, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken-model"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no-such-architecture"}')
    empty = tmp_path / "empty-run"
    (empty / "shards").mkdir(parents=True)
    cases = [
        ((recorded, str(broken)), 2, f"--model {broken}: cannot load a transformers causal LM"),
        ((recorded, str(tmp_path / "nowhere")), 2, "--model: model path"),
        ((empty, str(smollm2_dir)), 2, "no committed shards"),
        ((recorded, str(smollm2_dir)), 2, "the model's vocabulary has 49152: expected the model the run sampled"),
        ((recorded, str(smollm2_dir), "--harness", "nope"), 1, "no trainable token in"),
    ]
    for (run, model, *extra), want_code, want in cases:
        code, out, err = _logprobs(capsys, run, model, *extra)
        assert (code, err.count("\n")) == (want_code, 1) and want in err and "Traceback" not in err, (want, err)
        assert err.startswith("polar-hpc shards logprobs: ") and not out
