"""``PolarError``: the base of every error polar-hpc raises to its user, with the exit code ``polar-hpc`` answers
with when one reaches its command line (one line on stderr, no traceback: ``cli.main`` writes
``polar-hpc: <message>``; a command that names itself in the line, ``polar-hpc view: <message>``, catches the
error first and returns its ``exit_code``). 2: input the user can fix (a recipe, a path, a task, a flag);
1: something failed or is missing (an asset, an image build, a server that did not start, a corrupt shard).

The rule (tests/unit/test_errors.py): every exception class defined in ``polar_hpc`` derives from PolarError,
except the internal control flow named in INTERNAL with why; their subclasses are internal too.
"""

from __future__ import annotations

from typing import ClassVar


class PolarError(Exception):
    exit_code: ClassVar[int] = 2
    """What ``polar-hpc`` exits with (2: input the user can fix)."""


INTERNAL: dict[str, str] = {
    "polar_hpc.coordinator.state.QueueFull": "the coordinator's backpressure, answered as an HTTP status",
    "polar_hpc.gateway.control.ControlRefused": "a control request the gateway refuses, answered over HTTP",
    "polar_hpc.gateway.pools.DrainingError": "a submit during drain; the rank releases the session",
    "polar_hpc.engine.errors.EngineError": "an engine call that failed; the proxy answers it in the "
                                              "provider's error shape (ContextOverflow, EngineUnavailable, "
                                              "EngineTimeout too)",
    "polar_hpc.reference.requests.BadRequest": "the reference server's HTTP 400",
    "polar_hpc.engine.sglang_schema.SchemaViolation": "a body SGLang would refuse; the reference server's 400",
    "polar_hpc.providers.errors.ProxyError": "the proxy's answer to a client call (status and provider error shape)",
    "polar_hpc.providers.errors.Failed": "a ProxyError together with the record the proxy keeps of the call",
    "polar_hpc.sim.executor.SimulatedCrash": "a fault the simulator injects on purpose",
    "polar_hpc.train.grpo.stop.Stopped": "a stop signal unwinding training to its step boundary; train grpo "
                                         "exits 128 + the signal",
}
"""Exception classes (module.qualname) that never reach a user as such, and what becomes of them."""
