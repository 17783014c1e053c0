"""``per_request``: one trace per completion, loss mask 1 on every sampled id."""

from __future__ import annotations

import numpy as np

from polar_hpc.trajectory.base import (
    Builder,
    completion_metadata,
    recorded_versions,
    sampled_part,
    sampled_versions,
    top_part,
    top_width,
)
from polar_hpc.wire.calls import CompletionRecord
from polar_hpc.wire.traces import ReconstructionStats, Trace


class PerRequestBuilder(Builder):
    name = "per_request"

    def _build(self, records: list[CompletionRecord], stats: ReconstructionStats) -> list[Trace]:
        traces = []
        for i, rec in enumerate(records):
            ids, lps = sampled_part(rec)
            meta = completion_metadata([rec])
            meta.chain_index = i
            top_ids, top_lps = top_part(rec, ids.shape[0], top_width([rec]))
            traces.append(Trace(
                prompt_ids=np.asarray(rec.prompt_ids, dtype=np.int32), response_ids=ids,
                loss_mask=np.full(ids.shape[0], int(rec.trained), dtype=np.uint8), response_logprobs=lps,
                prompt_messages=list(rec.canonical.messages), response_messages=[rec.response],
                tools=list(rec.canonical.tools), finish_reason=rec.finish_reason, meta=meta,
                response_versions=recorded_versions(sampled_versions(rec, ids.shape[0])),
                response_top_ids=top_ids, response_top_logprobs=top_lps))
        stats.chains = len(traces)
        return traces
