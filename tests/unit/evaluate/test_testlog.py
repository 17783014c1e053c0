from __future__ import annotations

from polar_hpc.evaluate.testlog import grade, parse_test_log

PYTEST_RA = """\
============================= test session starts ==============================
tests/test_a.py::test_one PASSED                                         [ 33%]
tests/test_a.py::test_two[x-1] FAILED                                    [ 66%]
tests/test_a.py::TestK::test_three SKIPPED (nope)                        [100%]
=========================== short test summary info ============================
PASSED tests/test_a.py::test_one
FAILED tests/test_a.py::test_two[x-1] - AssertionError: assert 1 == 2
ERROR tests/test_b.py::test_setup - RuntimeError: boom
XFAIL tests/test_a.py::test_known - reason
"""

UNITTEST = """\
test_add (tests.test_calc.Calc.test_add) ... ok
test_div (tests.test_calc.Calc) ... FAIL
test_old (tests.test_calc.Calc.test_old) ... skipped 'legacy'
test_bad (tests.test_calc.Calc.test_bad) ... ERROR
"""


def test_pytest_summary_and_verbose_lines() -> None:
    s = parse_test_log(PYTEST_RA)
    assert s["tests/test_a.py::test_one"] == "PASSED"
    assert s["tests/test_a.py::test_two[x-1]"] == "FAILED"
    assert s["tests/test_b.py::test_setup"] == "ERROR"
    assert s["tests/test_a.py::test_known"] == "XFAIL"


def test_unittest_ids_in_both_spellings() -> None:
    s = parse_test_log(UNITTEST)
    assert s["test_add (tests.test_calc.Calc)"] == s["tests.test_calc.Calc.test_add"] == "PASSED"
    assert s["tests.test_calc.Calc.test_div"] == "FAILED"
    assert s["test_old (tests.test_calc.Calc)"] == "SKIPPED"
    assert s["test_bad (tests.test_calc.Calc)"] == "ERROR"


def test_grade_requires_all_fail_to_pass_and_pass_to_pass() -> None:
    s = parse_test_log(PYTEST_RA)
    assert grade(s, ["tests/test_a.py::test_one"], ["tests/test_a.py::test_known"])["resolved"]
    r = grade(s, ["tests/test_a.py::test_one", "test_two[x-1]"], ["tests/test_gone.py::test_x"])
    assert not r["resolved"]
    assert r["FAIL_TO_PASS"]["failure"] == {"test_two[x-1]": "FAILED"}
    assert r["PASS_TO_PASS"]["failure"] == {"tests/test_gone.py::test_x": "MISSING"}
