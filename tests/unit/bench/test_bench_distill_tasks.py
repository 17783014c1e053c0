"""``tools/bench/bench_distill.py``'s corpus tasks: which rows become recovery demonstrations."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools" / "bench"))

from bench_distill import subset, with_first_tries  # noqa: E402

from polar_hpc.wire.session import SOLUTION_COMMANDS, SOLUTION_FIRST_TRY  # noqa: E402


def _demos(path: Path) -> list[bool]:
    return [SOLUTION_FIRST_TRY in json.loads(line) for line in path.read_text().splitlines()]


def test_converted_and_added_recovery_demonstrations(tmp_path: Path) -> None:
    every_third = with_first_tries(subset(tmp_path, "train", 7, name="a"), 3)
    assert _demos(every_third) == [True, False, False, True, False, False, True]
    added = with_first_tries(subset(tmp_path, "train", 7, name="b"), 1, start=5)
    assert _demos(added) == [False] * 5 + [True, True]
    row = json.loads(added.read_text().splitlines()[5])
    assert row[SOLUTION_FIRST_TRY] != row[SOLUTION_COMMANDS]  # a first fix that misses, not the gold one


def test_more_corpus_tasks_than_the_split_holds_is_one_line_before_work(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "bench" / "bench_distill.py"), "--train", "150",
                           "--retry-demos-added", "100000", "--work", str(tmp_path / "w")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "--retry-demos-added 100000" in proc.stderr and "the train split" in proc.stderr
    assert not (tmp_path / "w").exists()
