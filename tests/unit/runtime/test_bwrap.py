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
