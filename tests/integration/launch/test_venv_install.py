"""Install without root: a plain user makes a venv (no system site-packages), ``pip install``s polar-hpc, fetches
its asset with ``polar-hpc assets fetch`` and runs a short local run (coordinator, gateway, bwrap sandbox, shell
harness, evaluator) from that venv alone.

To keep CI cheap the venv gets the base package (no ``[reference]`` extra: torch is 750 MB to unpack): the run's
inference is the reference server of the test session, used as ``engine = "external"``, as a site's own inference
environment would be. README "Install without root" gives the full command (``pip install '.[reference]'``).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from polar_hpc.wire.rundir import RunDir
from tests.integration.launch.helpers import ROOT, committed_keys, stop_run

pytestmark = [pytest.mark.slow, pytest.mark.install]

USER = "polar-venv"
SYSTEM_PYTHON = "/usr/bin/python3"
"""Debian's: the image's default python lives under root's home (mode 0700), unusable by another user."""


@pytest.fixture
def plain_user() -> Iterator[tuple[str, Path]]:
    if os.geteuid() != 0:
        home = Path(tempfile.mkdtemp(prefix="polar-venv-"))
        yield pwd.getpwuid(os.getuid()).pw_name, home
        shutil.rmtree(home, ignore_errors=True)
        return
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--create-home", USER], check=True, timeout=30)
    home = Path(tempfile.mkdtemp(prefix="polar-venv-"))
    shutil.chown(home, USER, USER)
    try:
        yield USER, home
    finally:
        stop_run(home / "run")
        # the venv is ~260 MB of small files: removed in the background, not on the test's clock
        subprocess.Popen(["rm", "-rf", str(home)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)


def _as(user: str, home: Path, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": f"{home}/venv/bin:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "POLAR_HPC_ASSETS": str(home / "assets"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    prefix = [] if os.geteuid() != 0 else ["runuser", "-u", user, "--"]
    return subprocess.run([*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv],
                          capture_output=True, text=True, timeout=timeout, cwd=home)


@pytest.mark.timeout(900)
def test_plain_user_venv_installs_fetches_and_runs(plain_user: tuple[str, Path], reference_server) -> None:  # type: ignore[no-untyped-def]
    user, home = plain_user
    src = home / "src"
    for name in ("pyproject.toml", "README.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, src / name)
    for name in ("polar_hpc", "recipes"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{user}:{user}", str(home)], check=True, timeout=60)

    steps = [
        [SYSTEM_PYTHON, "-m", "venv", str(home / "venv")],
        ["pip", "install", "-q", "--no-compile", str(src), "openai", "pytest"],
        ["polar-hpc", "assets", "fetch", "qwen3-tokenizer"],
    ]
    for argv in steps:
        out = _as(user, home, *argv)
        assert out.returncode == 0, f"{argv}: {out.stdout}{out.stderr}"
    probe = _as(user, home, "python", "-c", "import sys, polar_hpc; print(sys.prefix, sys.base_prefix, polar_hpc.__file__)")
    prefix, base, where = probe.stdout.split()
    assert prefix == str(home / "venv") and base != prefix and where.startswith(str(home / "venv")), probe.stdout
    no_site = _as(user, home, "python", "-c", "import torch")
    assert no_site.returncode != 0, "the venv sees system site-packages"

    run_dir = home / "run"
    out = _as(user, home, "polar-hpc", "launch", str(src / "recipes" / "local-shell.toml"), "--run-dir", str(run_dir),
              "--set", "inference.engine=external", "--set", f'inference.endpoints=["{reference_server.url}"]',
              "--set", "inference.model=asset:qwen3-tokenizer", "--set", "tasks.num_samples=1",
              "--set", "tasks.limit=1", "--wait", "--timeout", "400", timeout=500)
    assert out.returncode == 0, out.stdout + out.stderr
    keys, dups = committed_keys(run_dir)
    assert keys == ["calc-add/0"] and dups == 0
    owners = {p.stat().st_uid for p in RunDir(run_dir).shards.glob("*.h5")}
    assert owners == {pwd.getpwnam(user).pw_uid}
