"""Session records: arrival order with overlapping calls, bounded memory with spill, JSONL per session."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from polar_hpc.proxy.capture import SessionLog
from polar_hpc.wire import codec
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, CompletionRecord


def rec(i: int, n: int = 1000) -> CompletionRecord:
    return CompletionRecord(
        completion_id=f"c{i}", session_id="s", index=i, provider="openai_chat",
        canonical=CanonicalRequest(messages=[ChatMessage(role="user", content=str(i))]),
        prompt_ids=np.arange(n, dtype=np.int32), output_ids=np.arange(3, dtype=np.int32),
        output_logprobs=np.zeros(3, np.float32), finish_reason="stop", response=ChatMessage(role="assistant"))


def test_arrival_order_spill_and_jsonl(tmp_path: Path) -> None:
    log = SessionLog("a/b#0", memory_limit_bytes=10_000, spill_dir=tmp_path / "spill", jsonl_path=tmp_path / "s.jsonl")
    idx = [log.reserve() for _ in range(6)]
    for i in [2, 0, 1, 5, 3]:  # finish out of order; 4 is still in flight
        log.finish(idx[i], rec(i))
    lines = (tmp_path / "s.jsonl").read_bytes().splitlines()
    assert [codec.from_json(x, CompletionRecord).index for x in lines] == [0, 1, 2, 3]
    log.finish(idx[4], None)  # a call that left no record releases the ones after it
    out = log.close()
    assert [r.index for r in out] == [0, 1, 2, 3, 5]
    assert list((tmp_path / "spill").iterdir()) == []  # spill file removed
    assert np.array_equal(out[0].prompt_ids, np.arange(1000, dtype=np.int32))
    log.finish(log.reserve(), rec(9))  # after close: dropped, no error
