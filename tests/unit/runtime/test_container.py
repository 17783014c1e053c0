"""docker / podman specifics: exact command lines, limits, and nothing left behind after a killed gateway."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from polar_hpc.config.run import RunConfig, RuntimeSpec
from polar_hpc.runtime import SandboxStartError, make_runtime
from polar_hpc.runtime.container import (
    ContainerRuntime,
    exec_argv,
    ps_owner_argv,
    remove_stale_containers,
    rm_argv,
    run_argv,
)
from polar_hpc.runtime.naming import instance_name, owner_tag
from polar_hpc.wire.rundir import RunDir
from tests.fixtures.containers import container_engines, container_leftovers
from tests.fixtures.waits import async_wait_for, wait_for

FWD = str(Path(__file__).parents[3] / "polar_hpc/runtime/uds_forward.py")


def test_run_argv_golden() -> None:
    spec = RuntimeSpec(backend="podman", image="docker://swebench/sweb.eval.x86_64.a_1776_b-1:latest",
                       network="none", cpus=2, memory_gb=4, pids_limit=512, binds=["/data:/data"])
    argv = run_argv(spec, engine="podman", name="polar-ab12cd34-r3-s1-0badf00d",
                    session_dir=Path("/runs/r/sessions/rank-00003/s1"), tmp_dir=Path("/scr/tmp"),
                    owner="ab12cd34-r3", proxy_socket=Path("/runs/r/proxy.sock"))
    assert argv[:-1] == [
        "podman", "run", "-d", "--rm", "--name", "polar-ab12cd34-r3-s1-0badf00d", "--pull", "never",
        "--hostname", "polar", "--label", "polar-hpc=1", "--label", "polar-hpc.owner=ab12cd34-r3",
        "--label", "polar-hpc.session=s1", "--network", "none",
        "--cap-drop", "all", "--cap-add", "CHOWN", "--cap-add", "DAC_OVERRIDE", "--cap-add", "FOWNER",
        "--cap-add", "FSETID", "--cap-add", "KILL", "--cap-add", "SETGID", "--cap-add", "SETUID",
        "--security-opt", "no-new-privileges", "--cpus", "2", "--memory", "4096m", "--pids-limit", "512",
        "-v", "/runs/r/sessions/rank-00003/s1:/polar/session", "-v", "/scr/tmp:/tmp",
        "-v", f"{FWD}:/polar/runtime/uds_forward.py:ro", "-v", "/runs/r/proxy.sock:/polar/proxy.sock",
        "-v", "/data:/data:ro",
        "--entrypoint", "/bin/sh", "swebench/sweb.eval.x86_64.a_1776_b-1:latest", "-c",
    ]  # fmt: skip
    assert 'flock "$lock" true & wait $!' in argv[-1] and "/polar/session/.polar-alive" in argv[-1]
    shared = run_argv(RuntimeSpec(backend="docker", image="img", gpus=1), engine="docker", name="n",
                      session_dir=Path("/s"), tmp_dir=Path("/t"), owner=None)
    assert shared[shared.index("--network") + 1] == "host" and "polar-hpc.owner=none" in shared
    assert shared[shared.index("--gpus") + 1] == "1" and "--cpus" not in shared


def test_exec_argv_keeps_values_off_the_command_line() -> None:
    argv, by_name = exec_argv("n", ["bash", "-c", "x"], {"PATH": "/usr/bin", "POLAR_API_KEY": "sk-1", "A": "1"},
                              "/testbed", engine="podman", bridged=True)
    assert argv == [
        "podman", "exec", "-w", "/testbed", "-e", "A", "-e", "PATH=/usr/bin", "-e", "POLAR_API_KEY", "n",
        "python3", "-I", "-S", "/polar/runtime/uds_forward.py", "--listen", "127.0.0.1:28080", "--socket",
        "/polar/proxy.sock", "--", "bash", "-c", "x",
    ]  # fmt: skip
    assert by_name == {"A": "1", "POLAR_API_KEY": "sk-1"}
    with pytest.raises(ValueError, match="not valid"):
        exec_argv("n", ["true"], {"BAD-NAME": "x"}, "/", engine="docker")
    assert rm_argv("n", engine="podman") == ["podman", "rm", "-f", "-t", "0", "--ignore", "n"]
    assert rm_argv("n", engine="docker") == ["docker", "rm", "-f", "n"]
    assert ps_owner_argv("ab-r1", engine="docker") == ["docker", "ps", "-a", "-q", "--filter",
                                                       "label=polar-hpc.owner=ab-r1"]


def test_no_image_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="need a local image name"):
        run_argv(RuntimeSpec(backend="podman"), engine="podman", name="n", session_dir=tmp_path, tmp_dir=tmp_path,
                 owner=None)



@pytest.mark.container
async def test_missing_image_names_images_prepare(tmp_path: Path, podman_image: str) -> None:
    rt = make_runtime(RuntimeSpec(backend="podman", image="localhost/polar-hpc/no-such-image:1"), tmp_path / "s")
    with pytest.raises(SandboxStartError, match="polar-hpc images prepare"):
        await rt.start()
    await rt.stop()


@pytest.mark.container
async def test_limits_are_enforced(tmp_path: Path, podman_image: str) -> None:
    rt = make_runtime(RuntimeSpec(backend="podman", image=podman_image, memory_gb=0.125, pids_limit=32, cpus=0.5),
                      tmp_path / "s")
    stray = Path.cwd() / "oom"
    had = stray.exists()
    await rt.start()
    scratch = rt.scratch
    try:
        limits = await rt.exec("cat /sys/fs/cgroup/pids/pids.max /sys/fs/cgroup/memory/memory.limit_in_bytes "
                               "/sys/fs/cgroup/cpu/cpu.cfs_quota_us /sys/fs/cgroup/cpu/cpu.cfs_period_us")
        assert limits.ok, limits.stderr
        assert limits.stdout.split() == ["32", str(128 * 1024 * 1024), "50000", "100000"]
        # the memory hog before the fork bomb: the bomb's sleeps hold the pids limit, and a hog that cannot start
        # would pass for one the limit killed
        hog = await rt.exec(["python3", "-c", "x = bytearray(512 * 1024 * 1024); print('survived')"], timeout_s=60)
        assert hog.returncode == 128 + 9 and "survived" not in hog.stdout, (hog.returncode, hog.stderr)
        # conmon marks the OOM kill with an empty `oom` file in podman's working directory (a conmon of 2024 or
        # later does not): the session's scratch dir, never the caller's (it was the repository root under pytest)
        deadline = time.monotonic() + 2.0
        while not (scratch / "oom").exists() and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert had or not stray.exists(), f"conmon's oom file landed in {stray.parent}"
        forks = await rt.exec("for i in $(seq 64); do sleep 30 & done; wait", timeout_s=60)
        assert "fork" in forks.stderr.lower() or "resource temporarily unavailable" in forks.stderr.lower()
    finally:
        await rt.stop()


_RANK = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from polar_hpc.config.run import RuntimeSpec
    from polar_hpc.runtime import make_runtime

    async def main():
        rt = make_runtime(RuntimeSpec(backend=sys.argv[3], image=sys.argv[2]), Path(sys.argv[1]))
        await rt.start()
        print("started", flush=True)
        await rt.exec("sleep 600")

    asyncio.run(main())
""")


@pytest.mark.container
@pytest.mark.parametrize("engine", container_engines())
def test_sigkill_of_the_gateway_leaves_no_container(tmp_path: Path, engine: str,
                                                    request: pytest.FixtureRequest) -> None:
    """The gateway holds the container's lifeline (an flock): SIGKILL it and the container goes by itself."""
    image = request.getfixturevalue(f"{engine}_image")
    session = RunDir(tmp_path / "run").sessions(0) / "s-1"
    proc = subprocess.Popen([sys.executable, "-c", _RANK, str(session), image, engine], stdout=subprocess.PIPE,
                            text=True)
    label = f"polar-hpc.session={session.name}"
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "started"
        assert container_leftovers(engine, label) == [instance_name(session)]
    finally:
        proc.kill()
        proc.wait()
    wait_for(lambda: not container_leftovers(engine, label), 30, f"the containers labelled {label} to go",
             interval_s=0.2)
    assert container_leftovers(engine, label) == []


@pytest.mark.container
async def test_restarted_rank_removes_its_leftover_containers(tmp_path: Path, podman_image: str) -> None:
    """A container whose lifeline could not work (no flock or python3 in its image, a stuck PID 1) is removed by
    the next life of its rank, by label; other ranks' containers are left alone."""
    from polar_hpc.gateway.rank import GatewayRank

    run = tmp_path / "run"

    def leftover(rank: int) -> str:
        name = f"polar-test-{owner_tag(run, rank)}-{time.monotonic_ns()}"
        subprocess.run(["podman", "run", "-d", "--rm", "--name", name, "--label", "polar-hpc=1",
                        "--label", f"polar-hpc.owner={owner_tag(run, rank)}", "--network", "none",
                        podman_image, "sleep", "600"], check=True, capture_output=True, timeout=60)
        return name

    mine, other = leftover(1), leftover(2)
    try:
        config = RunConfig(runtime=RuntimeSpec(backend="podman", image=podman_image))
        await GatewayRank(config, 1, run)._stop_stale_instances()
        assert container_leftovers("podman", f"polar-hpc.owner={owner_tag(run, 1)}") == []
        assert container_leftovers("podman", f"polar-hpc.owner={owner_tag(run, 2)}") == [other]
        assert await remove_stale_containers(run, 2, "podman") != []
        assert container_leftovers("podman", f"polar-hpc.owner={owner_tag(run, 2)}") == []
    finally:
        subprocess.run(["podman", "rm", "-f", "-t", "0", "--ignore", mine, other], capture_output=True, timeout=60)


@pytest.mark.container
async def test_session_container_is_labelled_and_gone_after_stop(tmp_path: Path, podman_image: str) -> None:
    session = RunDir(tmp_path / "run").sessions(4) / "t-0"
    rt = make_runtime(RuntimeSpec(backend="podman", image=podman_image), session)
    assert isinstance(rt, ContainerRuntime) and rt.is_root
    await rt.start()
    owner = f"polar-hpc.owner={owner_tag(tmp_path / 'run', 4)}"
    assert container_leftovers("podman", owner) == [rt.name]
    await rt.stop()
    assert container_leftovers("podman", owner) == []
    assert not (session / ".polar-alive").exists()


@pytest.mark.container
async def test_killed_commands_leave_no_zombies(tmp_path: Path, podman_image: str, marker: str) -> None:
    """PID 1 reaps what a timed-out command orphaned (zombies would count against the pids limit)."""
    rt = make_runtime(RuntimeSpec(backend="podman", image=podman_image), tmp_path / "s")
    await rt.start()
    try:
        res = await rt.exec(f"(sleep {marker} &); (sleep {marker} &); sleep {marker}", timeout_s=0.5)
        assert res.timed_out
        zombies = "grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l"
        async def no_zombies() -> bool:
            return (await rt.exec(zombies)).stdout.strip() == "0"

        await async_wait_for(no_zombies, 10, "no zombie processes in the container", interval_s=0.2)
        count = (await rt.exec(zombies)).stdout.strip()
        assert count == "0"
    finally:
        await rt.stop()
