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
    instance_prefix,
    instances_with_prefix,
    list_all_argv,
    start_argv,
    stop_argv,
    stop_stale_instances,
    write_env_file,
)
from polar_hpc.wire.rundir import RunDir

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
    assert exec_argv("n", ["bash", "-c", "a, b"], Path("/s/env-1"), "/polar/session/work") == [
        "apptainer", "exec", "--cleanenv", "--env-file", "/s/env-1", "--pwd", "/polar/session/work", "instance://n",
        "bash", "-c", "a, b",
    ]  # fmt: skip
    bridged = exec_argv("n", ["true"], Path("/s/env-1"), "/", bridged=True)
    assert bridged[bridged.index("instance://n") + 1 :] == [
        "python3", "-I", "-S", "/polar/runtime/uds_forward.py", "--listen", "127.0.0.1:28080",
        "--socket", "/polar/proxy.sock",
        "--", "true",
    ]  # fmt: skip
    assert stop_argv("n") == ["apptainer", "instance", "stop", "-t", "30", "n"]


def test_env_file_is_private_quoted_and_keeps_secrets_out_of_argv(tmp_path: Path) -> None:
    import os
    import subprocess

    env = {"POLAR_API_KEY": "sk-secret-123", "K": "v,w 'q' $HOME", "A": "1"}
    old = os.umask(0)
    try:
        path = write_env_file(tmp_path, env)
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o600
    assert write_env_file(tmp_path, env) == path  # same env, same file
    assert "sk-secret-123" not in " ".join(exec_argv("n", ["true"], path, "/"))
    # a POSIX shell reading the file gets the values back unchanged
    out = subprocess.run(["/bin/sh", "-c", f'set -a; . {path}; printf "%s|%s|%s" "$A" "$K" "$POLAR_API_KEY"'],
                         capture_output=True, text=True, env={}, check=True).stdout
    assert out == "1|v,w 'q' $HOME|sk-secret-123"
    with pytest.raises(ValueError, match="not valid"):
        write_env_file(tmp_path, {"BAD-NAME": "x"})


async def test_missing_binary_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    rt = make_runtime(RuntimeSpec(backend="apptainer", image="docker://alpine"), tmp_path / "s")
    with pytest.raises(SandboxUnavailable, match="neither `apptainer` nor `singularity` is on PATH"):
        await rt.start()
    await rt.stop()


@pytest.mark.slow
@pytest.mark.timeout(700)  # the image pull alone may take 600 s
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


def test_instance_names_carry_run_and_rank(tmp_path: Path) -> None:
    run = tmp_path / "run"
    session = RunDir(run).sessions(3) / "t_0-0-1234abcd"
    prefix = instance_prefix(run, 3)
    assert prefix.startswith("polar-") and prefix.endswith("-r3-")
    assert instance_name(session).startswith(prefix)
    assert instance_name(session / "eval-0").startswith(prefix)  # a fresh evaluation runtime too
    assert instance_name(session) != instance_name(session / "eval-0")
    assert not instance_name(RunDir(run).sessions(4) / "x").startswith(prefix)
    assert not instance_name(RunDir(tmp_path / "other").sessions(3) / "x").startswith(prefix)


def test_instance_list_argv_and_parse_golden() -> None:
    assert list_all_argv() == ["apptainer", "instance", "list", "--json"]
    out = ('{"instances": [{"instance": "polar-aa-r3-s1-1", "pid": 11, "img": "/i.sif"},'
           ' {"instance": "polar-aa-r30-s2-2", "pid": 12}, {"instance": "polar-bb-r3-s3-3", "pid": 13},'
           ' {"instance": "polar-aa-r3-s0-0", "pid": 14}]}')
    assert instances_with_prefix(out, "polar-aa-r3-") == ["polar-aa-r3-s0-0", "polar-aa-r3-s1-1"]
    assert instances_with_prefix('{"instances": null}', "polar-") == []
    with pytest.raises(ValueError, match="not the expected JSON"):
        instances_with_prefix("FATAL: no", "polar-")


async def test_rank_start_stops_this_run_and_ranks_leftover_instances(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stand-in `apptainer` (a real script on PATH) records the command lines the cleanup runs."""
    import json
    import os

    from polar_hpc.config.run import RunConfig
    from polar_hpc.gateway.rank import GatewayRank

    run = tmp_path / "run"
    mine = instance_name(RunDir(run).sessions(1) / "a-1")
    other_rank = instance_name(RunDir(run).sessions(2) / "b-2")
    calls = tmp_path / "calls"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    listing = json.dumps({"instances": [{"instance": mine, "pid": 1}, {"instance": other_rank, "pid": 2}]})
    fake = bindir / "apptainer"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {calls}\nif [ \"$2\" = list ]; then echo '{listing}'; fi\n")
    fake.chmod(0o755)
    assert await stop_stale_instances(run, 1, binary=str(fake)) == [mine]
    assert calls.read_text().splitlines() == ["instance list --json", f"instance stop -t 30 {mine}"]

    calls.unlink()
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    bwrap_rank = GatewayRank(RunConfig(), 1, run)
    await bwrap_rank._stop_stale_instances()  # another backend: apptainer is not asked
    assert not calls.exists()
    config = RunConfig(runtime=RuntimeSpec(backend="apptainer", image="/i.sif"))
    await GatewayRank(config, 1, run)._stop_stale_instances()
    assert calls.read_text().splitlines() == ["instance list --json", f"instance stop -t 30 {mine}"]


def test_docker_image_runs_from_the_prepared_sif(tmp_path: Path) -> None:
    from polar_hpc.images.prepare import sif_path
    from polar_hpc.runtime.apptainer import cached_image

    ref = "docker://swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    spec = RuntimeSpec(backend="apptainer", image=ref, image_cache=str(tmp_path))
    assert cached_image(spec).image == ref  # not prepared: Apptainer pulls it
    sif_path(tmp_path, ref).write_bytes(b"SIF")
    argv = start_argv(cached_image(spec), name="n", session_dir=Path("/s"), overlay_dir=Path("/o"),
                      work_dir=Path("/w"))
    assert argv[-2:] == [str(tmp_path / "swebench_sweb.eval.x86_64.django_1776_django-11099_latest.sif"), "n"]
