"""`polar-hpc tasks import` on hand-written rows in the published SWE-bench and SWE-Gym schemas."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from polar_hpc.cli.entry import main
from polar_hpc.evaluate.swe_spec import GradingSpec, modified_files
from polar_hpc.evaluate.swe_upstream import load
from polar_hpc.evaluate.swegrade import eval_script
from polar_hpc.tasks.images import swebench_image, swegym_image
from polar_hpc.tasks.importer import TaskImportError, import_rows

ROWS = Path(__file__).parents[2] / "fixtures" / "swe_rows"


def rows(name: str) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in (ROWS / name).read_text().splitlines()]


def imported(tmp_path: Path, dataset: str, name: str) -> list[dict]:  # type: ignore[type-arg]
    out = tmp_path / f"{dataset}.jsonl"
    assert main(["tasks", "import", dataset, str(ROWS / name), "--out", str(out)]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_published_image_names() -> None:
    assert swebench_image("django__django-11099") == "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    assert swebench_image("Project-MONAI__MONAI-1") == "swebench/sweb.eval.x86_64.project-monai_1776_monai-1:latest"
    assert swegym_image("getmoto__moto-5752") == "xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752:latest"
    assert swegym_image("Project-MONAI__MONAI-2") == "xingyaoww/sweb.eval.x86_64.project-monai_s_monai-2:latest"


def test_swe_bench_rows_get_swebench_specs(tmp_path: Path) -> None:
    tasks = {t["instance_id"]: t for t in imported(tmp_path, "swe-bench", "swe-bench.jsonl")}
    dj = tasks["django__django-11099"]
    assert dj["image"] == "docker://swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    assert dj["FAIL_TO_PASS"] == ["test_ascii_validator (auth_tests.test_validators.UsernameValidatorsTests)"]
    assert dj["solution_patch"] == rows("swe-bench.jsonl")[0]["patch"]
    spec = msgspec.convert(dj["swe_spec"], GradingSpec)
    up = load()
    assert spec.test_cmd == up.constants.MAP_REPO_VERSION_TO_SPECS["django/django"]["3.0"]["test_cmd"]
    assert spec.log_parser == "parse_log_django" and spec.test_directives == ["auth_tests.test_validators"]
    assert msgspec.convert(tasks["astropy__astropy-12907"]["swe_spec"], GradingSpec).log_parser == "parse_log_pytest_v2"


@pytest.mark.parametrize("index", [0, 1, 2])
def test_eval_script_is_swebench_own(index: int) -> None:
    """Our eval script is line for line what swebench's make_eval_script_list_py builds for the instance."""
    from polar_hpc.evaluate.swe_spec import swebench_spec

    row = rows("swe-bench.jsonl")[index]
    up = load()
    specs = up.specs(row["repo"], row["version"])
    theirs = up.test_spec_python.make_eval_script_list_py(row, specs, "testbed", "/testbed", row["base_commit"],
                                                          row["test_patch"])
    ours = eval_script(swebench_spec(row))
    assert ours == "\n".join(["#!/bin/bash", "set -uxo pipefail", *theirs]) + "\n"
    assert modified_files(row["test_patch"]) == up.test_spec_python.get_modified_files(row["test_patch"])


def test_swe_gym_rows_get_swe_gym_specs(tmp_path: Path) -> None:
    tasks = {t["instance_id"]: t for t in imported(tmp_path, "swe-gym", "swe-gym.jsonl")}
    moto = tasks["getmoto__moto-5752"]
    assert moto["image"] == "docker://xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752:latest"
    spec = msgspec.convert(moto["swe_spec"], GradingSpec)
    assert (spec.test_cmd, spec.test_directives, spec.log_parser) == (
        "pytest -n0 -rA", ["tests/test_ssm/test_ssm_boto3.py"], "parse_log_pytest")
    mypy = msgspec.convert(tasks["python__mypy-11220"]["swe_spec"], GradingSpec)
    assert mypy.test_cmd == 'pytest -n0 -rA -k "testFinalDefiningModuleVar or testFinalInStub"'
    assert mypy.test_directives == []


def test_parquet_rows_as_datasets_exports_them(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets", reason="the train extra installs datasets")
    path = tmp_path / "rows.parquet"
    datasets.Dataset.from_list(rows("swe-gym.jsonl")).to_parquet(str(path))
    assert import_rows("swe-gym", path, tmp_path / "out.jsonl") == 3


def test_bad_rows_are_clear_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    row = rows("swe-bench.jsonl")[0]
    del row["test_patch"]
    bad.write_text(json.dumps(row) + "\n")
    with pytest.raises(TaskImportError, match=r"bad.jsonl:1: a swe-bench row needs test_patch"):
        import_rows("swe-bench", bad, tmp_path / "o.jsonl")
    unknown = {**rows("swe-bench.jsonl")[0], "repo": "someone/unknown", "instance_id": "someone__unknown-1"}
    bad.write_text(json.dumps(unknown) + "\n")
    assert main(["tasks", "import", "swe-bench", str(bad), "--out", str(tmp_path / "o.jsonl")]) == 2
    assert "instance someone__unknown-1: swebench 4.1.0 has no test spec for someone/unknown" in capsys.readouterr().err
    bad.write_text("")
    with pytest.raises(TaskImportError, match="holds no rows"):
        import_rows("swe-bench", bad, tmp_path / "o.jsonl")
    assert not (tmp_path / "o.jsonl").exists()
