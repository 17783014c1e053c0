"""A shard column is one row of ``store/schema.py``: every ``Trace`` field has its place in a shard (a column's
``field`` or the trace blob), and both exports carry it or say why not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.export.sft import TRACE_FIELDS, TRACE_FIELDS_LEFT_OUT, export_sft
from polar_hpc.export.shards import ExportRow
from polar_hpc.store.reader import ShardReader
from polar_hpc.store.schema import (
    ALL_COLUMNS,
    SESSION_COLUMNS,
    SESSION_FIELD_COLUMNS,
    TOKEN_COLUMNS,
    TRACE_COLUMNS,
    TRACE_FIELD_COLUMNS,
    SessionBlob,
    TraceBlob,
)
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.shardmeta import SESSION_METADATA_FIELDS, TRACE_METADATA_FIELDS
from polar_hpc.wire.traces import Trace
from tests.fixtures.runs import write_run


def _fields(tp: type[msgspec.Struct]) -> set[str]:
    return {f.name for f in msgspec.structs.fields(tp)}


TRACE_COLUMN_FIELDS = [c.field for c in TOKEN_COLUMNS + TRACE_COLUMNS if c.field is not None]


def test_every_trace_field_has_one_place_in_a_shard() -> None:
    places = TRACE_COLUMN_FIELDS + sorted(_fields(TraceBlob) - {"metadata"}) + list(TRACE_METADATA_FIELDS)
    assert sorted(places) == sorted(_fields(Trace)), "a Trace field has no column (or two places)"


def test_session_columns_name_session_result_attributes(session_result_factory: Any) -> None:
    r: SessionResult = session_result_factory(task_id="t", sample_index=0)
    for c in SESSION_COLUMNS:
        if c.field is not None:
            value: Any = r
            for part in c.field.split("."):
                value = getattr(value, part)  # AttributeError names a column whose field is gone
    assert len({c.path for c in ALL_COLUMNS}) == len(ALL_COLUMNS)


def test_a_column_added_later_reads_in_older_shards() -> None:
    defaults = {f.name for f in msgspec.structs.fields(Trace) if f.required is False}
    for c in TRACE_FIELD_COLUMNS:
        if c.since > 1:
            assert c.legacy_key is not None or c.field in defaults, \
                f"{c.path} (since {c.since}): older shards need a legacy_key or a default of Trace.{c.field}"


def test_the_reader_carries_every_trace_column(tmp_path: Path, session_result_factory: Any) -> None:
    written = [session_result_factory(task_id=f"t-{i}", sample_index=0) for i in range(2)]
    run = write_run(tmp_path / "run", written, per_shard=2)
    views = list(ShardReader(run).traces(blobs=False))
    traces = [t for r in written for t in r.trajectory.traces]
    assert len(views) == len(traces) > 0
    for view, trace in zip(views, traces, strict=True):
        assert view.fields == {str(c.field): getattr(trace, str(c.field)) for c in TRACE_FIELD_COLUMNS}


def test_shards_export_carries_every_trace_field() -> None:
    assert set(_fields(Trace)) - set(TRACE_METADATA_FIELDS) | {"metadata"} <= _fields(ExportRow)


def test_sft_export_carries_or_declares_every_trace_field(tmp_path: Path, session_result_factory: Any) -> None:
    assert sorted([*TRACE_FIELDS, *TRACE_FIELDS_LEFT_OUT]) == sorted(_fields(Trace))
    run = write_run(tmp_path / "run", [session_result_factory(task_id=f"t-{i}", sample_index=0) for i in range(4)],
                    per_shard=4)
    export_sft([run], tmp_path / "out", test_fraction=0.0)
    keys = {variant: set(msgspec.json.decode(next((tmp_path / "out" / variant).glob("train-*.jsonl"))
                                             .read_bytes().splitlines()[0]))
            for variant in ("chat", "tokens")}
    for field, (variant, key) in TRACE_FIELDS.items():
        assert key in keys[variant], f"Trace.{field}: {variant} records have no {key!r}"


def test_every_session_result_field_has_one_place_in_a_shard() -> None:
    columns = [c.field for c in SESSION_COLUMNS if c.field is not None and "." not in c.field]
    stored = [f for f in columns if f in _fields(SessionResult)] + ["trajectory"] + sorted(_fields(SessionBlob))
    stored.remove("stats")  # the trajectory's, in the session blob with its error
    stored.remove("error")
    stored += [*SESSION_METADATA_FIELDS, "released"]  # released: set aside, never in a shard
    assert sorted(stored) == sorted(_fields(SessionResult)), "a SessionResult field has no column (or two places)"


def test_the_reader_and_shards_export_carry_every_session_column(tmp_path: Path, session_result_factory: Any) -> None:
    written = [msgspec.structs.replace(session_result_factory(task_id=f"t-{i}", sample_index=0), gateway_rank=i,
                                       timings={"total": 1.5 + i}) for i in range(2)]
    run = write_run(tmp_path / "run", written, per_shard=2)
    views = list(ShardReader(run).traces(blobs=False))
    by_key = {r.key: r for r in written}
    for view in views:
        r = by_key[view.key]
        expect: dict[str, Any] = {}
        for c in SESSION_FIELD_COLUMNS:
            value: Any = r
            for part in str(c.field).split("."):
                value = getattr(value, part)
            expect[c.name] = value
        assert view.session == expect
        assert (view.key, view.gateway_rank, view.duration_s) == (r.key, r.gateway_rank, r.duration_s)
    assert {c.name for c in SESSION_FIELD_COLUMNS} <= _fields(ExportRow)
    assert [(r.gateway_rank, r.duration_s) for r in ShardReader(run).results()] == [(0, 1.5), (1, 2.5)]
