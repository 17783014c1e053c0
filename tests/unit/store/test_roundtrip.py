"""Randomized SessionResults written to shards read back bit for bit (compared as msgpack bytes)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from polar_hpc.config.run import ShardConfig
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.writer import ShardWriter
from polar_hpc.wire.calls import ChatMessage, ToolCall, ToolSpec
from polar_hpc.wire.codec import to_msgpack
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import EvalResult, ReconstructionStats, Trace, TraceStatus, Trajectory

INT64 = st.integers(-(2**63), 2**63 - 1)
FINITE = st.floats(allow_nan=False, allow_infinity=False)
JSON: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | INT64 | FINITE | st.text(max_size=8),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3),
    max_leaves=8,
)
JSON_DICT = st.dictionaries(st.text(max_size=6), JSON, max_size=3)


@st.composite
def messages(draw: st.DrawFn) -> ChatMessage:
    return ChatMessage(
        role=draw(st.sampled_from(["system", "user", "assistant", "tool"])),
        content=draw(st.text(max_size=40)),
        reasoning_content=draw(st.none() | st.text(max_size=10)),
        tool_calls=draw(
            st.lists(
                st.builds(
                    ToolCall, id=st.text(max_size=4), name=st.text(max_size=4), arguments=st.text(max_size=8)
                ),
                max_size=2,
            )
        ),
        tool_call_id=draw(st.none() | st.text(max_size=4)),
        name=draw(st.none() | st.text(max_size=4)),
    )


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    n = draw(st.integers(0, 40))
    # Any float32 bit pattern: NaN payloads, infinities, negative zero, denormals (under mask 0 where not
    # finite: the writer refuses a trainable token without a finite logprob, and ids < 0, mask values > 1).
    logprobs = draw(hnp.arrays(np.uint32, n)).view(np.float32)
    ids = st.integers(0, 2**31 - 1)
    mask = draw(hnp.arrays(np.uint8, n, elements=st.integers(0, 1))) & np.isfinite(logprobs).astype(np.uint8)
    return Trace(
        prompt_ids=draw(hnp.arrays(np.int32, st.integers(0, 40), elements=ids)),
        response_ids=draw(hnp.arrays(np.int32, n, elements=ids)),
        loss_mask=mask,
        response_logprobs=logprobs,
        prompt_messages=draw(st.lists(messages(), max_size=3)),
        response_messages=draw(st.lists(messages(), max_size=2)),
        tools=draw(
            st.lists(
                st.builds(
                    ToolSpec, name=st.text(max_size=5), description=st.text(max_size=5), parameters=JSON_DICT
                ),
                max_size=2,
            )
        ),
        finish_reason=draw(st.text(max_size=8)),
        reward=draw(st.floats()),
        extra=draw(JSON_DICT),
    )


@st.composite
def session_results(draw: st.DrawFn) -> SessionResult:
    return SessionResult(
        task_id=draw(st.text(max_size=12)),
        sample_index=draw(st.integers(0, 2**63 - 1)),
        attempt=draw(st.integers(0, 100)),
        trajectory=Trajectory(
            status=draw(st.sampled_from(list(TraceStatus))),
            traces=draw(st.lists(traces(), max_size=3)),
            stats=ReconstructionStats(
                builder=draw(st.text(max_size=6)),
                completions=draw(st.integers(0, 1000)),
                breaks=draw(st.dictionaries(st.text(max_size=5), st.integers(0, 99), max_size=2)),
            ),
            error=draw(st.none() | st.text(max_size=20)),
        ),
        evaluation=draw(
            st.none()
            | st.builds(
                EvalResult,
                outcome_reward=FINITE,
                trace_rewards=st.none() | st.lists(FINITE, max_size=3),
                details=JSON_DICT,
            )
        ),
        timings=draw(st.dictionaries(st.text(max_size=6), FINITE, max_size=4)),
        harness=draw(st.text(max_size=8)),
        model=draw(st.text(max_size=8)),
        policy_version=draw(INT64),
        gateway_rank=draw(INT64),
        metadata=draw(JSON_DICT),
    )


def _unique(results: list[SessionResult]) -> list[SessionResult]:
    seen: set[str] = set()
    return [r for r in results if not (r.key in seen or seen.add(r.key))]


@pytest.mark.slow  # ~8 s: 60 hypothesis batches through real HDF5 shards
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(batch=st.lists(session_results(), min_size=1, max_size=4), max_sessions=st.integers(1, 3))
def test_round_trip_is_bit_exact(batch: list[SessionResult], max_sessions: int) -> None:
    batch = _unique(batch)
    with tempfile.TemporaryDirectory() as d:
        w = ShardWriter(Path(d), 3, ShardConfig(max_sessions=max_sessions), {"test": "roundtrip"})
        for r in batch:
            w.add(r)
        w.close()
        reader = ShardReader(d)
        back = list(reader.results())
        assert reader.problems == [] and reader.duplicates == []
        assert [to_msgpack(r) for r in back] == [to_msgpack(r) for r in batch]
        views = list(reader.traces())
        written = [t for r in batch for t in r.trajectory.traces]
        assert len(views) == len(written)
        for v, t in zip(views, written, strict=True):
            assert v.prompt_ids.tobytes() == t.prompt_ids.tobytes()
            assert v.response_logprobs.tobytes() == t.response_logprobs.tobytes()
            assert v.loss_mask.tobytes() == t.loss_mask.tobytes()
            assert to_msgpack(v.decode().prompt_messages) == to_msgpack(t.prompt_messages)


def test_realistic_sessions_round_trip(tmp_path: Path, session_result_factory: Any) -> None:
    batch = [session_result_factory(traces=2, turns=4) for _ in range(12)]
    with ShardWriter(tmp_path, 0, ShardConfig(max_sessions=5), {"host": "h"}) as w:
        for r in batch:
            w.add(r)
    assert [p.name for p in sorted(tmp_path.iterdir())] == [
        "rank-00000-000000.h5",
        "rank-00000-000001.h5",
        "rank-00000-000002.h5",
    ]
    back = list(ShardReader(tmp_path).results())
    assert [to_msgpack(r) for r in back] == [to_msgpack(r) for r in batch]


def test_many_small_traces_round_trip(tmp_path: Path, session_result_factory: Any) -> None:
    """Over 64 small arrays per column: the writer joins them before writing."""
    batch = [
        session_result_factory(
            traces=2, turns=1, prompt_tokens=(0, 5), response_tokens=(1, 3), messages=False
        )
        for _ in range(80)
    ]
    with ShardWriter(tmp_path, 0, ShardConfig(), {}) as w:
        for r in batch:
            w.add(r)
    back = list(ShardReader(tmp_path).results())
    assert [to_msgpack(r) for r in back] == [to_msgpack(r) for r in batch]


@pytest.mark.parametrize("compression", ["gzip", "lzf"])
def test_hdf5_compressed_token_columns_round_trip(
    tmp_path: Path, session_result_factory: Any, compression: str
) -> None:
    batch = [session_result_factory(traces=2) for _ in range(3)]
    with ShardWriter(tmp_path, 0, ShardConfig(compression=compression), {}) as w:  # type: ignore[arg-type]
        for r in batch:
            w.add(r)
    back = list(ShardReader(tmp_path).results())
    assert [to_msgpack(r) for r in back] == [to_msgpack(r) for r in batch]
