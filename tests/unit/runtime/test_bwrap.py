"""bubblewrap specifics: its exact command line. The runtime contract itself runs in test_suite.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime.bwrap import bwrap_argv

pytestmark = pytest.mark.usefixtures("need_bwrap")


def test_golden_argv(tmp_path: Path) -> None:
    spec = RuntimeSpec(backend="bwrap", network="none", binds=["/data/ds:/ds"], gpus=0)
    argv = bwrap_argv(
        spec,
        session_dir=Path("/runs/r/sessions/s1"),
        tmp_dir=Path("/scratch/tmp"),
        cmd=["codex", "exec", "hi"],
        cwd="/polar/session/work",
        proxy_socket=Path("/runs/r/proxy.sock"),
        root=["--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin"],
    )
    assert argv == [
        "bwrap", "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--unshare-net", "--die-with-parent", "--new-session", "--hostname", "polar",
        "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
        "--proc", "/proc", "--dev", "/dev",
        "--bind", "/scratch/tmp", "/tmp", "--bind", "/runs/r/sessions/s1", "/polar/session",
        "--ro-bind", "/data/ds", "/ds",
        "--ro-bind", str(Path(__file__).parents[3] / "polar_hpc/runtime/uds_forward.py"),
        "/polar/runtime/uds_forward.py",
        "--bind", "/runs/r/proxy.sock", "/polar/proxy.sock",
        "--chdir", "/polar/session/work", "--",
        "python3", "-I", "-S", "/polar/runtime/uds_forward.py", "--listen", "127.0.0.1:28080",
        "--socket", "/polar/proxy.sock", "--",
        "codex", "exec", "hi",
    ]  # fmt: skip


async def test_scratch_dirs_are_writable_and_per_session(tmp_path: Path) -> None:
    """``runtime.scratch_dirs``: writable folders on bwrap's read-only root (a Harbor task's /app, /tests, /logs),
    a fresh one per session, reached by upload / download through the host, gone with ``stop``."""
    from polar_hpc.runtime import make_runtime

    spec = RuntimeSpec(backend="bwrap", scratch_dirs=["/tests", "/logs/verifier", "/app"], workdir="/app")
    (tmp_path / "data.csv").write_text("a,1\n")
    one, two = (make_runtime(spec, tmp_path / name) for name in ("one", "two"))
    await one.start()
    await two.start()
    try:
        await one.upload(tmp_path / "data.csv", "/app/data.csv")
        res = await one.exec("cat data.csv && echo 1 > /logs/verifier/reward.txt && touch /tests/t && pwd")
        assert res.ok and res.stdout == "a,1\n/app\n", res.stderr
        await one.download("/logs/verifier/reward.txt", tmp_path / "reward.txt")
        assert (tmp_path / "reward.txt").read_text() == "1\n"
        seen = await two.exec("ls -A /app /tests /logs/verifier")
        assert seen.ok and seen.stdout.split() == ["/app:", "/logs/verifier:", "/tests:"], seen.stdout
        denied = await one.exec("touch /opt-x 2>&1; touch /usr/x 2>&1")
        assert "Read-only file system" in denied.stdout or "Permission denied" in denied.stdout, denied.stdout
        scratch = one.scratch  # type: ignore[attr-defined]
    finally:
        await one.stop()
        await two.stop()
    assert not scratch.exists()


@pytest.mark.parametrize("item", ["tests", "/usr/local/x", "/", "/tmp/x", "/app/../etc"])
def test_scratch_dirs_outside_the_system_only(item: str) -> None:
    from polar_hpc.runtime.bwrap import scratch_binds

    with pytest.raises(ValueError, match=r"runtime.scratch_dirs: expected absolute paths outside /bin, /dev, "):
        scratch_binds(RuntimeSpec(scratch_dirs=[item]), Path("/s"))
