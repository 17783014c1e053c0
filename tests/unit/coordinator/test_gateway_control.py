"""The gateway's control client: what it reports about a session."""

from __future__ import annotations

import msgspec

from polar_hpc.gateway.control import summarize
from polar_hpc.sim.rank import fake_result
from polar_hpc.wire.session import Session, Task


def test_summary_duration_is_the_total_not_total_plus_its_parts() -> None:
    result = fake_result(Session(task=Task(task_id="t", instruction="x"), sample_index=0), rank=0)
    timed = msgspec.structs.replace(result, timings={"queue": 1.0, "run": 2.0, "postrun": 0.5, "total": 3.5})
    assert summarize(timed).duration_s == 3.5
    untimed = msgspec.structs.replace(result, timings={"queue": 1.0, "run": 2.0})
    assert summarize(untimed).duration_s == 3.0
