"""``encode_session`` runs the per-trace fidelity checks of ``validate``: a bad trace never reaches a shard."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from polar_hpc.store.encode import check_session, encode_session
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import Trace, TraceStatus, Trajectory


def result(**planted: Any) -> SessionResult:
    n = 4
    arrays: dict[str, Any] = {
        "prompt_ids": np.arange(3, dtype=np.int32),
        "response_ids": np.arange(n, dtype=np.int32),
        "loss_mask": np.array([0, 1, 1, 0], dtype=np.uint8),
        "response_logprobs": np.array([0.0, -0.5, -1.0, 0.0], dtype=np.float32),
    }
    for name, (i, value) in planted.items():
        arrays[name] = arrays[name].copy()
        arrays[name][i] = value
    traj = Trajectory(status=TraceStatus.COMPLETED, traces=[Trace(**arrays)])
    return SessionResult(task_id="t", sample_index=0, trajectory=traj)


def test_a_clean_trace_encodes() -> None:
    assert check_session(result()) is None
    assert encode_session(result()).nbytes > 0


@pytest.mark.parametrize(
    ("planted", "message"),
    [
        ({"loss_mask": (0, 2)}, "loss_mask value not 0/1 at token 0"),
        ({"response_logprobs": (1, np.nan)}, "loss_mask 1 without a finite logprob at token 1"),
        ({"response_logprobs": (2, -np.inf)}, "loss_mask 1 without a finite logprob at token 2"),
        ({"response_ids": (3, -1)}, "negative response token id at token 3"),
        ({"prompt_ids": (1, -7)}, "negative prompt token id at token 1"),
    ],
)
def test_planted_violations_are_refused(planted: dict[str, Any], message: str) -> None:
    r = result(**planted)
    assert message in (check_session(r) or "")
    with pytest.raises(ValueError, match=message):
        encode_session(r)


def test_masked_token_may_have_any_logprob_and_lengths_must_agree() -> None:
    assert check_session(result(response_logprobs=(0, np.nan))) is None  # mask 0: not trained on
    r = result()
    r.trajectory.traces[0].loss_mask = np.ones(3, dtype=np.uint8)
    assert "must have one length" in (check_session(r) or "")
    r.trajectory.traces[0].loss_mask = np.ones(4, dtype=np.float64)
    assert "not safely castable" in (check_session(r) or "")
