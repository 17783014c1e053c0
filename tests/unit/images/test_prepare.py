"""`polar-hpc images prepare`: Apptainer on exact command lines (with a stand-in binary: apptainer cannot be
installed here), podman for real on the offline task set; plan, manifest, resume, failures, Slurm array."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from polar_hpc.cli.entry import main
from polar_hpc.images.prepare import (
    ImageJob,
    apptainer_argv,
    jobs_from_rows,
    load_manifest,
    plan,
    prepare,
    sif_name,
    sif_path,
    slurm_array_script,
)

REF = "docker://swebench/sweb.eval.x86_64.django_1776_django-11099:latest"


def test_names_and_command_lines() -> None:
    assert sif_name(REF) == "swebench_sweb.eval.x86_64.django_1776_django-11099_latest.sif"
    assert apptainer_argv(REF, Path("/c/x.sif.part")) == [
        "apptainer", "build", "--force", "/c/x.sif.part", "docker://swebench/sweb.eval.x86_64.django_1776_django-11099:latest"]
    rows = [{"image": REF}, {"image": REF}, {"image": "docker://b"}, {"instance_id": "no image"}]
    assert [j.ref for j in jobs_from_rows(rows)] == [REF, "docker://b"]


def test_slurm_array_script_golden() -> None:
    script = slurm_array_script(tasks="/data/tasks.jsonl", cache="/shared/sif", count=1638, parallel=32,
                                partition="cpu")
    assert script.splitlines() == [
        "#!/bin/bash", "#SBATCH --job-name=polar-images", "#SBATCH --array=0-1637%32", "#SBATCH --time=120",
        "#SBATCH --cpus-per-task=4", "#SBATCH --mem=16G", "#SBATCH --output=/shared/sif/logs/%A_%a.out",
        "#SBATCH --partition=cpu", "set -euo pipefail",
        "export APPTAINER_CACHEDIR=${APPTAINER_CACHEDIR:-${TMPDIR:-/tmp}/apptainer-$SLURM_JOB_ID}",
        "exec polar-hpc images prepare /data/tasks.jsonl --engine apptainer --cache /shared/sif "
        '--index "$SLURM_ARRAY_TASK_ID" --parallel 1 --yes',
    ]  # fmt: skip


@pytest.fixture
def fake_apptainer(tmp_path: Path) -> Path:
    """A FAKE `apptainer` (a real script at the process boundary): records its argv, writes the output file,
    fails for references containing 'broken'."""
    script = tmp_path / "bin" / "apptainer"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/calls\ncase \"$4\" in *broken*) echo 'FATAL: pull "
                      "failed: manifest unknown' >&2; exit 255;; esac\nprintf 'SIF' > \"$3\"\n")
    script.chmod(0o755)
    return script


def test_apptainer_prepare_resumes_and_records_failures(tmp_path: Path, fake_apptainer: Path) -> None:
    cache = tmp_path / "sif"
    jobs = [ImageJob(REF), ImageJob("docker://x/broken:1"), ImageJob("docker://x/ok:2")]
    p = plan("apptainer", cache, jobs, estimate_gb=2.0)
    assert (len(p.todo), p.cached, p.estimate_bytes) == (3, 0, 3 * 2 * 1024**3)
    manifest = prepare("apptainer", cache, jobs, parallel=2, binary=str(fake_apptainer))
    ok = manifest.images[REF]
    assert ok.status == "ok" and ok.path == str(sif_path(cache, REF)) and ok.size_bytes == 3
    assert ok.digest is not None and ok.digest.startswith("sha256:")
    bad = manifest.images["docker://x/broken:1"]
    assert bad.status == "failed" and "manifest unknown" in bad.log_tail and not list(cache.glob("*.part"))
    calls = (tmp_path / "calls").read_text().splitlines()
    assert f"build --force {sif_path(cache, REF)}.part {REF}" in calls and len(calls) == 3
    # resume: only the failure is tried again; the merged manifest is on disk
    prepare("apptainer", cache, jobs, binary=str(fake_apptainer))
    assert len((tmp_path / "calls").read_text().splitlines()) == 4
    on_disk = json.loads((cache / "manifest.json").read_text())
    assert on_disk["images"]["docker://x/ok:2"]["status"] == "ok"
    assert load_manifest(cache, "apptainer").images[REF].status == "ok"


def test_cli_plans_first_and_refuses_an_estimate_over_the_free_disk(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"image": REF}) + "\n")
    assert main(["images", "prepare", str(tasks), "--engine", "apptainer", "--cache", str(tmp_path / "c"),
                 "--estimate-gb", "1000000"]) == 2
    out = capsys.readouterr()
    assert "1 distinct images: 0 cached, 1 to prepare; estimated 1000000.0 GB" in out.out
    assert "exceeds the free disk" in out.err
    assert main(["images", "prepare", str(tasks), "--engine", "apptainer"]) == 2
    assert "needs a shared cache folder" in capsys.readouterr().err
    script = tmp_path / "prep.sbatch"
    assert main(["images", "prepare", str(tasks), "--engine", "apptainer", "--cache", str(tmp_path / "c"),
                 "--slurm-script", str(script)]) == 0
    assert "#SBATCH --array=0-0%4" in script.read_text()


@pytest.mark.container
@pytest.mark.slow
def test_podman_prepare_rebuilds_a_missing_image_and_records_a_pull_failure(
        tmp_path: Path, offline_swe_tasks: list[dict]) -> None:  # type: ignore[type-arg]
    row = offline_swe_tasks[-1]
    subprocess.run(["podman", "rmi", "-f", row["image"]], capture_output=True, check=True, timeout=60)
    # a registry on a closed loopback port: the pull fails at once, and no traffic leaves the machine
    unreachable = "127.0.0.1:9/polar/none:1"
    rows = [*offline_swe_tasks, {"image": unreachable}]
    cache = tmp_path / "c"
    p = plan("podman", cache, jobs_from_rows(rows))
    assert (len(p.todo), p.cached) == (2, len(offline_swe_tasks) - 1)
    manifest = prepare("podman", cache, jobs_from_rows(rows), parallel=2)
    rebuilt = manifest.images[row["image"]]
    assert rebuilt.status == "ok" and rebuilt.digest and rebuilt.size_bytes
    assert manifest.images[unreachable].status == "failed"
    assert "127.0.0.1:9" in manifest.images[unreachable].log_tail
    assert subprocess.run(["podman", "image", "exists", row["image"]], timeout=60).returncode == 0
