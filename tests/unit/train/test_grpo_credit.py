"""Every trace trains: real multi-chain sessions (Codex compaction, Claude Code sub-agent, per_request calls) become
one row per chain with the session's advantage; the baseline counts each session once; ``trainer.loss_norm``
weighs them (a 6-call per_request session weighs one session under ``session``), checked against hand figures.

The sessions are real oracle sessions of the harness CLIs against the reference server (tests/fixtures/sessions,
README there); their traces are relabelled ``sample`` here: GRPO leaves oracle traces out, and the shape of a
session (chains, masks, tokens) is what is under test.
"""

from __future__ import annotations

import math
from pathlib import Path

import msgspec
import numpy as np
import pytest

from polar_hpc.store.reader import ShardReader
from polar_hpc.train.async_client import Group
from polar_hpc.train.grpo.batch import Completion, group_completions, rollout_output
from polar_hpc.train.grpo.credit import check_loss_norm, session_advantages, token_weights
from polar_hpc.wire.ids import GroupTag
from polar_hpc.wire.results import SessionResult

SESSIONS = Path(__file__).parents[2] / "fixtures" / "sessions"
GID = "calc-add@step0"
FILLER = 0


def _session(name: str, index: int, reward: float, *, calls: int | None = None) -> SessionResult:
    (r,) = ShardReader([SESSIONS / f"{name}.h5"], must_exist=True).results()
    traces = r.trajectory.traces[:calls] if calls is not None else r.trajectory.traces
    for tr in traces:
        tr.policy = "sample"
    traj = msgspec.structs.replace(r.trajectory, traces=traces)
    assert r.evaluation is not None
    return msgspec.structs.replace(r, sample_index=index, trajectory=traj,
                                   group=GroupTag(group_id=GID, base_task_id="calc-add"),
                                   evaluation=msgspec.structs.replace(r.evaluation, outcome_reward=reward))


@pytest.fixture(scope="module")
def group() -> Group:
    results = [
        _session("codex-compaction", 0, 1.0),  # 3 chains: before, the compaction prompt, after
        _session("claude-code-subagent", 1, 0.0),  # 2 chains: the parent, the sub-agent
        _session("claude-code-per-request-6", 2, 1.0),  # 6 calls, one trace each
        _session("claude-code-per-request-6", 3, 0.0, calls=1),  # its first call alone: a 1-call session
    ]
    return Group(group_id=GID, base_task_id="calc-add", policy_version=0, rollout_step=0, num_samples=4,
                 results=results)


def _mask(rows: list[Completion]) -> np.ndarray:
    width = max(len(r.env_mask) for r in rows)
    return np.array([r.env_mask + [0] * (width - len(r.env_mask)) for r in rows], dtype=np.int64)


def test_every_chain_is_a_row_with_its_sessions_advantage(group: Group) -> None:
    rows, counts = group_completions(group, filler_id=FILLER)
    chains = [3, 2, 6, 1]
    assert [r.sample_index for r in rows] == [i for i, n in enumerate(chains) for _ in range(n)]
    assert (counts.trained, counts.rows, counts.extra_chains, counts.skipped_chains) == (4, 12, 8, 0)
    for row, tr in zip(rows, [t for res in group.results for t in res.trajectory.traces], strict=True):
        assert row.prompt_ids == tr.prompt_ids.tolist() and row.completion_ids == tr.response_ids.tolist()
        assert row.env_mask == tr.loss_mask.tolist() and not row.placeholder
    # the baseline over sessions: rewards 1, 0, 1, 0 -> mean 0.5, unbiased std sqrt(1/3), each session once
    a = 0.5 / (math.sqrt(1 / 3) + 1e-4)
    expect = [a, -a, a, -a]
    for row in rows:
        assert row.advantage == pytest.approx(expect[row.sample_index], rel=1e-12)
        assert row.session == f"{GID}/{row.sample_index}"
    # counting rows instead (mean 9/12 = 0.75) would have given the 6-call session a smaller advantage
    by_rows = session_advantages([r.reward for r in rows])
    assert by_rows[6] != pytest.approx(rows[6].advantage)
    out = rollout_output(rows)
    assert out["advantage"] == [r.advantage for r in rows] and len(set(out["session"])) == 4


def test_six_per_request_calls_weigh_one_session(group: Group) -> None:
    rows, _ = group_completions(group, filler_id=FILLER)
    mask = _mask(rows)
    sessions, groups = [r.session for r in rows], [r.group_id for r in rows]
    tokens = [sum(sum(r.env_mask) for r in rows if r.sample_index == i) for i in range(4)]
    # the pinned fixtures' masks (a regenerated Claude Code session may differ by a token: its ids are random)
    assert tokens == [212 + 31 + 19, 386 + 231, 344 + 21 + 45 + 132 + 35 + 19, 344]
    total = sum(tokens)

    # dapo / bnpo: the loss is sum_t w_t * l_t / T; a session's weight is sum of its w over T
    def weight_of(w: np.ndarray) -> list[float]:
        return [float(w[[j for j, r in enumerate(rows) if r.sample_index == i]].sum()) / total for i in range(4)]

    w = token_weights(mask, sessions, groups, loss_norm="session", loss_type="dapo")
    assert weight_of(w) == pytest.approx([0.25] * 4, rel=1e-12)
    six = [j for j, r in enumerate(rows) if r.sample_index == 2]
    for j in six:  # by hand: every token of the 6-call session weighs T / (S * T_s)
        on = mask[j] > 0
        assert np.allclose(w[j][on], total / (4 * tokens[2])) and not w[j][~on].any()
    tok = token_weights(mask, sessions, groups, loss_norm="token", loss_type="dapo")
    assert weight_of(tok) == pytest.approx([t / total for t in tokens], rel=1e-12)
    # per token the 6-call session weighs by its tokens
    assert weight_of(tok)[2] / weight_of(tok)[3] == pytest.approx(tokens[2] / tokens[3])
    # grpo averages each row first: a row's weight is B / (S * R_s), so the 6 rows share one session's 1/S
    g = token_weights(mask, sessions, groups, loss_norm="session", loss_type="grpo")
    row_w = [float(g[j][mask[j] > 0][0]) for j in range(len(rows))]
    assert [sum(row_w[j] for j in range(len(rows)) if rows[j].sample_index == i) / len(rows) for i in range(4)] \
        == pytest.approx([0.25] * 4, rel=1e-12)
    assert row_w[six[0]] == pytest.approx(12 / (4 * 6))
    # one group: group normalization is token normalization scaled to weigh 1
    gw = token_weights(mask, sessions, groups, loss_norm="group", loss_type="dapo")
    assert np.allclose(gw, tok)


def test_placeholders_carry_no_advantage_and_stay_out_of_the_baseline(group: Group) -> None:
    results = list(group.results[:3])  # sample 3 sent no result
    untrainable = _session("claude-code-subagent", 1, 0.0)
    for tr in untrainable.trajectory.traces:
        tr.trainable = False
    results[1] = untrainable
    g = msgspec.structs.replace(group, results=results)
    rows, counts = group_completions(g, filler_id=FILLER)
    assert [r.sample_index for r in rows if r.placeholder] == [1, 3]
    assert (counts.trained, counts.untrainable, counts.no_result) == (2, 1, 1)
    assert {r.advantage for r in rows} == {0.0}  # the trained sessions both got 1: the placeholders' 0 is not seen
    w = token_weights(_mask(rows), [r.session for r in rows], [r.group_id for r in rows], loss_norm="session",
                      loss_type="dapo")
    assert not w[-1].any()


@pytest.mark.parametrize(("norm", "loss", "bad"), [
    ("token", "dapo", False), ("session", "dapo", False), ("group", "bnpo", False), ("session", "grpo", False),
    ("token", "grpo", True), ("session", "dr_grpo", True), ("group", "dr_grpo", True), ("token", "dr_grpo", False),
])
def test_loss_norm_and_loss_type_must_fit(norm: str, loss: str, bad: bool) -> None:
    why = check_loss_norm(norm, loss)
    assert (why is not None) == bad
    if bad:
        assert f"trainer.loss_norm = {norm!r}" in why and f"trainer.loss_type = {loss!r}" in why
        assert "\n" not in why
