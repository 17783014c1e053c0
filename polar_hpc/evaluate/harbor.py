"""``harbor``: grade as Harbor's verifier does. After the agent ends, the task's ``tests/`` folder is copied to
``/tests`` in the session's container and ``/tests/test.sh`` runs there (cwd: the task's workdir, output to
``/logs/verifier/test-stdout.txt``, under the task's ``[verifier] timeout_sec``); the reward is what it wrote:
``/logs/verifier/reward.json`` (an object name -> number: its ``reward``, or its only value) else ``reward.txt``
(one number). No reward file, or one that is not a finite number, is an evaluation error (Harbor raises), not a
score. Facts from harbor 0.25's ``verifier/verifier.py`` and ``models/trial/paths.py``.

``/tests`` and ``/logs`` must be writable: a container's root is (podman / docker / apptainer with an overlay); in
bwrap they are folders of the session's own (``runtime.scratch_dirs``, set by ``tasks/harbor.py`` for a task whose
Dockerfile bwrap can stand in for).
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
import uuid
from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.evaluate.base import EVALUATION_ERROR, EvalContext, Evaluator, acquire_runtime, zero
from polar_hpc.wire.traces import EvalResult, Trajectory

HARBOR_KEY = "harbor"
"""Task row and metadata key of :class:`HarborMeta`."""
TESTS = "tests"
TEST_SCRIPT = "tests/test.sh"
VERIFIER_DIR = "/logs/verifier"
REWARD_FILES = ("reward.json", "reward.txt")
OUTPUT_TAIL = 4000


class HarborMeta(msgspec.Struct, kw_only=True, frozen=True):
    task_dir: str
    """The task folder (absolute, on a filesystem the gateway sees): ``tests/`` is copied from here."""
    name: str = ""
    """``[task].name`` of task.toml, when it has one."""
    agent_timeout_s: float | None = None
    verifier_timeout_s: float = 600.0
    cpus: float | None = None
    memory_gb: float | None = None
    workdir: str | None = None
    """``[environment].workdir``, else the Dockerfile's last ``WORKDIR``: where the agent and test.sh run."""
    uploads: list[str] = msgspec.field(default_factory=list)
    """bwrap: the Dockerfile's ``COPY`` lines as ``SRC:DST`` (``SRC`` a host path in the task's environment/)."""
    needs_image: str | None = None
    """Why bwrap cannot stand in for the task's image (a line of its Dockerfile); None: it can."""


_VERIFY = """set -u
mkdir -p /tests {vdir} && find /tests {vdir} -mindepth 1 -delete
cp -a {src}/. /tests/
bash /tests/test.sh > {vdir}/test-stdout.txt 2>&1
rc=$?
cp -a {vdir}/. {out}/ 2>/dev/null
exit $rc
"""


def read_reward(folder: Path) -> float:
    """The reward Harbor would read from a copy of ``/logs/verifier`` (raises ValueError saying what is wrong)."""
    js, txt = folder / REWARD_FILES[0], folder / REWARD_FILES[1]
    if js.is_file():
        try:
            data: Any = json.loads(js.read_text())
        except json.JSONDecodeError as err:
            raise ValueError(f"{VERIFIER_DIR}/reward.json is not JSON ({err})") from None
        if isinstance(data, dict):
            if "reward" not in data and len(data) != 1:
                raise ValueError(f"{VERIFIER_DIR}/reward.json has no 'reward' among {sorted(data)}")
            value = data.get("reward", next(iter(data.values()), None))
        else:
            value = data
    elif txt.is_file():
        text = txt.read_text().strip()
        if not text:
            raise ValueError(f"{VERIFIER_DIR}/reward.txt is empty")
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{VERIFIER_DIR}/reward.txt is not a number: {text[:60]!r}") from None
    else:
        raise ValueError(f"test.sh wrote no reward ({VERIFIER_DIR}/reward.txt or reward.json)")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"the reward is not a finite number: {value!r}")
    return float(value)


def harbor_meta(metadata: dict[str, Any]) -> HarborMeta:
    raw = metadata.get(HARBOR_KEY)
    if raw is None:
        raise ValueError(f"evaluator 'harbor' needs task metadata {HARBOR_KEY!r} (rows of `polar-hpc tasks import "
                         f"harbor`, with tasks.template.metadata_fields = [\"{HARBOR_KEY}\"])")
    return msgspec.convert(raw, HarborMeta)


class HarborEvaluator(Evaluator):
    name = "harbor"

    async def evaluate(self, trajectory: Trajectory, ctx: EvalContext) -> EvalResult:
        meta = harbor_meta(ctx.session.task.metadata if ctx.session is not None else ctx.metadata)
        tests = Path(meta.task_dir) / TESTS
        if not (Path(meta.task_dir) / TEST_SCRIPT).is_file():
            raise ValueError(f"harbor task {meta.task_dir}: no {TEST_SCRIPT}")
        timeout_s = meta.verifier_timeout_s
        rt, owned = await acquire_runtime(ctx, self.spec.fresh_runtime)
        stage = rt.session_dir / f".polar-harbor-{uuid.uuid4().hex[:8]}"
        try:
            shutil.copytree(tests, stage / TESTS)
            (stage / "verifier").mkdir()
            inside = f"{rt.sandbox_session_dir}/{stage.name}"
            script = _VERIFY.format(vdir=VERIFIER_DIR, src=shlex.quote(f"{inside}/{TESTS}"),
                                    out=shlex.quote(f"{inside}/verifier"))
            res = await rt.exec(["bash", "-c", script], timeout_s=timeout_s, cwd=meta.workdir)
            out = stage / "verifier" / "test-stdout.txt"
            tail = out.read_text(errors="replace")[-OUTPUT_TAIL:] if out.is_file() else res.stderr[-OUTPUT_TAIL:]
            details: dict[str, Any] = {"returncode": res.returncode, "output_tail": tail,
                                       "duration_s": res.duration_s}
            if res.timed_out:
                return zero("timeout", timeout_s=timeout_s, **details)
            try:
                reward = read_reward(stage / "verifier")
            except ValueError as err:
                return zero(EVALUATION_ERROR, error=f"harbor task {meta.name or meta.task_dir}: {err} "
                            f"(test.sh exited {res.returncode})", **details)
        finally:
            shutil.rmtree(stage, ignore_errors=True)
            if owned:
                await rt.stop()
        return EvalResult(outcome_reward=reward, details=details)
