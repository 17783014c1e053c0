"""Our mirror of swebench's parsers and grading against swebench 4.1.0 itself, on the same logs."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.evaluate.swe_spec import GradingSpec
from polar_hpc.evaluate.swe_upstream import load
from polar_hpc.evaluate.swegrade import OWN_PARSERS, grade_log

BODY = """+ : '>>>>> Start Test Output'
+ pytest -rA tests/test_a.py
============================= test session starts ==============================
tests/test_a.py::test_ok PASSED                                          [ 25%]
\x1b[32mPASSED\x1b[0m tests/test_a.py::test_ok
FAILED tests/test_a.py::test_bad - AssertionError: assert 1 == 2
SKIPPED [1] tests/test_a.py:9: not today
XFAIL tests/test_a.py::test_x - reason
ERROR tests/test_a.py::test_err - fixture 'nope' not found
tests/test_a.py::test_old_style PASSED
PASSED tests/test_a.py::test_param[a-b c]
+ : '>>>>> End Test Output'
"""
F2P = ["tests/test_a.py::test_ok", "tests/test_a.py::test_bad", "tests/test_a.py::test_missing"]
P2P = ["tests/test_a.py::test_x", "tests/test_a.py::test_err"]


def spec(parser: str, fail_only: bool = False) -> GradingSpec:
    return GradingSpec(instance_id="o__r-1", repo="polar-test/r", version="1", base_commit="abc", test_patch="",
                       test_cmd="pytest -rA", log_parser=parser, test_directives=[], env_setup=[],
                       fail_only=fail_only, source="inline")


@pytest.mark.parametrize("parser", ["parse_log_pytest", "parse_log_pytest_v2"])
def test_parsers_agree(parser: str) -> None:
    up = load()
    for text in (BODY, BODY.replace("\n", "\r\n"), "no tests here"):
        assert OWN_PARSERS[parser](text) == up.parser(parser)(text, None)


@pytest.mark.parametrize("parser", ["parse_log_pytest", "parse_log_pytest_v2"])
@pytest.mark.parametrize("log", [BODY, BODY.replace(">>>>> End Test Output", ""),
                                 BODY + ">>>>> Tests Timed Out\n",
                                 BODY.replace("FAILED tests/test_a.py::test_bad", "PASSED tests/test_a.py::test_bad")])
@pytest.mark.parametrize("fail_only", [False, True])
def test_grading_agrees(tmp_path: Path, parser: str, log: str, fail_only: bool) -> None:
    path = tmp_path / "eval.log"
    path.write_text(log)
    s = spec(parser, fail_only)
    f2p, p2p = F2P[:2] if "PASSED tests/test_a.py::test_bad" in log else F2P, P2P
    ours = grade_log(s, f2p, p2p, str(path), prefer_upstream=False)
    theirs = grade_log(s, f2p, p2p, str(path), prefer_upstream=True)
    assert theirs.grader == "swebench 4.1.0" and ours.grader == "polar-hpc"
    mine = (ours.resolved, ours.found, ours.fail_to_pass, ours.pass_to_pass, ours.statuses)
    assert mine == (theirs.resolved, theirs.found, theirs.fail_to_pass, theirs.pass_to_pass, theirs.statuses)


def test_concurrent_first_loads_in_threads() -> None:
    """Gradings run in worker threads: concurrent first loads of swebench must all succeed (a race once failed
    with `swebench.__spec__ is None`)."""
    import subprocess
    import sys

    code = ("import concurrent.futures as f\nfrom polar_hpc.evaluate.swe_upstream import load\n"
            "with f.ThreadPoolExecutor(4) as p:\n    print({r.version for r in p.map(lambda _: load(), range(4))})\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "{'4.1.0'}", out.stderr[-2000:]
