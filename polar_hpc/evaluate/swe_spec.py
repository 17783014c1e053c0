"""The grading spec of one SWE instance: everything the ``swebench`` evaluator needs to run and read its tests.

SWE-bench instances take theirs from the ``swebench`` package (``MAP_REPO_VERSION_TO_SPECS``,
``MAP_REPO_TO_PARSER``). SWE-Gym's 11 extra repositories are not in it: their test commands and parsers below are
those of SWE-Gym's harness fork (SWE-Gym/SWE-Bench-Fork, ``swebench/harness/constants.py`` and
``log_parsers.py``), where every one is read with the pytest parser (pydantic: a variant of pytest_v2, whose
closest upstream parser is ``parse_log_pytest_v2``).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from polar_hpc.errors import PolarError

SPEC_KEY = "swe_spec"
"""Task metadata key (and imported row field) holding a :class:`GradingSpec` as JSON."""
TESTBED = "/testbed"
CONDA_ACTIVATE = ["source /opt/miniconda3/bin/activate", "conda activate testbed"]
"""How every SWE-bench / SWE-Gym image enters the instance's environment (swebench ``make_eval_script_list_py``)."""


class GradingSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    instance_id: str
    repo: str
    version: str
    base_commit: str
    test_patch: str
    test_cmd: str
    """The repo+version's test command; the test patch's files (:attr:`test_directives`) are appended."""
    log_parser: str
    """Name of a swebench log parser (``parse_log_pytest``, ``parse_log_django``, ...)."""
    test_directives: list[str]
    env_setup: list[str] = msgspec.field(default_factory=lambda: list(CONDA_ACTIVATE))
    eval_commands: list[str] = msgspec.field(default_factory=list)
    install: str | None = None
    """The spec's ``install`` command; the official eval script runs it before the tests (it may need network)."""
    repo_dir: str = TESTBED
    fail_only: bool = False
    """swebench's ``FAIL_ONLY_REPOS``: a test absent from the log counts as passed."""
    source: str = "swe-bench"


_SWEGYM_TEST_CMD = {
    "getmoto/moto": "pytest -n0 -rA",
    "conan-io/conan": "pytest -n0 -rA",
    "dask/dask": "pytest -n0 -rA  --color=no",
    "Project-MONAI/MONAI": "pytest -rA ",
    "iterative/dvc": "pytest -rA",
    "bokeh/bokeh": "pytest -rA -n0",
    "modin-project/modin": "pytest -n0 -rA",
    "HypothesisWorks/hypothesis": "pytest -n0 -rA --tb=no --no-header",
    "pydantic/pydantic": "pytest -rA --tb=short -vv -o console_output_style=classic --no-header",
    "pandas-dev/pandas": "pytest -rA --tb=long",
    "facebookresearch/hydra": "pytest -rA --tb=long",
}
_SWEGYM_PARSER = {"pydantic/pydantic": "parse_log_pytest_v2"}
_MYPY_XDIST = {"1.7", "1.8", "1.9", "1.10", "1.11"}
"""mypy versions whose SWE-Gym test command keeps xdist on (``pytest -rA -k``); older ones add ``-n0``."""

NON_TEST_EXTS = (".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml")
"""swebench ``NON_TEST_EXTS``: files of a test patch that are not test directives ("csv" without its dot, as there)."""
_DIFF_TARGET = re.compile(r"diff --git a/.* b/(.*)")


def test_directives(repo: str, test_patch: str) -> list[str]:
    """swebench ``get_test_directives``: the test patch's files, django's as dotted module names."""
    directives = [d for d in _DIFF_TARGET.findall(test_patch) if not any(d.endswith(e) for e in NON_TEST_EXTS)]
    if repo == "django/django":
        out = []
        for d in directives:
            d = d[: -len(".py")] if d.endswith(".py") else d
            d = d[len("tests/") :] if d.startswith("tests/") else d
            out.append(d.replace("/", "."))
        return out
    return directives


def modified_files(patch: str) -> list[str]:
    """swebench ``get_modified_files``: files a patch changes that existed before it (not created by it)."""
    files: list[str] = []
    source: str | None = None
    for line in patch.splitlines():
        if line.startswith("--- "):
            source = line[4:].split("\t", 1)[0].strip()
        elif line.startswith("+++ ") and source is not None:
            if source != "/dev/null" and source.startswith("a/"):
                files.append(source[2:])
            source = None
    return files


class SpecError(PolarError, ValueError):
    """A row whose repo/version has no known test command or parser."""


def _common(row: dict[str, Any]) -> dict[str, Any]:
    return {"instance_id": str(row["instance_id"]), "repo": str(row["repo"]), "version": str(row["version"]),
            "base_commit": str(row["base_commit"]), "test_patch": str(row["test_patch"])}


def swebench_spec(row: dict[str, Any]) -> GradingSpec:
    """From the installed swebench package (raises ``UpstreamUnavailable`` when it is not installed)."""
    from polar_hpc.evaluate.swe_upstream import load

    up = load()
    repo, version = str(row["repo"]), str(row["version"])
    specs = up.specs(repo, version)
    parser = up.parser_name(repo)
    if specs is None or parser is None:
        raise SpecError(f"swebench {up.version} has no test spec for {repo} version {version!r}")
    test_cmd = specs["test_cmd"]
    return GradingSpec(**_common(row), test_cmd=test_cmd if isinstance(test_cmd, str) else " ".join(test_cmd),
                       log_parser=parser, test_directives=test_directives(repo, str(row["test_patch"])),
                       eval_commands=list(specs.get("eval_commands", [])), install=specs.get("install"),
                       fail_only=repo in up.constants.FAIL_ONLY_REPOS, source="swe-bench")


def swegym_spec(row: dict[str, Any]) -> GradingSpec:
    """From SWE-Gym's harness fork (the table above); ``install`` is left out: SWE-Gym's images are built with it."""
    repo, version = str(row["repo"]), str(row["version"])
    patch = str(row["test_patch"])
    if repo == "python/mypy":
        keys = " or ".join(re.findall(r"\[case ([^\]]+)\]", patch))
        cmd = "pytest -rA -k" if version in _MYPY_XDIST else "pytest -n0 -rA -k"
        return GradingSpec(**_common(row), test_cmd=f'{cmd} "{keys}"', log_parser="parse_log_pytest",
                           test_directives=[], source="swe-gym")
    if repo not in _SWEGYM_TEST_CMD:
        try:
            return msgspec.structs.replace(swebench_spec(row), source="swe-gym")
        except SpecError:
            raise SpecError(f"SWE-Gym repo {repo} is neither one of SWE-Gym's own "
                            f"({', '.join(sorted(_SWEGYM_TEST_CMD))}, "
                            "python/mypy) nor in swebench's specs") from None
    return GradingSpec(**_common(row), test_cmd=_SWEGYM_TEST_CMD[repo],
                       log_parser=_SWEGYM_PARSER.get(repo, "parse_log_pytest"),
                       test_directives=test_directives(repo, patch), source="swe-gym")
