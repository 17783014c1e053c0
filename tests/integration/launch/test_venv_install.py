"""Install without root, as docs/install.md says: a plain user makes a venv (no system
site-packages), ``pip install``s ``polar-hpc[demo]`` (the reference server's torch CPU wheel comes through the
same pip configuration tools/setup.sh installs with), fetches the demo's model with ``polar-hpc assets fetch``
and runs the README's local demo (``polar-hpc launch recipes/local-demo.toml --wait``: local backend, SmolLM2 on
the CPU, the real pi CLI in bwrap sandboxes, graded by the tasks' pytest) to the end, from that venv alone. Then
it checks what a user would: the launch exits 0, ``status`` says finished, ``shards validate`` finds no
violation, every session is committed, and the grader really ran the tasks' tests.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from polar_hpc.wire.rundir import RunDir
from tests.integration.launch.helpers import ROOT, committed_keys, stop_run

pytestmark = [pytest.mark.slow, pytest.mark.install]

USER = "polar-venv"
SYSTEM_PYTHON = "/usr/bin/python3"
"""Debian's: the image's default python lives under root's home (mode 0700), unusable by another user."""
DEMO_SESSIONS = 6
"""recipes/local-demo.toml: 3 tasks x num_samples 2."""


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
        for run in (home / "polar-hpc" / "runs").glob("*"):
            stop_run(run)
        # the venv is ~1.5 GB of small files: removed in the background, not on the test's clock
        subprocess.Popen(["rm", "-rf", str(home)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)


PIP_SOURCES = ("index-url", "extra-index-url", "find-links", "constraint")


def pip_sources() -> dict[str, str]:
    """Where this machine's pip finds packages (root's pip config and PIP_* variables, what tools/setup.sh
    installs with: here the torch CPU wheel and its constraint), as PIP_* variables for the plain user, whose own
    config would fetch the CUDA build from PyPI."""
    out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    found: dict[str, str] = {}
    for line in out.splitlines():  # "global.find-links='/opt/wheels'", ":env:.find-links='/opt/wheels'"
        scope_key, _, value = line.partition("=")
        key = scope_key.rpartition(".")[2]
        name = "PIP_" + key.upper().replace("-", "_")
        if key in PIP_SOURCES and (name not in found or scope_key.startswith(":env:")):
            found[name] = value.strip("'\"")
    return found


def _as(user: str, home: Path, *argv: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {"HOME": str(home), "PATH": f"{home}/venv/bin:/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", **pip_sources()}
    prefix = [] if os.geteuid() != 0 else ["runuser", "-u", user, "--"]
    return subprocess.run([*prefix, "env", "-i", *(f"{k}={v}" for k, v in env.items()), *argv],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.mark.timeout(1500)
def test_plain_user_venv_installs_fetches_and_runs_the_demo(plain_user: tuple[str, Path]) -> None:
    user, home = plain_user
    src = home / "polar-hpc"
    for name in ("pyproject.toml", "README.md"):
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, src / name)
    for name in ("polar_hpc", "recipes"):
        shutil.copytree(ROOT / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{user}:{user}", str(home)], check=True, timeout=60)

    steps = [
        [SYSTEM_PYTHON, "-m", "venv", str(home / "venv")],
        ["pip", "install", "-q", "--no-compile", f"{src}[demo]"],
        ["polar-hpc", "assets", "fetch", "smollm2"],
    ]
    for argv in steps:
        t0 = time.monotonic()
        out = _as(user, home, *argv, cwd=src)
        print(f"{' '.join(argv[:3])}: {time.monotonic() - t0:.0f} s")
        assert out.returncode == 0, f"{argv}: {out.stdout}{out.stderr}"
    # doctor finds everything the demo needs; the only failure it may report is a disk below its 5 GB margin
    # (the shared /tmp of a busy machine), which the demo itself does not need
    doctor = _as(user, home, "polar-hpc", "doctor", "recipes/local-demo.toml", cwd=src)
    failed = re.findall(r"^FAIL (\S+)", doctor.stdout, re.M)
    assert doctor.returncode == (1 if failed else 0) and failed in ([], ["disk"]), doctor.stdout + doctor.stderr
    assert re.search(r"^ok   grader pytest ", doctor.stdout, re.M), doctor.stdout
    assert re.search(r"^ok   asset smollm2 ", doctor.stdout, re.M), doctor.stdout
    probe = _as(user, home, "python", "-c", "import sys, polar_hpc, torch; "
                "print(sys.prefix, sys.base_prefix, polar_hpc.__file__, torch.__file__, torch.version.cuda)", cwd=home)
    prefix, base, where, torch_at, cuda = probe.stdout.split()
    venv = str(home / "venv")
    assert prefix == venv and base != prefix, probe.stdout
    assert where.startswith(venv) and torch_at.startswith(venv) and cuda == "None", probe.stdout
    assert "include-system-site-packages = false" in (home / "venv" / "pyvenv.cfg").read_text()
    seen = _as(user, home, "python", "-c", "import sys; print(*sys.path)", cwd=home).stdout.split()
    assert [p for p in seen if p.endswith(("-packages",)) and not p.startswith(venv)] == [], seen

    t0 = time.monotonic()
    out = _as(user, home, "polar-hpc", "launch", "recipes/local-demo.toml", "--wait", cwd=src, timeout=1100)
    print(f"polar-hpc launch recipes/local-demo.toml --wait: {time.monotonic() - t0:.0f} s")
    assert out.returncode == 0, out.stdout + out.stderr
    found = re.search(r"^run dir: (\S+)$", out.stdout, re.M)
    assert found, out.stdout
    run_dir = Path(found.group(1))
    assert run_dir.parent == src / "runs", run_dir
    assert re.search(rf"^final: sessions {DEMO_SESSIONS}/{DEMO_SESSIONS} ", out.stdout, re.M), out.stdout

    status = _as(user, home, "polar-hpc", "status", str(run_dir), cwd=src)
    assert status.returncode == 0 and re.search(r"^finished$", status.stdout, re.M), status.stdout + status.stderr
    validate = _as(user, home, "polar-hpc", "shards", "validate", str(RunDir(run_dir).shards), cwd=src)
    assert validate.returncode == 0, validate.stdout + validate.stderr
    assert re.search(r"^\d+ shards checked, 0 with violations, 0 violations$", validate.stdout, re.M), validate.stdout
    inspect = _as(user, home, "polar-hpc", "shards", "inspect", str(RunDir(run_dir).shards), cwd=src)
    assert re.search(rf"^sessions\s+{DEMO_SESSIONS}$", inspect.stdout, re.M), inspect.stdout
    assert re.search(rf"^harnesses\s+pi {DEMO_SESSIONS}$", inspect.stdout, re.M), inspect.stdout
    assert re.search(rf"^models\s+.*smollm2 {DEMO_SESSIONS}", inspect.stdout, re.M), inspect.stdout
    # the demo's grader is the tasks' own pytest, run by the venv's python inside the sandbox
    keys, dups = committed_keys(run_dir)
    assert len(keys) == DEMO_SESSIONS and dups == 0, keys
    graded = 0
    for key in keys:
        show = _as(user, home, "polar-hpc", "shards", "show", "--color", "never", key, str(run_dir), cwd=src)
        assert show.returncode == 0, show.stdout + show.stderr
        assert "No module named" not in show.stdout, show.stdout[-2000:]
        graded += bool(re.search(r'"tests_parsed": [1-9]', show.stdout))
    assert graded > 0, "no session's evaluation parsed a test result"
    owners = {p.stat().st_uid for p in RunDir(run_dir).shards.glob("*.h5")}
    assert owners == {pwd.getpwnam(user).pw_uid}
