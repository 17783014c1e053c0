"""SWE-bench grading, as the official harness does it (swebench 4.1.0 ``run_evaluation`` / ``grading``).

The model patch is applied with the harness's commands in order (``git apply --verbose``, then with
``--reject``, then ``patch --batch --fuzz=5 -p1 -i``); the eval script (:func:`eval_script`, the same lines as
swebench's ``make_eval_script_list_py``) resets the test files, applies the test patch and runs the test command
between the start/end markers, its output and errors in one log; the log is read with the repo's swebench parser
and graded: resolved only when every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes.

With the swebench package installed (``evaluate.swe_upstream``) its own parsers and ``get_logs_eval`` /
``get_eval_tests_report`` / ``get_resolution_status`` do the reading and grading; without it the mirror below
does (tested against swebench on the same logs).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import msgspec

from polar_hpc.evaluate.swe_spec import GradingSpec, modified_files
from polar_hpc.log import get_logger

log = get_logger("evaluate")

GIT_APPLY_CMDS = ("git apply --verbose", "git apply --verbose --reject", "patch --batch --fuzz=5 -p1 -i")
START_TEST_OUTPUT = ">>>>> Start Test Output"
END_TEST_OUTPUT = ">>>>> End Test Output"
BAD_CODES = (">>>>> Patch Apply Failed", ">>>>> Reset Failed", ">>>>> Tests Errored", ">>>>> Tests Timed Out")
HEREDOC = "EOF_114329324912"
PASSED, FAILED, SKIPPED, ERROR, XFAIL = "PASSED", "FAILED", "SKIPPED", "ERROR", "XFAIL"
STATUSES = (FAILED, PASSED, SKIPPED, ERROR, XFAIL)
"""swebench ``TestStatus`` values, in its order."""


class GradeReport(msgspec.Struct, kw_only=True):
    resolved: bool
    found: bool
    """The log held a test run between the markers (False: nothing to grade, as swebench's ``found``)."""
    fail_to_pass: dict[str, list[str]]
    """``success`` / ``failure`` test ids."""
    pass_to_pass: dict[str, list[str]]
    statuses: int
    """How many tests the parser read."""
    grader: str
    """``swebench <version>`` or ``polar-hpc``."""


def eval_script(spec: GradingSpec) -> str:
    """The eval script of an instance: swebench's ``make_eval_script_list_py`` lines under ``eval_script``'s
    header (``#!/bin/bash``, ``set -uxo pipefail``)."""
    test_files = modified_files(spec.test_patch)
    reset = f"git checkout {spec.base_commit} {' '.join(test_files)}"
    lines = [*spec.env_setup, f"cd {spec.repo_dir}", *spec.eval_commands,
             f"git config --global --add safe.directory {spec.repo_dir}", f"cd {spec.repo_dir}",
             "git status", "git show", f"git -c core.fileMode=false diff {spec.base_commit}", *spec.env_setup]
    if spec.install:
        lines.append(spec.install)
    lines += [reset, f"git apply -v - <<'{HEREDOC}'\n{spec.test_patch}\n{HEREDOC}", f": '{START_TEST_OUTPUT}'",
              " ".join([spec.test_cmd, *spec.test_directives]), f": '{END_TEST_OUTPUT}'", reset]
    return "\n".join(["#!/bin/bash", "set -uxo pipefail", *lines]) + "\n"


# ---- the mirror of swebench's python log parsers and grading -------------------------------------------------
def _pytest(log_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in log_text.split("\n"):
        if any(line.startswith(s) for s in STATUSES):
            if line.startswith(FAILED):
                line = line.replace(" - ", " ")
            parts = line.split()
            if len(parts) > 1:
                out[parts[1]] = parts[0]
    return out


_ESCAPES = str.maketrans("", "", "".join(chr(c) for c in range(1, 32)))


def _pytest_v2(log_text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in log_text.split("\n"):
        line = re.sub(r"\[(\d+)m", "", line).translate(_ESCAPES)
        if any(line.startswith(s) for s in STATUSES):
            if line.startswith(FAILED):
                line = line.replace(" - ", " ")
            parts = line.split()
            if len(parts) >= 2:
                out[parts[1]] = parts[0]
        elif any(line.endswith(s) for s in STATUSES):
            parts = line.split()
            if len(parts) >= 2:
                out[parts[0]] = parts[1]
    return out


OWN_PARSERS: dict[str, Callable[[str], dict[str, str]]] = {
    "parse_log_pytest": _pytest,
    "parse_log_pytest_v2": _pytest_v2,
    # swebench aliases of the two above (log_parsers/python.py)
    **{f"parse_log_{n}": _pytest for n in ("flask", "marshmallow", "pvlib", "pyvista", "sqlfluff", "xarray")},
    **{f"parse_log_{n}": _pytest_v2 for n in ("astropy", "scikit", "sphinx")},
}


def _passed(test: str, sm: dict[str, str]) -> bool:
    return test in sm and sm[test] in (PASSED, XFAIL)


def _failed(test: str, sm: dict[str, str]) -> bool:
    return test not in sm or sm[test] in (FAILED, ERROR)


def _split(tests: list[str], sm: dict[str, str], fail_only: bool) -> dict[str, list[str]]:
    ok: list[str] = []
    bad: list[str] = []
    for t in tests:
        if fail_only:
            (bad if sm.get(t) == FAILED else ok).append(t)
        elif _passed(t, sm):
            ok.append(t)
        elif _failed(t, sm):
            bad.append(t)
    return {"success": ok, "failure": bad}


def own_status_map(spec: GradingSpec, log_text: str) -> tuple[dict[str, str], bool]:
    """``get_logs_eval``: (status map, found) from the whole eval log."""
    parser = OWN_PARSERS.get(spec.log_parser)
    if parser is None:
        raise KeyError(f"log parser {spec.log_parser!r} needs the swebench package (polar-hpc has "
                       f"{', '.join(sorted(OWN_PARSERS))})")
    if any(code in log_text for code in BAD_CODES):
        return {}, False
    if START_TEST_OUTPUT not in log_text or END_TEST_OUTPUT not in log_text:
        return {}, False
    inside = log_text.split(START_TEST_OUTPUT)[1].split(END_TEST_OUTPUT)[0]
    return parser(inside) or parser(log_text), True


def _own_grade(spec: GradingSpec, f2p: list[str], p2p: list[str], log_text: str) -> GradeReport:
    sm, found = own_status_map(spec, log_text)
    f, p = _split(f2p, sm, spec.fail_only), _split(p2p, sm, spec.fail_only)
    resolved = found and not f["failure"] and not p["failure"]  # get_resolution_status: both ratios 1
    return GradeReport(resolved=resolved, found=found, fail_to_pass=f, pass_to_pass=p, statuses=len(sm),
                       grader="polar-hpc")


# ---- grading through the swebench package ------------------------------------------------------------------
def _upstream_grade(spec: GradingSpec, f2p: list[str], p2p: list[str], log_path: str) -> GradeReport:
    from polar_hpc.evaluate.swe_upstream import load

    up = load()
    c = up.constants
    # get_logs_eval looks the parser and test command up by repo+version: an instance of a repository swebench's
    # tables lack (SWE-Gym's, real-repo task sets) is registered under its own spec first; known ones stay
    if spec.repo not in up.native_repos:
        c.MAP_REPO_VERSION_TO_SPECS.setdefault(spec.repo, {})[spec.version] = {"test_cmd": spec.test_cmd}
        up.log_parsers.MAP_REPO_TO_PARSER[spec.repo] = up.parser(spec.log_parser)
    test_spec: Any = up.test_spec_cls(
        instance_id=spec.instance_id, repo=spec.repo, version=spec.version, repo_script_list=[],
        eval_script_list=[], env_script_list=[], arch="x86_64", FAIL_TO_PASS=list(f2p), PASS_TO_PASS=list(p2p),
        language="py", docker_specs={}, namespace=None)
    sm, found = up.grading.get_logs_eval(test_spec, log_path)
    eval_type = c.EvalType.FAIL_ONLY if spec.fail_only else c.EvalType.PASS_AND_FAIL
    report = up.grading.get_eval_tests_report(sm, {"FAIL_TO_PASS": f2p, "PASS_TO_PASS": p2p}, eval_type=eval_type)
    resolved = found and up.grading.get_resolution_status(report) == c.ResolvedStatus.FULL.value
    return GradeReport(resolved=bool(resolved), found=bool(found), fail_to_pass=report["FAIL_TO_PASS"],
                       pass_to_pass=report["PASS_TO_PASS"], statuses=len(sm), grader=f"swebench {up.version}")


def grade_log(spec: GradingSpec, f2p: list[str], p2p: list[str], log_path: str, *,
              prefer_upstream: bool = True) -> GradeReport:
    """Grade one eval log: with swebench's own code when it is installed, else with the mirror."""
    if prefer_upstream:
        from polar_hpc.evaluate.swe_upstream import available

        if available():
            return _upstream_grade(spec, f2p, p2p, log_path)
    with open(log_path, encoding="utf-8", errors="replace") as fh:
        return _own_grade(spec, f2p, p2p, fh.read())
