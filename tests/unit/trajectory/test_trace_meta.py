"""``TraceMeta`` is the schema of the builders' ``Trace.metadata`` keys: every key they write is a field of it,
with its type, and ``Trace.meta()`` reads them back."""

from __future__ import annotations

import msgspec
import pytest

from polar_hpc.config.run import BuilderSpec
from polar_hpc.trajectory.registry import get_builder
from polar_hpc.wire.records import RetriedAbort, TraceMeta, TraceStatus
from tests.unit.trajectory.synth import EOT, SynthSpec, make_records

FIELDS = set(TraceMeta.__struct_fields__)


@pytest.mark.parametrize("name", ["per_request", "prefix_merging"])
def test_builders_write_only_trace_meta_keys(name: str) -> None:
    records, _ = make_records(7, SynthSpec(agents=2, turns=3, p_cut=0.5, p_rerender=0.3))
    records[1].parse_error = "invalid JSON in <tool_call>"
    retry = msgspec.structs.replace(records[-1], completion_id="again", index=len(records))
    records[-1] = msgspec.structs.replace(records[-1], finish_reason="abort")
    traj = get_builder(BuilderSpec(name=name), end_of_turn_id=EOT).build([*records, retry], TraceStatus.COMPLETED)
    assert traj.traces
    for tr in traj.traces:
        assert set(tr.metadata) <= FIELDS, set(tr.metadata) - FIELDS
        meta = tr.meta()
        assert meta.completion_ids == tr.metadata["completion_ids"] and meta.session_id == "s#0"
        assert meta.retried_aborts == [RetriedAbort(completion_id=records[-1].completion_id, index=records[-1].index,
                                                    sampled_tokens=len(records[-1].output_ids), retried_by="again")]
    assert any(t.meta().unparsed_tool_calls == {"c1": "invalid JSON in <tool_call>"} for t in traj.traces)
    if name == "prefix_merging":
        assert all(t.meta().chain_index is not None for t in traj.traces)


def test_a_key_of_the_wrong_type_is_named(session_result_factory: object) -> None:
    import numpy as np

    from tests.fixtures.trajectories import make_trace

    tr = make_trace(np.random.default_rng(0))
    tr.metadata["completion_ids"] = "c1"
    with pytest.raises(msgspec.ValidationError, match=r"Expected `array`, got `str` - at `\$.completion_ids`"):
        tr.meta()
