"""The stop budget, end to end: each step must fit in the one around it, or a SIGKILL lands before the shard
commit.

  gateway drain (``gateway.drain_grace_s``: sessions finish or are cut)
  + COMMIT_MARGIN_S (shard write + fsync, Committed to the coordinator, sandbox teardown)
  = :func:`stop_grace_s`: how long a job waits after SIGTERM to its component before killing its tree;
  + REQUEUE_MARGIN_S (submitit pickles the job and requeues it)
  = :func:`signal_delay_s`, the Slurm ``--signal`` delay (``submit.slurm_parameters``), and
    :func:`cancel_grace_s`, the default grace of ``polar-hpc cancel`` (and of a run stopped by a fault).
"""

from __future__ import annotations

import math

from polar_hpc.config import RunConfig
from polar_hpc.wire.rundir import Component

COMMIT_MARGIN_S = 30.0
REQUEUE_MARGIN_S = 30.0
DEFAULT_STOP_GRACE_S = 90.0
"""For a job pickled without a grace (drain_grace_s default 60 + COMMIT_MARGIN_S)."""


RESUBMITS: dict[Component, int] = {"gateway": 3, "inference": 3}
"""How often the run's monitor (``launch/resubmit.py``) submits a lost job again (cancelled by hand, node lost,
boot failure, crashed, vanished; ``launch/lost.py`` decides), per component slot and per ``launch`` / ``resume``;
once more lost and it stops the run saying why. The coordinator has none: its job hosts the monitor (a lost
coordinator is ``polar-hpc resume``'s)."""


def stop_grace_s(cfg: RunConfig) -> float:
    """Seconds between SIGTERM to a component and SIGKILL to its process tree."""
    return cfg.gateway.drain_grace_s + COMMIT_MARGIN_S


def signal_delay_s(cfg: RunConfig) -> int:
    """Seconds before the time limit at which Slurm signals the job: the whole stop plus the requeue."""
    return math.ceil(stop_grace_s(cfg) + REQUEUE_MARGIN_S)


def cancel_grace_s(cfg: RunConfig) -> float:
    """How long a cancel lets the gateways drain before it kills them: the whole stop plus the requeue margin."""
    return stop_grace_s(cfg) + REQUEUE_MARGIN_S
