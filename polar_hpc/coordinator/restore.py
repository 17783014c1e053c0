"""A (re)started coordinator's dispatch state rebuilt from the shards (a session is done when it is in one) and
the journal of submitted, cancelled and given-up work."""

from __future__ import annotations

import gc
import time
from collections.abc import Iterable
from pathlib import Path

from polar_hpc.coordinator.journal import Cancelled, GaveUp, Journal, Submitted
from polar_hpc.coordinator.state import DispatchState
from polar_hpc.log import get_logger
from polar_hpc.store.resume import resume_index
from polar_hpc.wire.session import Task

log = get_logger("coordinator")


def restore_state(state: DispatchState, shards_dir: Path, journal: Journal, initial_tasks: Iterable[Task]) -> None:
    gc.disable()  # a million small objects: the cyclic GC would rescan them over and over
    try:
        _restore(state, shards_dir, journal, initial_tasks)
    finally:
        gc.enable()


def _restore(state: DispatchState, shards_dir: Path, journal: Journal, initial_tasks: Iterable[Task]) -> None:
    t0 = time.perf_counter()
    index = resume_index(shards_dir) if shards_dir.exists() else None
    if index is not None:
        state.restore_committed(index.outcomes)
    entries = journal.read()
    for task in initial_tasks:
        state.add_task(task)
    for e in entries:
        if isinstance(e, Submitted) and e.task.task_id not in state.tasks:
            state.add_task(e.task)
        elif isinstance(e, Cancelled):
            state.cancel_task(e.task_id)
        elif isinstance(e, GaveUp):
            state.give_up(e.key, e.error)
    for tid in state.completed_tasks:  # complete before this start: their callbacks went out then
        state.tasks[tid].restored_complete = True
    if index is not None:
        log.info("restored %d committed sessions from %d shards in %.2fs (%d problems, %d duplicates)",
                 len(index.keys), index.shards, time.perf_counter() - t0, len(index.problems),
                 index.duplicates)
        state.duplicates += index.duplicates
