"""``WeightVersion``: engine names read and written in one place, ordered as numbers, strict across processes."""

from __future__ import annotations

import msgspec
import pytest

from polar_hpc.wire.codec import from_json, to_json
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.session import Session, Task
from polar_hpc.wire.traces import TraceStatus, Trajectory
from polar_hpc.wire.versions import INITIAL, UNKNOWN, engine_name, ordered_names, parse_version


def test_engine_names_round_trip() -> None:
    assert parse_version("default") == INITIAL == 0 and engine_name(0) == "default"
    for v in (1, 9, 10, 123):
        assert parse_version(engine_name(v)) == v
    assert parse_version("stub") == parse_version("step-1") == parse_version(None) == UNKNOWN
    with pytest.raises(ValueError, match="-1"):
        engine_name(UNKNOWN)


def test_versions_order_as_numbers() -> None:
    assert ordered_names(["9", "10", "default", "9", "stub", "1"]) == ["default", "1", "9", "10", "stub"]
    assert parse_version("10") > parse_version("9")


def test_a_policy_version_that_is_not_an_int_is_a_decode_error() -> None:
    session = Session(task=Task(task_id="t", instruction="x"), sample_index=0, policy_version=3)
    assert from_json(to_json(session), Session).policy_version == 3
    raw = msgspec.json.decode(to_json(session))
    for bad in ("3", "default", -1, 1.5, None):
        with pytest.raises(msgspec.ValidationError, match="policy_version"):
            from_json(msgspec.json.encode({**raw, "policy_version": bad}), Session)
    result = msgspec.json.decode(to_json(SessionResult(task_id="t", sample_index=0,
                                                       trajectory=Trajectory(status=TraceStatus.ERROR))))
    with pytest.raises(msgspec.ValidationError, match="policy_version"):
        from_json(msgspec.json.encode({**result, "policy_version": "7"}), SessionResult)
