"""``Trace.meta`` (``TraceMeta``) is what the builders record: typed on the wire, the trace's metadata JSON object in
the shards (``wire.shardmeta``), read back with its types."""

from __future__ import annotations

import msgspec
import pytest

from polar_hpc.config.run import BuilderSpec
from polar_hpc.trajectory.registry import get_builder
from polar_hpc.wire.shardmeta import trace_from_shard, trace_to_shard
from polar_hpc.wire.traces import RetriedAbort, TraceMeta, TraceStatus
from tests.unit.trajectory.synth import EOT, SynthSpec, make_records


@pytest.mark.parametrize("name", ["per_request", "prefix_merging"])
def test_builders_record_trace_meta(name: str) -> None:
    records, _ = make_records(7, SynthSpec(agents=2, turns=3, p_cut=0.5, p_rerender=0.3))
    records[1].parse_error = "invalid JSON in <tool_call>"
    retry = msgspec.structs.replace(records[-1], completion_id="again", index=len(records))
    records[-1] = msgspec.structs.replace(records[-1], finish_reason="abort")
    traj = get_builder(BuilderSpec(name=name), end_of_turn_id=EOT).build([*records, retry], TraceStatus.COMPLETED)
    assert traj.traces
    for tr in traj.traces:
        assert not tr.extra and tr.meta.session_id == "s#0" and tr.meta.completion_ids
        assert tr.meta.retried_aborts == [RetriedAbort(completion_id=records[-1].completion_id,
                                                       index=records[-1].index,
                                                       sampled_tokens=len(records[-1].output_ids), retried_by="again")]
        assert trace_from_shard(trace_to_shard(tr.meta, tr.extra)) == (tr.meta, {})
    assert any(t.meta.unparsed_tool_calls == {"c1": "invalid JSON in <tool_call>"} for t in traj.traces)
    if name == "prefix_merging":
        assert all(t.meta.chain_index is not None for t in traj.traces)


def test_the_shard_object_keeps_a_callers_keys_and_names_a_wrong_type() -> None:
    meta, extra = trace_from_shard({"completion_ids": ["c1"], "chain_index": 2, "turns": 3})
    assert meta == TraceMeta(completion_ids=["c1"], chain_index=2) and extra == {"turns": 3}
    assert trace_to_shard(meta, extra)["turns"] == 3
    with pytest.raises(msgspec.ValidationError, match=r"Expected `array`, got `str` - at `\$.completion_ids`"):
        trace_from_shard({"completion_ids": "c1"})


@pytest.mark.parametrize("name", ["per_request", "prefix_merging"])
def test_an_untrained_record_stays_in_the_chain_out_of_the_loss(name: str) -> None:
    """``CompletionRecord.trained = False`` (the oracle's missed fix in a recovery demonstration): its sampled
    tokens are in the trace, with ``loss_mask`` 0; every other record's sampled tokens keep 1."""
    records, _ = make_records(3, SynthSpec(agents=1, turns=3, p_cut=0.0, p_rerender=0.0))
    builder = get_builder(BuilderSpec(name=name), end_of_turn_id=EOT)
    before = builder.build(records, TraceStatus.COMPLETED)
    records[1] = msgspec.structs.replace(records[1], trained=False)
    after = builder.build(records, TraceStatus.COMPLETED)
    assert [t.response_ids.tolist() for t in after.traces] == [t.response_ids.tolist() for t in before.traces]
    lost = len(records[1].output_ids)
    assert sum(int(t.loss_mask.sum()) for t in before.traces) - sum(int(t.loss_mask.sum()) for t in after.traces) \
        == lost > 0
    assert after.stats.tokens_trainable == before.stats.tokens_trainable - lost
