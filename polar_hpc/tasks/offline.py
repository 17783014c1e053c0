"""Build the offline real-repository SWE task set (``offline_set``): sdists → git repos → images → tasks.

For each instance: the project's pinned sdist (fetched with pip, sha256 checked) becomes a one-commit git repo
(the base commit: the code and its tests taken out); the gold patch and the test patch are the diffs that put
them back. Its image is the local base image plus the repo at ``/testbed`` (one small layer). FAIL_TO_PASS /
PASS_TO_PASS come from running the project's own tests in that image with the instance's eval script, before
and after the gold patch, read by the same swebench parser that grades. Nothing built here is committed: it
lives in the output folder (``$POLAR_HPC_IMAGE_BUILD_CACHE/offline-swe`` by default) and the engine's storage.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import msgspec

from polar_hpc.errors import PolarError
from polar_hpc.evaluate.swe_spec import GradingSpec, test_directives
from polar_hpc.evaluate.swegrade import eval_script, own_status_map
from polar_hpc.images.base import SWE_BASE_IMAGE, ImageBuildError, image_exists, local_cache
from polar_hpc.log import get_logger
from polar_hpc.tasks.images import swebench_image
from polar_hpc.tasks.importer import make_task_row
from polar_hpc.tasks.offline_set import INSTANCES, PROJECTS, Instance, Project

log = get_logger("tasks")

IMAGE_NAMESPACE = "localhost/polar-hpc"
TEST_CMD = "python3 -m pytest -rA -p no:cacheprovider"
"""``python3 -m``: the repo itself is importable (the images do not install the projects)."""
VERSION = "1"
"""Bump when what is built changes; a stamp with another version is rebuilt."""
GIT_ENV = {"GIT_AUTHOR_NAME": "polar-hpc", "GIT_AUTHOR_EMAIL": "polar-hpc@localhost",
           "GIT_COMMITTER_NAME": "polar-hpc", "GIT_COMMITTER_EMAIL": "polar-hpc@localhost",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00+0000", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00+0000"}
RUN_TIMEOUT_S = 300


class BuildError(PolarError, RuntimeError):
    """A step of the task set build failed; the message names the instance and the step."""

    exit_code = 1


def default_out() -> Path:
    return local_cache() / "offline-swe"


def image_name(instance_id: str) -> str:
    return swebench_image(instance_id, IMAGE_NAMESPACE)


def _run(argv: list[str], what: str, *, cwd: Path | None = None, env: dict[str, str] | None = None,
         input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, input=input_text, capture_output=True,
                         text=True, timeout=RUN_TIMEOUT_S)
    if check and res.returncode != 0:
        raise BuildError(f"{what}: `{' '.join(argv[:3])} ...` exited {res.returncode}: {res.stderr.strip()[-1500:]}")
    return res


def fetch_sdist(project: Project, cache: Path) -> Path:
    """The project's sdist from PyPI through pip, its sha256 checked (kept in ``cache``)."""
    name = f"{project.name}-{project.version}.tar.gz"
    path = cache / name
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache) as tmp:
            _run(["python3", "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
                  "--no-build-isolation", "-d", tmp, f"{project.name}=={project.version}"], f"pip download {name}")
            got = Path(tmp) / name
            if not got.is_file():
                raise BuildError(f"pip download {project.name}=={project.version}: no {name} in {os.listdir(tmp)}")
            got.rename(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != project.sha256:
        path.unlink()
        raise BuildError(f"{name}: sha256 {digest}, expected {project.sha256} (the download was removed)")
    return path


def _extract(sdist: Path, dst: Path) -> None:
    with tarfile.open(sdist) as tar:
        top = tar.getnames()[0].split("/")[0]
        tar.extractall(dst.parent / ".extract", filter="data")
    shutil.rmtree(dst, ignore_errors=True)
    (dst.parent / ".extract" / top).rename(dst)
    shutil.rmtree(dst.parent / ".extract", ignore_errors=True)
    for junk in dst.glob("*.egg-info"):
        shutil.rmtree(junk)


def remove_tests(source: str, names: list[str], where: str) -> str:
    """``source`` without the test functions ``names`` (``fn`` or ``Class.fn``), decorators included."""
    tree = ast.parse(source)
    spans: list[tuple[int, int]] = []
    for name in names:
        cls, _, fn = name.rpartition(".")
        body = tree.body
        if cls:
            owners = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls]
            if not owners:
                raise BuildError(f"{where}: no class {cls}")
            body = owners[0].body
        found = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == fn]
        if len(found) != 1:
            raise BuildError(f"{where}: expected one test {name}, found {len(found)}")
        node = found[0]
        start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        spans.append((start, node.end_lineno or node.lineno))
    lines = source.splitlines(keepends=True)
    for start, end in sorted(spans, reverse=True):
        del lines[start - 1 : end]
    return "".join(lines)


def _revert(source: str, instance: Instance) -> str:
    for upstream, base in instance.revert:
        if source.count(upstream) != 1:
            raise BuildError(f"{instance.instance_id}: the code to take out occurs {source.count(upstream)} times "
                             f"in {instance.source} (expected once): {upstream[:80]!r}")
        source = source.replace(upstream, base)
    return source


def build_repo(instance: Instance, pristine: Path, testbed: Path) -> tuple[str, str, str]:
    """The instance's one-commit repo at ``testbed``; returns (base commit, gold patch, test patch)."""
    shutil.rmtree(testbed, ignore_errors=True)
    shutil.copytree(pristine, testbed, symlinks=True)
    src, tests = testbed / instance.source, testbed / instance.test_file
    upstream_src, upstream_tests = src.read_text(), tests.read_text()
    src.write_text(_revert(upstream_src, instance))
    tests.write_text(remove_tests(upstream_tests, instance.tests, f"{instance.instance_id}: {instance.test_file}"))
    git = ["git", "-c", "init.defaultBranch=main", "-c", "core.autocrlf=false"]
    _run([*git, "init", "-q"], "git init", cwd=testbed)
    _run([*git, "add", "-A"], "git add", cwd=testbed)
    _run([*git, "commit", "-q", "-m", f"{instance.project} base for {instance.instance_id}"], "git commit",
         cwd=testbed, env=GIT_ENV)
    base = _run(["git", "rev-parse", "HEAD"], "git rev-parse", cwd=testbed).stdout.strip()
    src.write_text(upstream_src)
    gold = _run(["git", "diff", "--", instance.source], "git diff", cwd=testbed).stdout
    src.write_text(_revert(upstream_src, instance))
    tests.write_text(upstream_tests)
    test_patch = _run(["git", "diff", "--", instance.test_file], "git diff", cwd=testbed).stdout
    _run(["git", "checkout", "-q", "--", "."], "git checkout", cwd=testbed)
    if not gold.strip() or not test_patch.strip():
        raise BuildError(f"{instance.instance_id}: empty gold or test patch")
    return base, gold, test_patch


def build_image(engine: str, name: str, testbed: Path, base_image: str, cache: Path) -> None:
    from polar_hpc.images.prepare import ImageJob, prepare_one, save_record

    rec = prepare_one(engine, cache, ImageJob(name, context=str(testbed), base=base_image))
    if rec.status != "ok":
        raise BuildError(f"{engine} build {name}: {rec.log_tail[-1500:]}")
    save_record(cache, engine, rec)


def run_tests(engine: str, image: str, spec: GradingSpec, gold: str | None) -> dict[str, str]:
    """Status per test after the eval script (with the gold patch applied first when given)."""
    script = eval_script(spec)
    if gold is not None:
        script = script.replace("set -uxo pipefail\n",
                                f"set -uxo pipefail\ncd {spec.repo_dir}\n"
                                f"git apply -v - <<'EOF_GOLD'\n{gold}\nEOF_GOLD\n", 1)
    res = _run([engine, "run", "--rm", "-i", "--network", "none", "--pull=never" if engine == "podman" else
                "--pull=never", image, "bash", "-s"], f"tests of {spec.instance_id}", input_text=script, check=False)
    status, found = own_status_map(spec, res.stdout + res.stderr)
    if not found or not status:
        raise BuildError(f"{spec.instance_id}: the tests did not run (exit {res.returncode}): "
                         f"{(res.stdout + res.stderr)[-1500:]}")
    return status


def _stamp(base_id: str) -> str:
    blob = msgspec.json.encode([VERSION, PROJECTS, INSTANCES, TEST_CMD, base_id])
    return hashlib.sha256(blob).hexdigest()


def build(out: Path | None = None, *, engine: str = "podman", base_image: str = SWE_BASE_IMAGE,
          force: bool = False) -> Path:
    """Build (or keep, when up to date) the task set; returns the ``tasks.jsonl`` path."""
    out = out or default_out()
    if not image_exists(engine, base_image):
        raise ImageBuildError(f"{engine} has no {base_image}: build it first (polar-hpc images build-base)")
    base_id = _run([engine, "image", "inspect", "-f", "{{.Id}}", base_image], "inspect").stdout.strip()
    stamp, tasks_path = _stamp(base_id), out / "tasks.jsonl"
    stamp_file = out / "stamp"
    if (not force and tasks_path.is_file() and stamp_file.is_file() and stamp_file.read_text() == stamp
            and all(image_exists(engine, image_name(i.instance_id)) for i in INSTANCES)):
        log.info("offline SWE task set is up to date: %s", tasks_path)
        return tasks_path
    projects = {p.name: p for p in PROJECTS}
    pristine: dict[str, Path] = {}
    for p in PROJECTS:
        pristine[p.name] = out / "src" / f"{p.name}-{p.version}"
        _extract(fetch_sdist(p, out / "sdists"), pristine[p.name])
    tasks, rows = [], []
    for inst in INSTANCES:
        project = projects[inst.project]
        testbed = out / "testbeds" / inst.instance_id
        base, gold, test_patch = build_repo(inst, pristine[inst.project], testbed)
        name = image_name(inst.instance_id)
        build_image(engine, name, testbed, base_image, out / "images")
        spec = GradingSpec(instance_id=inst.instance_id, repo=project.repo, version=project.version,
                           base_commit=base, test_patch=test_patch, test_cmd=TEST_CMD, log_parser="parse_log_pytest",
                           test_directives=test_directives(project.repo, test_patch), env_setup=[],
                           source="polar-offline")
        before = run_tests(engine, name, spec, None)
        after = run_tests(engine, name, spec, gold)
        ok = ("PASSED", "XFAIL")
        f2p = sorted(t for t, s in after.items() if s in ok and before.get(t) not in ok)
        p2p = sorted(t for t, s in after.items() if s in ok and before.get(t) in ok)
        if not f2p:
            raise BuildError(f"{inst.instance_id}: no test fails before the gold patch and passes after it")
        log.info("%s: %d FAIL_TO_PASS, %d PASS_TO_PASS", inst.instance_id, len(f2p), len(p2p))
        row: dict[str, Any] = {
            "repo": project.repo, "instance_id": inst.instance_id, "base_commit": base, "patch": gold,
            "test_patch": test_patch, "problem_statement": inst.problem_statement, "hints_text": "",
            "created_at": "2024-01-01T00:00:00Z", "version": project.version, "FAIL_TO_PASS": json.dumps(f2p),
            "PASS_TO_PASS": json.dumps(p2p), "environment_setup_commit": base}
        rows.append(row)
        tasks.append({**make_task_row(row, spec, name, dataset="polar-offline"), "image_context": str(testbed),
                      "image_base": base_image})
    out.mkdir(parents=True, exist_ok=True)
    (out / "instances.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks_path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    stamp_file.write_text(stamp)
    return tasks_path
