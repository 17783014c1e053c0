"""Parse pytest / unittest output into ``{test id: status}`` and grade FAIL_TO_PASS / PASS_TO_PASS.

Written here rather than taken from the ``swebench`` package: its log parsers live under
``swebench.harness``, whose ``__init__`` imports the Docker harness (docker, unidiff, requests, ...), so they
cannot be imported without that stack.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS = "PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS"
_OK = {PASSED, XFAIL}
_STATUSES = (PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS)

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# pytest -rA summary:  "FAILED tests/test_a.py::test_x - AssertionError: ..."
_PYTEST_SUMMARY = re.compile(rf"^({'|'.join(_STATUSES)}) (\S+::\S+|\S+\.py)(?: - .*)?$")
# pytest -v:  "tests/test_a.py::test_x PASSED    [ 50%]"
_PYTEST_VERBOSE = re.compile(rf"^(\S+::\S+) ({'|'.join(_STATUSES)})(?:\s+\[\s*\d+%\])?\s*$")
# unittest -v:  "test_x (pkg.mod.Class.test_x) ... ok"  (3.11+)  or  "test_x (pkg.mod.Class) ... FAIL"
_UNITTEST = re.compile(r"^(\w+) \(([\w.]+)\)(?:\n.*)? \.\.\. (ok|FAIL|ERROR|skipped.*|expected failure|"
                       r"unexpected success)$")
_UNITTEST_STATUS = {"ok": PASSED, "FAIL": FAILED, "ERROR": ERROR, "expected failure": XFAIL,
                    "unexpected success": XPASS}


def _unittest_names(method: str, where: str) -> list[str]:
    cls = where[: -len(method) - 1] if where.endswith("." + method) else where
    return [f"{method} ({cls})", f"{cls}.{method}", f"{method} ({cls}.{method})"]


def parse_test_log(log: str) -> dict[str, str]:
    """Status per test id from pytest (``-rA`` summary or ``-v``) and unittest (``-v``) output."""
    statuses: dict[str, str] = {}
    for raw in _ANSI.sub("", log).splitlines():
        line = raw.rstrip()
        if m := _PYTEST_SUMMARY.match(line):
            statuses[m.group(2)] = m.group(1)
        elif m := _PYTEST_VERBOSE.match(line):
            statuses.setdefault(m.group(1), m.group(2))
        elif m := _UNITTEST.match(line):
            word = m.group(3)
            status = SKIPPED if word.startswith("skipped") else _UNITTEST_STATUS[word]
            for name in _unittest_names(m.group(1), m.group(2)):
                statuses[name] = status
    return statuses


def _lookup(statuses: dict[str, str], test: str) -> str | None:
    if test in statuses:
        return statuses[test]
    # pytest parametrized ids and trimmed paths: accept a unique id ending with the wanted one
    hits = [s for k, s in statuses.items() if k.endswith("::" + test) or k.endswith("/" + test)]
    return hits[0] if len(hits) == 1 else None


def grade(statuses: dict[str, str], fail_to_pass: Iterable[str], pass_to_pass: Iterable[str]) -> dict[str, Any]:
    """``resolved`` when every FAIL_TO_PASS test passes and every PASS_TO_PASS test still passes."""
    report: dict[str, Any] = {}
    for label, tests in (("FAIL_TO_PASS", list(fail_to_pass)), ("PASS_TO_PASS", list(pass_to_pass))):
        ok, bad = [], {}
        for t in tests:
            s = _lookup(statuses, t)
            if s in _OK:
                ok.append(t)
            else:
                bad[t] = s or "MISSING"
        report[label] = {"success": ok, "failure": bad}
    report["resolved"] = not report["FAIL_TO_PASS"]["failure"] and not report["PASS_TO_PASS"]["failure"]
    return report
