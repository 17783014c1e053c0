"""Did the oracle's gold patch land? After an oracle session graded below full reward, the session's workspace is
asked whether the task's ``solution_patch`` is in it (it reverses cleanly). If not, git says why it does not apply,
so a stale or broken gold patch reads as such in the failure reason, not as "test command exited 1"."""

from __future__ import annotations

import shlex
import uuid

from polar_hpc.runtime.base import Runtime

GOLD_PATCH = "gold_patch"
"""``EvalResult.details`` key: why the oracle's gold patch is not in the workspace (absent when it is)."""
CHECK_TIMEOUT_S = 60.0


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[0][:200] if lines else "no reason given"


async def gold_patch_problem(rt: Runtime, patch: str, timeout_s: float = CHECK_TIMEOUT_S) -> str | None:
    """None when ``patch`` is applied in ``rt``'s workspace, else one line saying why it is not."""
    name = f".polar-gold-{uuid.uuid4().hex[:8]}.patch"
    path = rt.session_dir / name
    path.write_text(patch)
    inside = shlex.quote(f"{rt.sandbox_session_dir}/{name}")
    try:
        applied = await rt.exec(["bash", "-c", f"git apply --reverse --check {inside}"], timeout_s=timeout_s)
        if applied.ok:
            return None
        fresh = await rt.exec(["bash", "-c", f"git apply --check {inside}"], timeout_s=timeout_s)
    finally:
        path.unlink(missing_ok=True)
    if fresh.ok:
        return "the gold patch was not applied (it still applies to the workspace)"
    return f"the gold patch does not apply: {_first_line(fresh.stderr or fresh.stdout)}"
