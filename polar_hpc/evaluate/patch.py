"""``swebench``: take the agent's patch, apply it to a fresh copy of the repository, run the tests, grade.

A task imported by ``polar-hpc tasks import`` carries its grading spec (task metadata ``swe_spec``): the patch is
applied and graded exactly as the official SWE-bench harness does (:mod:`polar_hpc.evaluate.swegrade`), and the
result holds the per-test report and the log's tail (option ``use_swebench``, default true: grade with the installed
swebench package, else with polar-hpc's mirror of it). Otherwise, options: ``repo_dir`` (the repository inside the
runtimes; default: the runtime's working dir), ``base_commit`` (diff against it instead of HEAD, so commits the
agent made are kept), ``test_command`` (default ``evaluator.command``), ``apply_timeout_s`` (60). FAIL_TO_PASS /
PASS_TO_PASS come from the spec or the task metadata; without them the test command's exit code decides.
"""

from __future__ import annotations

import asyncio
import shlex
import uuid
from typing import Any

import msgspec

from polar_hpc.evaluate.base import EvalContext, Evaluator, acquire_runtime, zero
from polar_hpc.evaluate.simple import score_tests, test_lists
from polar_hpc.evaluate.swe_spec import SPEC_KEY, GradingSpec
from polar_hpc.runtime.base import Runtime
from polar_hpc.wire.rundir import SESSION_LOGS, SessionDir
from polar_hpc.wire.session import Task
from polar_hpc.wire.traces import EvalResult, Trajectory

LOG_TAIL_CHARS = 4000

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


def grading_spec(metadata: dict[str, Any]) -> GradingSpec | None:
    """The task's grading spec (metadata ``swe_spec``: an object or its JSON text), None when it has none."""
    raw = metadata.get(SPEC_KEY)
    if raw is None:
        return None
    try:
        data = raw.encode() if isinstance(raw, str) else msgspec.json.encode(raw)
        return msgspec.json.decode(data, type=GradingSpec)
    except msgspec.ValidationError as err:
        raise ValueError(f"task metadata {SPEC_KEY}: not a grading spec ({err})") from None


async def apply_model_patch(rt: Runtime, patch: str, repo_dir: str, timeout_s: float) -> tuple[str | None, str]:
    """Apply with the official harness's commands in order; (the command that applied it or None, its output)."""
    from polar_hpc.evaluate.swegrade import GIT_APPLY_CMDS

    name = f"polar-eval-{uuid.uuid4().hex[:8]}.patch"
    (rt.session_dir / name).write_text(patch)
    inside = shlex.quote(f"{rt.sandbox_session_dir}/{name}")
    outputs = []
    for cmd in GIT_APPLY_CMDS:
        res = await rt.exec(["bash", "-c", f"{cmd} {inside}"], timeout_s=timeout_s, cwd=repo_dir)
        outputs.append(f"$ {cmd}\n{res.stdout}{res.stderr}")
        if res.ok:
            return cmd, outputs[-1]
    return None, "\n".join(outputs)


class SWEBenchOptions(msgspec.Struct, kw_only=True):
    repo_dir: str | None = None
    """The repository inside the runtimes (default: the runtime's working dir)."""
    base_commit: str = "HEAD"
    """Diff against it, so commits the agent made are kept."""
    test_command: str | None = None
    """Default: ``evaluator.command``."""
    apply_timeout_s: float = 60.0
    use_swebench: bool = True
    """Grade an imported task with the installed swebench package (else with polar-hpc's mirror of it)."""


class SWEBenchEvaluator(Evaluator):
    name = "swebench"
    Options = SWEBenchOptions
    options: SWEBenchOptions

    def cannot_grade(self, task: Task) -> str | None:
        if SPEC_KEY in task.metadata or self.spec.command or self.options.test_command:
            return None
        return (f"import them with `polar-hpc tasks import` (rows carry {SPEC_KEY}; list it in "
                "tasks.template.metadata_fields) or set evaluator.command")

    async def evaluate(self, trajectory: Trajectory, ctx: EvalContext) -> EvalResult:
        meta = ctx.session.task.metadata if ctx.session is not None else ctx.metadata
        spec = grading_spec(meta)
        if spec is not None:
            return await self._official(spec, ctx)
        opts = self.options
        repo_dir = opts.repo_dir
        command = opts.test_command or self.spec.command
        if not command:
            raise ValueError("evaluator 'swebench' needs evaluator.command or options.test_command")
        if ctx.runtime is None:
            raise ValueError("evaluator 'swebench' needs the session's runtime to extract the patch")
        f2p, p2p = test_lists(self.spec.fail_to_pass, self.spec.pass_to_pass, ctx)
        patch = await extract_patch(ctx.runtime, repo_dir, opts.base_commit)
        if not patch.strip():
            return zero("empty_patch")
        rt, owned = await acquire_runtime(ctx, fresh=True)
        try:
            name = f"polar-eval-{uuid.uuid4().hex[:8]}.patch"
            (rt.session_dir / name).write_text(patch)
            inside = shlex.quote(f"{rt.sandbox_session_dir}/{name}")
            applied = await rt.exec(["bash", "-c", _APPLY.format(patch=inside)],
                                    timeout_s=opts.apply_timeout_s, cwd=repo_dir)
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

    async def _official(self, spec: GradingSpec, ctx: EvalContext) -> EvalResult:
        from polar_hpc.evaluate.swegrade import eval_script, grade_log

        if ctx.runtime is None:
            raise ValueError("evaluator 'swebench' needs the session's runtime to extract the patch")
        f2p, p2p = test_lists(self.spec.fail_to_pass, self.spec.pass_to_pass, ctx)
        patch = await extract_patch(ctx.runtime, spec.repo_dir, spec.base_commit)
        if not patch.strip():
            return zero("empty_patch", instance_id=spec.instance_id)
        details: dict[str, Any] = {"instance_id": spec.instance_id, "patch_bytes": len(patch.encode())}
        rt, owned = await acquire_runtime(ctx, fresh=True)
        try:
            applied, out = await apply_model_patch(rt, patch, spec.repo_dir,
                                                   self.options.apply_timeout_s)
            if applied is None:
                return zero("patch_apply_failed", error="the patch does not apply to the instance's base commit "
                            "(git apply, git apply --reject and patch --fuzz=5 all failed)",
                            log_tail=out[-LOG_TAIL_CHARS:], **details)
            details["applied_with"] = applied
            script = f".polar-eval-{uuid.uuid4().hex[:8]}.sh"
            (rt.session_dir / script).write_text(eval_script(spec))
            log_name = f"{SESSION_LOGS}/eval-{uuid.uuid4().hex[:8]}.log"
            SessionDir(rt.session_dir).logs.mkdir(exist_ok=True)
            inside = f"{rt.sandbox_session_dir}"
            res = await rt.exec(["bash", "-c", f"bash {inside}/{script} > {inside}/{log_name} 2>&1"],
                                timeout_s=self.spec.timeout_s, cwd=spec.repo_dir)
            log_path = rt.session_dir / log_name
            log_text = log_path.read_text(errors="replace") if log_path.exists() else ""
            details["log_tail"] = log_text[-LOG_TAIL_CHARS:]
            if res.timed_out:
                return zero("timeout", timeout_s=self.spec.timeout_s, **details)
            # off the event loop: the first grading imports swebench's harness (and datasets), seconds
            report = await asyncio.to_thread(grade_log, spec, f2p, p2p, str(log_path),
                                             prefer_upstream=self.options.use_swebench)
        finally:
            if owned:
                await rt.stop()
        details.update(resolved=report.resolved, grader=report.grader, tests_parsed=report.statuses,
                       report={"FAIL_TO_PASS": report.fail_to_pass, "PASS_TO_PASS": report.pass_to_pass},
                       failed_tests=report.fail_to_pass["failure"] + report.pass_to_pass["failure"])
        if not report.found:
            details["reason"] = "no_test_output"
        return EvalResult(outcome_reward=1.0 if report.resolved else 0.0, details=details)
