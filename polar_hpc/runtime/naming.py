"""Names of daemonised sandboxes (Apptainer instances, containers): they carry the run and gateway rank, so a
restarted rank finds and removes what its earlier life left behind."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from polar_hpc.wire.rundir import session_rank


def run_tag(run_dir: Path) -> str:
    """8 hex digits naming one run dir (a digest of its resolved path)."""
    return hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:8]


def owner_tag(run_dir: Path, rank: int) -> str:
    """``<run8>-r<rank>``: one gateway rank of one run."""
    return f"{run_tag(run_dir)}-r{rank}"


def instance_prefix(run_dir: Path, rank: int) -> str:
    """``polar-<run8>-r<rank>-``: what every sandbox of one gateway rank of one run is named with."""
    return f"polar-{owner_tag(run_dir, rank)}-"


def session_owner(session_dir: Path) -> str | None:
    """The :func:`owner_tag` of a session dir under ``<run>/sessions/rank-NNNNN/``, else None."""
    found = session_rank(session_dir)
    return owner_tag(*found) if found else None


def instance_name(session_dir: Path) -> str:
    """``<prefix><id20>-<sha8>``: readable, unique per session dir, valid as an Apptainer instance or container
    name; the prefix names the run and gateway rank (:func:`instance_prefix`) where the session dir lies in a
    run's tree, else it is plain ``polar-``."""
    session_dir = Path(session_dir).resolve()
    tag = re.sub(r"[^A-Za-z0-9_.-]", "-", session_dir.name)[:20]
    digest = hashlib.sha256(str(session_dir).encode()).hexdigest()[:8]
    owner = session_owner(session_dir)
    return f"polar-{owner + '-' if owner else ''}{tag}-{digest}"
