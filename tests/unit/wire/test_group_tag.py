"""``GroupTag`` on ``Task`` / ``SessionResult``, and its keys in the shards' session metadata (old shards read)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest

from polar_hpc.wire.codec import from_json, to_json
from polar_hpc.wire.ids import GroupTag
from polar_hpc.wire.results import AgentOutcome, SessionResult
from polar_hpc.wire.session import Task
from polar_hpc.wire.shardmeta import GROUP_KEYS, from_shard_metadata, to_shard_metadata
from polar_hpc.wire.traces import TraceStatus, Trajectory


def _result(**kw: object) -> SessionResult:
    return SessionResult(task_id="add@step3", sample_index=0, trajectory=Trajectory(status=TraceStatus.COMPLETED),
                         **kw)  # type: ignore[arg-type]


def test_new_names_the_group_by_task_and_step() -> None:
    tag = GroupTag.new("add", 3, 2)
    assert (tag.group_id, tag.base_task_id, tag.rollout_step, tag.policy_version) == ("add@step3", "add", 3, 2)
    assert GroupTag.new("add", 3, 2, suffix="-r1").group_id == "add@step3-r1"
    task = Task(task_id=tag.group_id, instruction="2+2", group=tag)
    assert from_json(to_json(task), Task).group == tag


def test_a_wrong_field_is_a_decode_error() -> None:
    raw = msgspec.json.decode(to_json(Task(task_id="t", instruction="x", group=GroupTag.new("t", 0, 0))))
    for key, bad in (("policy_version", "3"), ("rollout_step", -1), ("policy_version", None)):
        with pytest.raises(msgspec.ValidationError, match=key):
            from_json(msgspec.json.encode({**raw, "group": {**raw["group"], key: bad}}), Task)
    with pytest.raises(msgspec.ValidationError, match="base_task_id"):
        from_json(msgspec.json.encode({**raw, "group": {"group_id": "t"}}), Task)


def test_the_shard_keeps_the_keys_it_always_had() -> None:
    tag = GroupTag.new("add", 3, 2)
    r = _result(group=tag, metadata={"repo": "o/r"})
    meta = to_shard_metadata(r)
    assert meta == {"repo": "o/r", "group_id": "add@step3", "base_task_id": "add", "rollout_step": 3,
                    "policy_version": 2}
    back = from_shard_metadata(_result(metadata=meta))
    assert back.group == tag and back.metadata == {"repo": "o/r"}


def test_the_users_own_group_id_stays_in_metadata() -> None:
    meta = {"group_id": "g7", "policy_version": "3", "rollout_step": "7"}
    back = from_shard_metadata(_result(metadata=dict(meta)))
    assert back.group is None and back.metadata == meta


def test_a_trainers_tag_of_the_wrong_type_fails_naming_the_session() -> None:
    meta = {"group_id": "add@step3", "base_task_id": "add", "rollout_step": 3, "policy_version": "x"}
    assert set(meta) == set(GROUP_KEYS)
    with pytest.raises(msgspec.ValidationError, match=r"add@step3/0.*policy_version"):
        from_shard_metadata(_result(metadata=meta))


def test_the_agent_outcome_keeps_its_key_and_reads_back() -> None:
    agent = AgentOutcome(status="failed", returncode=2, detail="harness exited 2")
    meta = to_shard_metadata(_result(agent=agent))
    assert meta == {"agent": {"status": "failed", "returncode": 2, "detail": "harness exited 2"}}
    assert from_shard_metadata(_result(metadata=meta)).agent == agent
    assert from_shard_metadata(_result(metadata={"agent": "codex"})).metadata == {"agent": "codex"}  # a user's own
    own = {"agent": {"status": "gone"}}  # not an outcome: a task's own field
    assert from_shard_metadata(_result(metadata=dict(own))).metadata == own


def test_shards_keep_the_keys_and_read_the_typed_fields_back(tmp_path: Path, session_result_factory: Any) -> None:
    from polar_hpc.store.encode import decode_session_blob
    from polar_hpc.store.reader import ShardReader
    from polar_hpc.store.shardfile import open_shard, read_session_blobs
    from tests.fixtures.runs import write_run

    r = session_result_factory(task_id="add@step3", sample_index=0)
    r.group, r.agent = GroupTag.new("add", 3, 2), AgentOutcome(status="completed", returncode=0)
    r.metadata = {"repo": "o/r"}
    run = write_run(tmp_path / "run", [r])
    (back,) = ShardReader(run).results()
    assert (back.group, back.agent, back.metadata) == (r.group, r.agent, r.metadata)
    (shard,) = sorted(Path(run).rglob("*.h5"))
    with open_shard(shard) as f:
        stored = decode_session_blob(read_session_blobs(f)[0]).metadata
    assert {k: stored[k] for k in GROUP_KEYS} == {"group_id": "add@step3", "base_task_id": "add", "rollout_step": 3,
                                                   "policy_version": 2}
    assert stored["agent"] == {"status": "completed", "returncode": 0, "detail": ""}


def test_the_http_facade_sends_results_in_their_old_shape(session_result_factory: Any) -> None:
    from polar_hpc.wire.results import Released
    from polar_hpc.wire.shardmeta import session_json

    r = session_result_factory(task_id="add@step3", sample_index=0)
    r.group, r.agent = GroupTag.new("add", 3, 2), AgentOutcome(status="timeout", returncode=None, detail="budget")
    r.released = Released(reason="drain", rank=1, draining=True)
    r.trajectory.traces[0].meta.chain_index = 4
    out = session_json(r)
    assert not {"group", "agent", "released"} & set(out)
    assert out["metadata"]["base_task_id"] == "add" and out["metadata"]["agent"]["detail"] == "budget"
    assert out["metadata"]["released"]["reason"] == "drain"
    trace = out["trajectory"]["traces"][0]
    assert "meta" not in trace and trace["metadata"]["chain_index"] == 4
    assert trace["metadata"]["turns"] == r.trajectory.traces[0].extra["turns"]


def test_notes_keep_their_keys() -> None:
    from polar_hpc.wire.results import SessionNotes

    r = _result(notes=SessionNotes(harness_log_tail="bye", traces_dropped=2), metadata={"repo": "o/r"})
    meta = to_shard_metadata(r)
    assert meta == {"repo": "o/r", "harness_log_tail": "bye", "traces_dropped": 2}
    back = from_shard_metadata(_result(metadata=meta))
    assert back.notes == r.notes and back.metadata == {"repo": "o/r"}
    own = {"session_id": 12, "traces_dropped": "2"}  # a task's own fields of those names
    assert from_shard_metadata(_result(metadata=dict(own))).metadata == own
