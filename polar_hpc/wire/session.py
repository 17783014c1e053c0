"""What a run is asked to do: tasks, the sessions they expand to, the ids that name them, the solution keys of the
oracle."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec

from polar_hpc.config.run import (
    AgentSpec,
    BuilderSpec,
    EvaluatorSpec,
    RuntimeSpec,
)
from polar_hpc.wire.ids import GroupTag, SessionId
from polar_hpc.wire.versions import INITIAL, PolicyVersion

SOLUTION_PATCH = "solution_patch"
"""Task metadata key: the reference solution as a unified diff (SWE-bench's ``patch``), for the oracle policy."""


SOLUTION_COMMANDS = "solution_commands"
"""Task metadata key: the reference solution as a list of shell commands (run in the workdir, in order)."""


SOLUTION_FILES = "solution_files"
"""Task metadata key: the files the solution commands edit (what the oracle reads before it runs them; a patch
names its own)."""


SOLUTION_LOOK = "solution_look"
"""Task metadata key: the commands of the oracle's look turn (default: ``git status --short`` and ``cat`` of the
first file the solution edits)."""


SOLUTION_FIRST_TRY = "solution_first_try"
"""Task metadata key: the commands of a first fix that misses (a recovery demonstration): the oracle applies them
and runs the tests, which fail, then looks again and applies the solution."""


SOLUTION_DIR = "solution_dir"
"""Task metadata key: a host folder the solution commands need (a Harbor task's ``solution/``), copied to
:data:`SANDBOX_SOLUTION_DIR` in the session's sandbox before the harness starts, under the ``oracle`` policy only."""


SANDBOX_SOLUTION_DIR = "/solution"


class Task(msgspec.Struct, kw_only=True):
    task_id: str
    instruction: str
    num_samples: int = 1
    runtime: RuntimeSpec | None = None
    agent: AgentSpec | None = None
    builder: BuilderSpec | None = None
    evaluator: EvaluatorSpec | None = None
    timeout_s: float | None = None
    agent_timeout_s: float | None = None
    """The agent's budget in this task's sessions (a Harbor task's ``[agent] timeout_sec``); None:
    ``gateway.agent_timeout_s``."""
    workspace: str | None = None
    """Host folder copied into the sandbox's workdir before the prepare actions run."""
    group: GroupTag | None = None
    """A trainer's GRPO group (its id is ``task_id``); None: a task of its own."""
    metadata: dict[str, Any] = msgspec.field(default_factory=dict)
    """The user's own task fields (and the solution keys above), copied into every ``SessionResult``."""


class Session(msgspec.Struct, kw_only=True):
    """One attempt at one sample of one task. ``key`` identifies the sample across attempts."""

    task: Task
    sample_index: int
    attempt: int = 0
    policy_version: PolicyVersion = INITIAL

    @property
    def id(self) -> SessionId:
        return SessionId(task_id=self.task.task_id, sample=self.sample_index, attempt=self.attempt)

    @property
    def key(self) -> str:
        return self.id.key

    @property
    def session_id(self) -> str:
        return str(self.id)


SEED_BITS = 63
"""Sampling seeds are non-negative int64 (SGLang's ``sampling_seed`` tensor; ``torch.Generator.manual_seed``)."""


def call_seed(run_seed: int, session_id: str, index: int) -> int:
    """The sampling seed of model call ``index`` (its arrival order in the session) of ``session_id`` in a run
    seeded ``run_seed`` (``inference.random_seed``): the one derivation, applied by the proxy to a call whose
    request carries no seed of its own.

    The call's identity is the task id (a GRPO group's id carries its rollout step, ``task@stepN``), the sample
    index and the call index; the attempt is left out, so a session run again after a lost rank samples the same
    tokens. 63 bits of BLAKE2b over the four values: independent of the order calls reach the engine, of the
    batch they share and of the process that asks."""
    sid = SessionId.parse_foreign(session_id)
    digest = hashlib.blake2b(f"{run_seed}\0{sid.task_id}\0{sid.sample}\0{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") & ((1 << SEED_BITS) - 1)
