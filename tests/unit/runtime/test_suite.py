"""The runtime contract, run for real against every sandbox backend here: bubblewrap and podman containers.

Isolation, private /tmp, network bridge, process cleanup on timeout and stop, transfers, prepare, environment,
secrets out of command lines."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime import SandboxStateError, make_runtime
from polar_hpc.runtime.base import PrepareError
from polar_hpc.runtime.common import SandboxBase
from polar_hpc.runtime.prepare import run_prepare
from tests.fixtures.containers import container_engines  # noqa: E402
from tests.fixtures.waits import async_wait_for
from tests.unit.runtime.conftest import pids_with

BACKENDS = ["bwrap", *(pytest.param(e, marks=pytest.mark.container) for e in container_engines())]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    name: str = request.param
    request.getfixturevalue("need_bwrap" if name == "bwrap" else f"{name}_image")
    return name


def spec_for(backend: str, **spec: object) -> RuntimeSpec:
    if backend != "bwrap":
        from tests.fixtures.containers import TEST_IMAGE

        spec.setdefault("image", TEST_IMAGE)
    return RuntimeSpec(backend=backend, **spec)  # type: ignore[arg-type]


@pytest.fixture
async def sandboxes(tmp_path: Path, backend: str) -> AsyncIterator[Callable[..., object]]:
    started: list[SandboxBase] = []

    async def make(name: str, proxy_socket: Path | None = None, **spec: object) -> SandboxBase:
        rt = make_runtime(spec_for(backend, **spec), tmp_path / name, proxy_socket=proxy_socket)
        assert isinstance(rt, SandboxBase) and rt.backend == backend
        await rt.start()
        started.append(rt)
        return rt

    yield make
    for rt in started:
        await rt.stop()


async def test_session_dir_is_at_polar_session(sandboxes) -> None:  # type: ignore[no-untyped-def]
    rt = await sandboxes("s1")
    (rt.session_dir / "work" / "hello.txt").write_text("from host")
    res = await rt.exec("cat hello.txt; pwd; echo made > /polar/session/out.txt")
    assert res.ok, res.stderr
    assert res.stdout == "from host/polar/session/work\n"
    assert (rt.session_dir / "out.txt").read_text() == "made\n"


async def test_cannot_see_other_session_or_host_files(sandboxes, backend: str) -> None:  # type: ignore[no-untyped-def]
    a = await sandboxes("a")
    b = await sandboxes("b")
    (b.session_dir / "secret.txt").write_text("b's secret")
    res = await a.exec(f"cat {b.session_dir}/secret.txt")
    assert res.returncode != 0 and "No such file" in res.stderr
    hidden = ["/work", str(b.session_dir.parent), str(Path(__file__).parent)]
    if backend == "bwrap":
        hidden += ["/root", "/home"]  # containers have the image's (empty) ones
    for path in hidden:
        res = await a.exec(["ls", path])
        assert res.returncode != 0, f"{path} visible in sandbox: {res.stdout}"
    res = await a.exec("touch /usr/polar-x")
    if backend == "bwrap":
        assert res.returncode != 0 and "Read-only" in res.stderr
    else:  # a container's root is its own copy-on-write layer: writable, seen by no other session
        assert res.ok, res.stderr
        assert (await b.exec("ls /usr/polar-x")).returncode != 0


async def test_tmp_is_private_and_persists_between_commands(sandboxes) -> None:  # type: ignore[no-untyped-def]
    a = await sandboxes("a")
    b = await sandboxes("b")
    assert (await a.exec("echo mine > /tmp/polar-test-private")).ok
    assert (await a.exec("cat /tmp/polar-test-private")).stdout == "mine\n"
    assert (await b.exec("cat /tmp/polar-test-private")).returncode != 0
    assert not Path("/tmp/polar-test-private").exists()


async def test_unshared_network_cannot_reach_host_tcp(sandboxes, tcp_http: int) -> None:  # type: ignore[no-untyped-def]
    probe = f"curl -sS --max-time 5 http://127.0.0.1:{tcp_http}/x || python3 -c 'import urllib.request as u; print(u.urlopen(\"http://127.0.0.1:{tcp_http}/x\").read())'"
    shared = await sandboxes("shared", network="shared")
    assert "hello from /x" in (await shared.exec(probe, timeout_s=20)).stdout
    isolated = await sandboxes("isolated", network="none")
    res = await isolated.exec(probe, timeout_s=20)
    assert res.returncode != 0 and "hello" not in res.stdout
    assert "refused" in res.stderr.lower()


async def test_unshared_network_reaches_proxy_socket_via_forwarder(sandboxes, unix_http: Path) -> None:  # type: ignore[no-untyped-def]
    rt = await sandboxes("bridged", proxy_socket=unix_http, network="none")
    url = rt.proxy_base_url("http://127.0.0.1:1")
    assert url.startswith("http://127.0.0.1:") and url != "http://127.0.0.1:1"
    script = (
        "import urllib.request as u, sys\n"
        f"for p in ('/v1/models', '/v1/chat/completions'): print(u.urlopen('{url}' + p).read().decode())\n"
    )
    res = await rt.exec(["python3", "-c", script], timeout_s=30)
    assert res.ok, res.stderr
    assert res.stdout.splitlines() == ["hello from /v1/models", "hello from /v1/chat/completions"]
    # the forwarder lives only as long as the command
    assert pids_with("uds_forward.py --listen") == []


async def test_timeout_kills_sandbox_tree(sandboxes, marker: str) -> None:  # type: ignore[no-untyped-def]
    rt = await sandboxes("t")
    res = await rt.exec(f"sleep {marker} & (sleep {marker} &); sleep {marker}", timeout_s=0.5)
    assert res.timed_out
    assert pids_with(marker) == []
    assert (await rt.exec("echo still usable")).stdout == "still usable\n"


@pytest.mark.parametrize("wait_started", [True, False])
async def test_stop_kills_running_exec_and_removes_scratch(tmp_path: Path, backend: str, marker: str,
                                                           wait_started: bool) -> None:
    rt = make_runtime(spec_for(backend), tmp_path / "s")
    await rt.start()
    assert isinstance(rt, SandboxBase)
    scratch = rt.scratch
    task = asyncio.create_task(rt.exec(f"sleep {marker}"))
    deadline = time.monotonic() + (30.0 if wait_started else 0.002)
    while time.monotonic() < deadline:
        if pids_with(marker):
            break
        await asyncio.sleep(0.001)
    assert pids_with(marker) or not wait_started
    await rt.stop()
    await rt.stop()
    res = await asyncio.wait_for(task, 10)
    assert res.returncode != 0  # -15, or 143 when bwrap saw its child die before its own SIGTERM
    assert pids_with(marker) == [] and not scratch.exists()
    assert (tmp_path / "s").is_dir()  # the session dir is the gateway's to delete
    with pytest.raises(SandboxStateError):
        await rt.exec("true")


async def test_upload_download(sandboxes, tmp_path: Path, backend: str) -> None:  # type: ignore[no-untyped-def]
    from polar_hpc.runtime import SandboxError

    rt = await sandboxes("u")
    src = tmp_path / "repo"
    (src / "pkg").mkdir(parents=True)
    (src / "pkg" / "a.py").write_text("x = 1\n")
    await rt.upload(src, "/polar/session/work/repo")
    await rt.upload(src / "pkg" / "a.py", "/tmp/a.py")
    res = await rt.exec("cat repo/pkg/a.py /tmp/a.py && echo y > /tmp/b.txt")
    assert res.stdout == "x = 1\nx = 1\n"
    await rt.download("/tmp/b.txt", tmp_path / "out" / "b.txt")
    await rt.download("/polar/session/work/repo", tmp_path / "back")
    assert (tmp_path / "out" / "b.txt").read_text() == "y\n"
    assert (tmp_path / "back" / "pkg" / "a.py").read_text() == "x = 1\n"
    if backend == "bwrap":
        with pytest.raises(SandboxError, match="does not persist"):
            await rt.upload(src, "/opt/repo")
    else:  # a container keeps its own filesystem between commands: anywhere goes, through an exec
        await rt.upload(src, "/opt/repo")
        await rt.download("/opt/repo/pkg/a.py", tmp_path / "opt-back.py")
        assert (tmp_path / "opt-back.py").read_text() == "x = 1\n"


async def test_prepare_retries_then_succeeds_or_raises(sandboxes) -> None:  # type: ignore[no-untyped-def]
    rt = await sandboxes("p")
    flaky = "n=$(cat /tmp/n 2>/dev/null || echo 0); echo $((n+1)) > /tmp/n; [ $n -ge 1 ]"
    results = await run_prepare(rt, ["echo one", flaky], retries=2, backoff_s=0.01, timeout_s=60)
    assert [r.stdout for r in results] == ["one\n", ""]
    with pytest.raises(PrepareError, match="exit 7 after 2 attempt") as err:
        await run_prepare(rt, ["exit 7"], retries=1, backoff_s=0.01)
    assert err.value.result is not None and err.value.result.returncode == 7


async def test_env_is_cleared_and_set(sandboxes, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("POLAR_LEAK_CHECK", "host-value")
    rt = await sandboxes("e", env={"FROM_SPEC": "1", "MULTI": "a\nb=c"})
    res = await rt.exec("env | sort; printf '%s|' \"$MULTI\"", env={"FROM_EXEC": "2"})
    keys = {line.split("=", 1)[0] for line in res.stdout.splitlines()}
    assert "POLAR_LEAK_CHECK" not in keys
    assert {"FROM_SPEC", "FROM_EXEC", "HOME", "PATH"} <= keys
    assert "HOME=/polar/session/home" in res.stdout
    assert res.stdout.endswith("a\nb=c|")


async def test_secrets_stay_out_of_every_command_line(sandboxes, marker: str) -> None:  # type: ignore[no-untyped-def]
    """Session keys and runtime.env secrets reach the command through its environment, never through an argv
    (``/proc/<pid>/cmdline`` of the sandbox tool and of everything it runs is readable by every user)."""
    key, spec_secret = f"sk-{uuid.uuid4().hex}", f"pw-{uuid.uuid4().hex}"
    rt = await sandboxes("k", env={"SPEC_SECRET": spec_secret})
    task = asyncio.create_task(rt.exec(f"sleep {marker}", env={"POLAR_API_KEY": key}))
    await async_wait_for(lambda: bool(pids_with(marker)), 30, f"the sandboxed sleep {marker}")
    sleeper = pids_with(marker)
    assert sleeper
    try:
        assert pids_with(key) == [] and pids_with(spec_secret) == []
        environ = Path(f"/proc/{sleeper[0]}/environ").read_bytes().split(b"\0")
        assert f"POLAR_API_KEY={key}".encode() in environ and f"SPEC_SECRET={spec_secret}".encode() in environ
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
