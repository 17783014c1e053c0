"""The real stage work of a session: sandbox, prepare, harness behind the proxy, build, evaluate, teardown."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import msgspec

from polar_hpc.config.run import RunConfig, RuntimeSpec
from polar_hpc.evaluate.base import EvalContext, fresh_runtime_budget_s
from polar_hpc.evaluate.gold import GOLD_PATCH, gold_patch_problem
from polar_hpc.gateway.stages import AgentOutcome, SessionJob
from polar_hpc.harness import HarnessContext, get_adapter
from polar_hpc.harness.toolchain import HarnessLaunch, resolve_harness
from polar_hpc.log import get_logger
from polar_hpc.policy.script import OracleScript, script_from_task
from polar_hpc.postrun.session import build_trajectory, evaluate_trajectory
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.runtime import Runtime, make_runtime
from polar_hpc.runtime.prepare import run_prepare
from polar_hpc.util.fs import unique_name
from polar_hpc.wire.calls import CompletionRecord
from polar_hpc.wire.rundir import SessionDir
from polar_hpc.wire.session import SANDBOX_SOLUTION_DIR, SOLUTION_DIR, SOLUTION_PATCH
from polar_hpc.wire.traces import EvalResult, TraceStatus, Trajectory

log = get_logger("gateway.executor")

LOG_TAIL_BYTES = 4000


class SessionState:
    """What the executor holds for one session (``SessionJob.state``)."""

    def __init__(self, session_dir: Path) -> None:
        self.session_dir = session_dir
        self.api_key: str | None = None
        self.runtime: Runtime | None = None
        self.eval_runtimes: list[Runtime] = []
        self.prewarmed: Runtime | None = None
        self.launch: HarnessLaunch | None = None
        """How the harness CLI starts in a host-rooted sandbox (``resolve_harness``); None: by its name."""
        self.records: list[CompletionRecord] | None = None
        self.harness_log = SessionDir(session_dir).harness_log


class SessionExecutor:
    """Implements :class:`polar_hpc.gateway.stages.SessionExecutor` against the rank's proxy.

    ``proxy``: the rank's proxy (``open_session`` / ``close_session``); ``proxy_url`` its host base URL.
    """

    def __init__(self, config: RunConfig, *, proxy: ProxyServer, proxy_url: str, proxy_socket: Path | None,
                 sessions_dir: Path, end_of_turn_id: int | None, keep_session_dirs: bool = False) -> None:
        self.config = config
        self.proxy = proxy
        self.proxy_url = proxy_url
        self.proxy_socket = proxy_socket
        self.sessions_dir = sessions_dir
        self.end_of_turn_id = end_of_turn_id
        self.keep_session_dirs = keep_session_dirs

    # -- INIT -------------------------------------------------------------------------------------------------
    def _state(self, job: SessionJob) -> SessionState:
        if job.state is None:
            job.state = SessionState(self.sessions_dir / unique_name(job.session_id))
        assert isinstance(job.state, SessionState)
        return job.state

    def _spec(self, job: SessionJob) -> RuntimeSpec:
        return job.session.task.runtime

    def _with_harness(self, job: SessionJob, spec: RuntimeSpec) -> RuntimeSpec:
        """The host's CLI for the session's harness (maybe under a Node of its own) and the binds it needs."""
        agent = job.session.task.agent
        if agent.harness == "shell":
            return spec
        launch = resolve_harness(get_adapter(agent.harness).binary)
        self._state(job).launch = launch
        return msgspec.structs.replace(spec, binds=[*spec.binds, *launch.binds]) if launch.binds else spec

    async def _new_runtime(self, job: SessionJob, subdir: str | None) -> Runtime:
        st = self._state(job)
        spec = self._spec(job)
        root = st.session_dir if subdir is None else st.session_dir / subdir
        if subdir is None and spec.image is None:
            spec = self._with_harness(job, spec)
        solution = self._solution_dir(job) if subdir is None else None
        if solution is not None and SANDBOX_SOLUTION_DIR not in spec.scratch_dirs:
            spec = msgspec.structs.replace(spec, scratch_dirs=[*spec.scratch_dirs, SANDBOX_SOLUTION_DIR])
        socket = self.proxy_socket if spec.network == "none" else None
        rt = make_runtime(spec, root, proxy_socket=socket,
                          serve_listener=self.proxy.serve_listener if spec.network == "none" else None)
        if subdir is None:
            st.runtime = rt
        else:
            st.eval_runtimes.append(rt)
        await rt.start()
        for item in spec.uploads:
            host, _, dst = item.partition(":")
            if not host or not dst.startswith("/"):
                raise ValueError(f"runtime.uploads: expected SRC:DST with an absolute DST, got {item!r}")
            await rt.upload(Path(host), dst)
        if solution is not None:
            await rt.upload(solution, SANDBOX_SOLUTION_DIR)
        workspace = job.session.task.workspace
        if workspace:
            src = Path(workspace)
            if not src.is_dir():
                raise FileNotFoundError(f"task {job.session.task.task_id}: workspace {src} is not a folder")
            await rt.upload(src, spec.workdir)
        return rt

    def _solution_dir(self, job: SessionJob) -> Path | None:
        """The host folder of the task's solution files when its agent applies the solution (``oracle``,
        ``oracle_subagent``), else None: a sampled or no-op session never sees it."""
        task = job.session.task
        folder = task.metadata.get(SOLUTION_DIR)
        if task.agent.policy in ("sample", "oracle_noop") or folder is None:
            return None
        path = Path(str(folder))
        if not path.is_dir():
            raise FileNotFoundError(f"task {task.task_id}: {SOLUTION_DIR} {path} is not a folder")
        return path

    async def _prepare(self, job: SessionJob, rt: Runtime, timeout_s: float | None = None) -> None:
        """Prepare under ``timeout_s``, by default what is left of the session budget."""
        spec = self._spec(job)
        if not spec.prepare:
            return
        if timeout_s is None:
            timeout_s = max(1.0, job.deadline - asyncio.get_running_loop().time())
        await run_prepare(rt, list(spec.prepare), retries=spec.prepare_retries, timeout_s=timeout_s,
                          log_path=SessionDir(rt.session_dir).prepare_log)

    def _eval_prepare_budget(self, job: SessionJob) -> float:
        """A fresh evaluation runtime has its own budget: the session's may be spent by the time it is needed."""
        return fresh_runtime_budget_s(job.session.task.evaluator)

    async def start(self, job: SessionJob) -> None:
        st = self._state(job)
        st.session_dir.mkdir(parents=True, exist_ok=True)
        agent = job.session.task.agent
        proxy_turns = None if get_adapter(agent.harness).own_turn_limit else agent.max_turns
        st.api_key = self.proxy.open_session(job.session_id, oracle=self._oracle_script(job), max_turns=proxy_turns)
        await self._new_runtime(job, None)

    def _oracle_script(self, job: SessionJob) -> OracleScript | None:
        """The session's oracle script when its agent runs under the oracle policy (``agent.policy``), else None."""
        task = job.session.task
        agent = task.agent
        if agent.policy == "sample":
            return None
        evaluator = task.evaluator
        return script_from_task(task.metadata, policy=agent.policy, verify=evaluator.command, task=task.task_id,
                                actions=get_adapter(agent.harness).action_format(agent))

    async def prepare(self, job: SessionJob) -> None:
        st = self._state(job)
        assert st.runtime is not None
        await self._prepare(job, st.runtime)

    def wants_prewarm(self, job: SessionJob) -> bool:
        ev = job.session.task.evaluator
        return bool(ev.fresh_runtime)

    async def prewarm(self, job: SessionJob) -> None:
        st = self._state(job)
        rt = await self._new_runtime(job, "eval-0")
        await self._prepare(job, rt, self._eval_prepare_budget(job))
        st.prewarmed = rt

    # -- RUN --------------------------------------------------------------------------------------------------
    async def run(self, job: SessionJob, budget_s: float) -> AgentOutcome:
        st = self._state(job)
        rt = st.runtime
        assert rt is not None and st.api_key is not None
        task = job.session.task
        agent = task.agent
        adapter = get_adapter(agent.harness)
        ctx = HarnessContext(
            instruction=task.instruction,
            base_url=rt.proxy_base_url(self.proxy_url),
            api_key=st.api_key,
            model=self.config.inference.served_model_name,
            agent=agent,
            session_dir=str(st.session_dir),
            sandbox_session_dir=rt.sandbox_session_dir,
            is_root=rt.is_root,
            workdir=self._spec(job).workdir,
            session_id=job.session_id,
        )
        cmd = await asyncio.to_thread(adapter.prepare, ctx)
        st.harness_log = Path(cmd.log_path)
        st.harness_log.parent.mkdir(parents=True, exist_ok=True)
        argv = cmd.argv
        if st.launch is not None and argv[:1] == [adapter.binary]:
            argv = [*st.launch.argv, *argv[1:]]
        harness = asyncio.create_task(rt.exec(argv, env=cmd.env, cwd=cmd.cwd, timeout_s=budget_s,
                                              log_path=st.harness_log))
        lost = asyncio.create_task(self.proxy.wait_engine_lost(st.api_key))
        turns = asyncio.create_task(self.proxy.wait_turn_limit(st.api_key))
        try:
            await asyncio.wait([harness, lost, turns], return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (harness, lost, turns):
                t.cancel()
            await asyncio.gather(harness, lost, turns, return_exceptions=True)
        why = self.proxy.engine_lost(st.api_key)
        if why is not None:  # the harness saw no model server: a cut by the system, not the harness's outcome
            job.released = f"its engine went away: {why}"
            return AgentOutcome(status="error", detail=job.released)
        limit = self.proxy.turn_limited(st.api_key)
        if limit is not None:  # a harness without a turn limit of its own, stopped here
            return AgentOutcome(status="timeout", detail=f"agent.max_turns={limit} reached: the proxy refused the "
                                "next model call and the harness was stopped")
        res = harness.result()
        if res.timed_out:
            return AgentOutcome(status="timeout", returncode=res.returncode,
                                detail=f"agent budget {budget_s:.0f}s spent")
        if res.returncode != 0:
            return AgentOutcome(status="failed", returncode=res.returncode,
                                detail=f"harness exited {res.returncode}: {res.stderr.strip()[-300:]}")
        return AgentOutcome(status="completed", returncode=0)

    # -- POSTRUN ----------------------------------------------------------------------------------------------
    def _close_proxy_session(self, st: SessionState) -> list[CompletionRecord]:
        if st.records is None:
            st.records = list(self.proxy.close_session(st.api_key)) if st.api_key is not None else []
        return st.records

    async def build(self, job: SessionJob, status: TraceStatus) -> Trajectory:
        st = self._state(job)
        records = self._close_proxy_session(st)
        spec = job.session.task.builder
        return await asyncio.to_thread(build_trajectory, records, spec, status, end_of_turn_id=self.end_of_turn_id)

    async def evaluate(self, job: SessionJob, trajectory: Trajectory) -> EvalResult | None:
        st = self._state(job)
        spec = job.session.task.evaluator

        async def new_runtime() -> Runtime:
            if st.prewarmed is not None:
                rt, st.prewarmed = st.prewarmed, None
                return rt
            rt = await self._new_runtime(job, f"eval-{len(st.eval_runtimes)}")
            await self._prepare(job, rt, self._eval_prepare_budget(job))
            return rt

        ctx = EvalContext(session=job.session, runtime=st.runtime, new_runtime=new_runtime,
                          metadata=dict(job.session.task.metadata))
        result = await evaluate_trajectory(spec, trajectory, ctx)
        await self._check_gold_patch(job, result)
        return result

    async def _check_gold_patch(self, job: SessionJob, result: EvalResult) -> None:
        """An oracle session graded below full reward: say in the result whether its gold patch landed."""
        st = self._state(job)
        patch = job.session.task.metadata.get(SOLUTION_PATCH)
        if (job.session.task.agent.policy != "oracle" or not isinstance(patch, str) or st.runtime is None
                or result.outcome_reward >= 1.0):
            return
        try:
            problem = await gold_patch_problem(st.runtime, patch)
        except Exception as err:  # the check only explains a grade; it never changes one
            log.warning("session %s: checking the gold patch failed: %r", job.session_id, err)
            return
        if problem is not None:
            result.details[GOLD_PATCH] = problem

    async def teardown(self, job: SessionJob) -> None:
        if job.state is None:
            return
        st = self._state(job)
        runtimes = [rt for rt in [st.runtime, *st.eval_runtimes] if rt is not None]
        results = await asyncio.gather(*(rt.stop() for rt in runtimes), return_exceptions=True)
        for rt, res in zip(runtimes, results, strict=True):
            if isinstance(res, BaseException):
                log.error("session %s: stopping runtime %s failed: %r", job.session_id, rt.session_dir, res)
        try:
            self._close_proxy_session(st)
        except Exception as err:
            log.warning("session %s: closing proxy session: %r", job.session_id, err)
        tail = log_tail(st.harness_log)
        if tail:
            job.notes.harness_log_tail = tail
        if not self.keep_session_dirs:
            await asyncio.to_thread(shutil.rmtree, st.session_dir, True)


def log_tail(path: Path, nbytes: int = LOG_TAIL_BYTES) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            fh.seek(max(0, size - nbytes))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""
