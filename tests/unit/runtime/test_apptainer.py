"""Apptainer: golden command lines always; a real instance only where `apptainer` is installed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime import SandboxUnavailable, make_runtime
from polar_hpc.runtime.apptainer import (
    ApptainerRuntime,
    exec_argv,
    instance_name,
    start_argv,
    stop_argv,
)

FWD = str(Path(__file__).parents[3] / "polar_hpc/runtime/uds_forward.py")


def test_instance_name_is_safe_and_unique() -> None:
    a = instance_name(Path("/runs/r/sessions/task 1#0"))
    b = instance_name(Path("/runs/other/sessions/task 1#0"))
    assert a.startswith("polar-task-1-0-") and a != b and len(a) <= 45


def test_start_argv_golden() -> None:
    spec = RuntimeSpec(backend="apptainer", image="docker://python:3.11-slim", network="none", gpus=1,
                       binds=["/data:/data"])
    argv = start_argv(spec, name="polar-s1-abcd1234", session_dir=Path("/runs/r/s1"), overlay_dir=Path("/scr/ov"),
                      work_dir=Path("/scr/work"), proxy_socket=Path("/runs/r/proxy.sock"))
    assert argv == [
        "apptainer", "instance", "start", "--cleanenv", "--no-mount", "home,cwd", "--contain",
        "--workdir", "/scr/work", "--overlay", "/scr/ov", "--nv", "--net", "--network", "none",
        "--bind", "/runs/r/s1:/polar/session",
        "--bind", f"{FWD}:/polar/runtime/uds_forward.py:ro", "--bind", "/runs/r/proxy.sock:/polar/proxy.sock",
        "--bind", "/data:/data:ro",
        "docker://python:3.11-slim", "polar-s1-abcd1234",
    ]  # fmt: skip


def test_start_argv_shared_network_sif() -> None:
    spec = RuntimeSpec(backend="apptainer", image="/images/swe.sif")
    argv = start_argv(spec, name="n", session_dir=Path("/s"), overlay_dir=Path("/o"), work_dir=Path("/w"),
                      proxy_socket=Path("/p.sock"))
    assert "--net" not in argv and "--nv" not in argv and "/p.sock:/polar/proxy.sock" not in argv
    assert argv[-2:] == ["/images/swe.sif", "n"]


def test_start_without_image_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="SIF path or a docker:// URI"):
        start_argv(RuntimeSpec(backend="apptainer"), name="n", session_dir=Path("/s"), overlay_dir=Path("/o"),
                   work_dir=Path("/w"))


def test_exec_and_stop_argv_golden() -> None:
    assert exec_argv("n", ["bash", "-c", "a, b"], {"K": "v,w", "A": "1"}, "/polar/session/work") == [
        "apptainer", "exec", "--cleanenv", "--pwd", "/polar/session/work", "instance://n",
        "/usr/bin/env", "-i", "A=1", "K=v,w", "bash", "-c", "a, b",
    ]  # fmt: skip
    bridged = exec_argv("n", ["true"], {}, "/", bridged=True)
    assert bridged[bridged.index("-i") + 1 :] == [
        "python3", "-I", "-S", "/polar/runtime/uds_forward.py", "--listen", "127.0.0.1:28080", "--socket", "/polar/proxy.sock",
        "--", "true",
    ]  # fmt: skip
    assert stop_argv("n") == ["apptainer", "instance", "stop", "-t", "30", "n"]


async def test_missing_binary_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    rt = make_runtime(RuntimeSpec(backend="apptainer", image="docker://alpine"), tmp_path / "s")
    with pytest.raises(SandboxUnavailable, match="neither `apptainer` nor `singularity` is on PATH"):
        await rt.start()
    await rt.stop()


async def test_real_instance(tmp_path: Path) -> None:
    binary = shutil.which("apptainer")
    if binary is None:
        pytest.skip("apptainer is not on PATH (not installable from this machine's registries; infra.md §3a)")
    image = tmp_path / "alpine.sif"
    import subprocess

    subprocess.run([binary, "pull", str(image), "docker://alpine:3.20"], check=True, timeout=600)
    rt = make_runtime(RuntimeSpec(backend="apptainer", image=str(image)), tmp_path / "s")
    assert isinstance(rt, ApptainerRuntime)
    await rt.start()
    try:
        (rt.session_dir / "work" / "f.txt").write_text("hi")
        res = await rt.exec("cat f.txt; ls /root 2>&1; echo $HOME")
        assert res.ok and res.stdout.startswith("hi")
    finally:
        await rt.stop()
