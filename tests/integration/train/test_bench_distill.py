"""The paper-in-miniature pipeline (``tools/bench/bench_distill.py --quick``) on tiny Qwen3, so that it cannot rot:
the oracle corpus of 3 train tasks through the real pi CLI in bwrap, ``export sft`` of its token rows, ``train sft``,
the checkpoint served by the reference server in an ``eval`` of 2 held-out tasks, two ``train grpo`` steps from it
through pi, and an ``eval`` of the GRPO checkpoint; then the same work dir again, resumed with nothing re-run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from polar_hpc.measure.causes import FAILURES
from polar_hpc.store.schema import SESSION_REWARD
from tests.integration.launch.helpers import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.harness]

BENCH = ROOT / "tools" / "bench" / "bench_distill.py"


def _bench(work: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(BENCH), "--quick", "--skip-base", "--work", str(work),
                           "--json", str(out)], capture_output=True, text=True, timeout=1500, cwd=ROOT)


@pytest.mark.timeout(1600)
def test_quick_pipeline_corpus_sft_eval_grpo_eval(tmp_path: Path) -> None:
    work, out = tmp_path / "work", tmp_path / "table.json"
    done = _bench(work, out)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    rows = json.loads(out.read_text())
    assert [(r["harness"], r["phase"]) for r in rows] == [("pi", "sft"), ("pi", "sft+grpo")]
    for r in rows:
        assert r["split"] == "heldout" and r["n"] == 2
        assert 0.0 <= r["ci_low"] <= r["pass_at_1"] <= r["ci_high"] <= 1.0, r
        assert set(r["causes"]) == set(FAILURES), r
        assert r["model"] == "asset:tiny-qwen3"
    paired = rows[1]["vs_sft"]  # SFT+GRPO against SFT, task by task (eval --paired)
    assert paired["tasks"] == 2 and paired["better"] + paired["worse"] <= 2 and 0.0 < paired["p_value"] <= 1.0
    assert "vs_sft" not in rows[0] and "better on" in done.stdout
    corpus = rows[0]["corpus"]
    assert corpus["sessions"] == 3 and corpus["trainable_tokens"] > 0, corpus
    walls = rows[0]["phase_wall_s"]
    assert {"corpus", "export", "sft", "eval-sft", "grpo", "eval-grpo"} <= set(walls), walls

    # every oracle session of the corpus solved its task: the demonstrations are gold
    shards = sorted((work / "corpus-pi" / "shards").glob("*.h5"))
    assert shards
    rewards = []
    for path in shards:
        with h5py.File(path, "r") as f:
            rewards += [float(x) for x in f[SESSION_REWARD][()]]
    assert rewards == [1.0, 1.0, 1.0], rewards
    assert (work / "sft-model" / "config.json").is_file()
    assert (work / "grpo" / "checkpoints" / "step-2" / "config.json").is_file()

    again = _bench(work, out)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert again.stdout.count("done before") == 7, again.stdout  # corpus, inspect, export, sft, grpo, 2 evals
    assert json.loads(out.read_text()) == rows
