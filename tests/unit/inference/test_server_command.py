"""Golden command lines and environment of the inference server job body."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.config.run import InferenceConfig
from polar_hpc.inference.server import (
    SGLANG_DETERMINISTIC,
    ServerJob,
    Topology,
    seeds_honoured,
    server_env,
    sglang_command,
    slurm_topology,
)
from polar_hpc.wire.rundir import RunDir


def test_sglang_single_node_golden() -> None:
    cfg = InferenceConfig(engine="sglang", served_model_name="policy", tp=2, dp=4, context_length=65536,
                          mem_fraction_static=0.85, random_seed=7,
                          extra_args=["--enable-metrics", "--skip-server-warmup"])
    cmd = sglang_command(cfg, model_path="/m/qwen3", host="gpu017", port=31234, python="python")
    assert cmd == [
        "python", "-m", "polar_hpc.inference.sglang_launch", "--model-path", "/m/qwen3", "--host", "gpu017",
        "--port", "31234", "--served-model-name", "policy", "--tp-size", "2", "--dp-size", "4",
        "--context-length", "65536", "--incremental-streaming-output", "--mem-fraction-static", "0.85",
        "--random-seed", "7",
        "--enable-metrics", "--skip-server-warmup",
    ]


def test_sglang_multi_node_golden() -> None:
    cfg = InferenceConfig(engine="sglang", tp=16)
    topo = Topology(nnodes=2, node_rank=1, head_host="gpu001", dist_init_port=20042, job_id="42")
    cmd = sglang_command(cfg, model_path="/m", host="gpu002", port=30000, topology=topo, python="python")
    assert cmd == [
        "python", "-m", "polar_hpc.inference.sglang_launch", "--model-path", "/m", "--host", "gpu002",
        "--port", "30000",
        "--served-model-name", "policy", "--tp-size", "16", "--dp-size", "1", "--context-length", "32768",
        "--incremental-streaming-output", "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", "gpu001:20042",
    ]
    with pytest.raises(ValueError, match="head host"):
        sglang_command(cfg, model_path="/m", host="h", port=1, topology=Topology(nnodes=2))


def test_reference_engine_runs_serve_reference() -> None:
    cfg = InferenceConfig(engine="reference", random_seed=3, context_length=4096, served_model_name="pol")
    job = ServerJob(cfg, index=0, run_dir="/run", model_path="/m/tiny", topology=Topology(), host="127.0.0.1")
    cmd = job.command(4321)
    assert cmd[1:] == ["-m", "polar_hpc", "serve-reference", "--model", "/m/tiny", "--host", "127.0.0.1",
                       "--port", "4321", "--seed", "3", "--context-length", "4096", "--served-model-name", "pol"]
    with pytest.raises(ValueError, match="external"):
        ServerJob(InferenceConfig(engine="external"), index=0, run_dir="/r", model_path="/m").command(1)


def test_slurm_topology_from_env() -> None:
    assert slurm_topology({}) == Topology()
    assert slurm_topology({"SLURM_JOB_ID": "9", "SLURM_JOB_NUM_NODES": "1"}) == Topology(job_id="9")
    topo = slurm_topology({"SLURM_JOB_ID": "12345", "SLURM_JOB_NUM_NODES": "3", "SLURM_NODEID": "2",
                           "SLURM_JOB_NODELIST": "nodeA,nodeB,nodeC"})
    assert topo == Topology(nnodes=3, node_rank=2, head_host="nodeA", dist_init_port=20000 + 12345 % 20000,
                            job_id="12345")


def test_server_env_isolates_caches(tmp_path: Path) -> None:
    env = server_env(tmp_path / "s0", base={"PATH": "/bin", "TMPDIR": "/shared"})
    assert env["PATH"] == "/bin"
    assert env["TMPDIR"] == str(tmp_path / "s0" / "tmp") and Path(env["TMPDIR"]).is_dir()
    assert env["TRITON_CACHE_DIR"] == str(tmp_path / "s0" / "triton")
    other = server_env(tmp_path / "s1", base={})
    assert other["TRITON_CACHE_DIR"] != env["TRITON_CACHE_DIR"]


def test_server_job_requires_the_run_token(tmp_path: Path) -> None:
    """The servers bind the node's address: they require the run token, which both take from their environment
    (it stays out of ps; ``sglang_launch`` turns it into SGLang's --api-key in-process)."""
    from polar_hpc.wire.security import API_KEY_ENV

    RunDir(tmp_path).secrets.mkdir()
    RunDir(tmp_path).run_token_path.write_text("s3cret\n")
    sg = ServerJob(InferenceConfig(engine="sglang"), index=0, run_dir=tmp_path, model_path="/m", topology=Topology())
    assert "--api-key" not in sg.command(1) and "s3cret" not in sg.command(1)
    assert sg.env(tmp_path / "scratch")[API_KEY_ENV] == "s3cret"
    ref = ServerJob(InferenceConfig(engine="reference"), index=0, run_dir=tmp_path, model_path="/m",
                    topology=Topology())
    assert "--api-key" not in ref.command(1) and "s3cret" not in ref.command(1)
    assert ref.env(tmp_path / "scratch")[API_KEY_ENV] == "s3cret"
    bare = ServerJob(InferenceConfig(engine="sglang"), index=0, run_dir=tmp_path / "none", model_path="/m")
    assert "--api-key" not in bare.command(1) and API_KEY_ENV not in bare.env(tmp_path / "scratch2")


def test_sglang_in_its_own_venv_and_in_a_container() -> None:
    cfg = InferenceConfig(engine="sglang", model="/m", python="/sw/sglang/bin/python")
    job = ServerJob(cfg, index=0, run_dir="/run", model_path="/m", topology=Topology(), host="gpu1")
    cmd = job.command(30000)
    assert cmd[:3] == ["/sw/sglang/bin/python", "-m", "polar_hpc.inference.sglang_launch"]
    img = InferenceConfig(engine="sglang", model="/m", container="/sw/sglang.sif")
    job = ServerJob(img, index=0, run_dir="/run", model_path="/m", topology=Topology(), host="gpu1")
    import os

    from polar_hpc.inference import server

    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = "/run/code"
    try:
        cmd = job.command(30000)
    finally:
        if old is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = old
    assert cmd[1:] == ["exec", "--nv", "--bind", "/m:/m:ro", "--bind", "/run/code:/run/code:ro", "/sw/sglang.sif",
                       "python3", "-m", "polar_hpc.inference.sglang_launch", "--model-path", "/m", "--host", "gpu1",
                       "--port", "30000", "--served-model-name", "policy", "--tp-size", "1", "--dp-size", "1",
                       "--context-length", "32768", "--incremental-streaming-output"]
    assert cmd[0].endswith(("apptainer", "singularity"))
    assert server.container_prefix("docker://lmsysorg/sglang:v0.5", "/m", env={}, binary="apptainer") == [
        "apptainer", "exec", "--nv", "--bind", "/m:/m:ro", "docker://lmsysorg/sglang:v0.5"]
    ref = InferenceConfig(engine="reference", python="/opt/torch-env/bin/python")
    assert ServerJob(ref, index=0, run_dir="/r", model_path="/m", topology=Topology(), host="h").command(1)[0] == \
        "/opt/torch-env/bin/python"


def test_the_api_key_never_reaches_a_container_command_line(tmp_path: Path) -> None:
    RunDir(tmp_path).secrets.mkdir()
    RunDir(tmp_path).run_token_path.write_text("s3cret")
    job = ServerJob(InferenceConfig(engine="sglang", model="/m", container="/i.sif"), index=0, run_dir=tmp_path,
                    model_path="/m", topology=Topology(), host="h")
    assert not any("s3cret" in a for a in job.command(1))
    assert job.env(tmp_path)["POLAR_INFERENCE_API_KEY"] == "s3cret"


def test_which_engines_sample_with_each_requests_seed() -> None:
    assert seeds_honoured(InferenceConfig(engine="reference")) is True
    assert seeds_honoured(InferenceConfig(engine="sglang")) is False
    assert seeds_honoured(InferenceConfig(engine="sglang", extra_args=[SGLANG_DETERMINISTIC])) is True
    assert seeds_honoured(InferenceConfig(engine="external")) is None
