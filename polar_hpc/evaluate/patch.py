"""``swebench``: take the agent's patch, apply it to a fresh copy of the repository, run the tests, grade.

Options: ``repo_dir`` (the repository inside the runtimes; default: the runtime's working dir),
``base_commit`` (diff against it instead of HEAD, so commits the agent made are kept), ``test_command``
(default ``evaluator.command``), ``apply_timeout_s`` (60). FAIL_TO_PASS / PASS_TO_PASS come from the spec or
the task metadata; without them the test command's exit code decides.
"""

from __future__ import annotations

import shlex
import uuid

from polar_hpc.evaluate.base import EvalContext, Evaluator, acquire_runtime, zero
from polar_hpc.evaluate.simple import score_tests, test_lists
from polar_hpc.runtime.base import Runtime
from polar_hpc.wire.records import EvalResult, Trajectory

EXCLUDED = ("**/__pycache__/**", "**/*.pyc", "**/.pytest_cache/**", "**/*.egg-info/**", "**/.mypy_cache/**")

_DIFF = """set -e
export GIT_INDEX_FILE="$(mktemp -u)"
trap 'rm -f "$GIT_INDEX_FILE"' EXIT
git read-tree {base}
git add -A -- . {excludes}
git diff --cached --binary --submodule=diff {base}
"""

_APPLY = """if git apply -v {patch} 1>&2; then echo APPLIED_WITH=git-apply
elif patch --batch --fuzz=5 -p1 -i {patch} 1>&2; then echo APPLIED_WITH=patch-fuzz
else exit 3; fi
"""


async def extract_patch(rt: Runtime, repo_dir: str | None, base: str, timeout_s: float = 120.0) -> str:
    """The workspace's changes (tracked and new files, caches filtered) as a binary git diff against ``base``."""
    excludes = " ".join(shlex.quote(f":(exclude,glob){g}") for g in EXCLUDED)
    res = await rt.exec(["bash", "-c", _DIFF.format(base=shlex.quote(base), excludes=excludes)],
                        timeout_s=timeout_s, cwd=repo_dir)
    if not res.ok:
        raise RuntimeError(f"git diff in {repo_dir or 'the workspace'} failed (exit {res.returncode}, "
                           f"timed out: {res.timed_out}): {res.stderr.strip()[-500:]}")
    return res.stdout


class SWEBenchEvaluator(Evaluator):
    name = "swebench"

    async def evaluate(self, trajectory: Trajectory, ctx: EvalContext) -> EvalResult:
        opts = self.spec.options
        repo_dir: str | None = opts.get("repo_dir")
        command = opts.get("test_command") or self.spec.command
        if not command:
            raise ValueError("evaluator 'swebench' needs evaluator.command or options.test_command")
        if ctx.runtime is None:
            raise ValueError("evaluator 'swebench' needs the session's runtime to extract the patch")
        f2p, p2p = test_lists(self.spec.fail_to_pass, self.spec.pass_to_pass, ctx)
        patch = await extract_patch(ctx.runtime, repo_dir, str(opts.get("base_commit", "HEAD")))
        if not patch.strip():
            return zero("empty_patch")
        rt, owned = await acquire_runtime(ctx, fresh=True)
        try:
            name = f"polar-eval-{uuid.uuid4().hex[:8]}.patch"
            (rt.session_dir / name).write_text(patch)
            inside = shlex.quote(f"{rt.sandbox_session_dir}/{name}")
            applied = await rt.exec(["bash", "-c", _APPLY.format(patch=inside)],
                                    timeout_s=float(opts.get("apply_timeout_s", 60.0)), cwd=repo_dir)
            details: dict[str, object] = {"patch_bytes": len(patch.encode())}
            if not applied.ok:
                return zero("patch_apply_failed", stderr=applied.stderr[-2000:], **details)
            details["applied_with"] = applied.stdout.strip().rpartition("=")[2]
            res = await rt.exec(["bash", "-c", command], timeout_s=self.spec.timeout_s, cwd=repo_dir)
        finally:
            if owned:
                await rt.stop()
        if res.timed_out:
            return zero("timeout", timeout_s=self.spec.timeout_s, **details)
        result = score_tests(res.stdout + "\n" + res.stderr, res.returncode, f2p, p2p, False)
        result.details.update(details)
        return result
