"""``Backend``: every fact polar-hpc holds about one runtime backend, beside its ``Runtime`` class.

A backend module (``runtime/bwrap.py``, ``apptainer.py``, ``container.py``, ``local.py``) holds its ``Runtime``
and a ``Backend`` instance; ``config.run.RUNTIME_BACKENDS`` lists them. Doctor, both preflights, the gateway rank's
crash cleanup, ``images prepare``, the Harbor import and the capacity check ask the backend, never its name.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from polar_hpc.config.run import RuntimeSpec

if TYPE_CHECKING:
    from polar_hpc.runtime.base import Runtime
    from polar_hpc.runtime.handoff import ServeListener


class Finding(msgspec.Struct, kw_only=True):
    """One ``polar-hpc doctor`` line (a backend's, or any other check's)."""

    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = False


def run_quiet(argv: list[str], timeout_s: float = 20.0, sep: str = " / ") -> tuple[int, str]:
    """Exit status and the non-empty output lines (stdout, then stderr) joined by ``sep``; 127 if it cannot run."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except (OSError, subprocess.SubprocessError) as err:
        return 127, str(err)
    return out.returncode, sep.join(line.strip() for line in (out.stdout + out.stderr).splitlines() if line.strip())


class Backend:
    """The defaults: a backend that needs nothing on the node and no image."""

    name: str = ""
    images_engine: str | None = None
    """The ``polar-hpc images prepare --engine`` that fills this backend's image cache (None: it has none)."""
    prepare_hint: str = ""
    """Where a task's missing image goes (preflight's advice); empty: ``<name> with `polar-hpc images prepare```."""
    sets_resources: bool = False
    """``runtime.cpus`` / ``memory_gb`` limit a sandbox (a Harbor task's own sizes are applied)."""
    read_only_root: bool = False
    """The sandbox's root is the host's (or a folder), read-only: a Harbor task's folders become scratch dirs."""

    def make(self, spec: RuntimeSpec, session_dir: Path, *, proxy_socket: Path | None = None,
             serve_listener: ServeListener | None = None) -> Runtime:
        raise NotImplementedError

    def missing(self) -> str | None:
        """Why this node cannot run the backend (a binary not on PATH), for preflight; None when it can."""
        return None

    def doctor(self, chosen: bool) -> list[Finding]:
        """``polar-hpc doctor``'s lines (``chosen``: the recipe's backend)."""
        return []

    def images_here(self) -> set[str] | None:
        """The images this node holds, where the backend can list them (None: it cannot, or need not)."""
        return None

    def image_missing(self, rt: RuntimeSpec, have: set[str] | None) -> bool:
        """A session of ``rt`` cannot start: its image is not prepared (``have``: ``images_here()``)."""
        return False

    def forwarder(self, rt: RuntimeSpec) -> bool:
        """A sandbox of ``rt`` with ``network = "none"`` runs the in-sandbox forwarder to the proxy."""
        return True

    async def stop_stale(self, run_dir: Path, rank: int) -> None:
        """Stop what an earlier life of this run's rank left running (daemons that outlive a crash)."""
