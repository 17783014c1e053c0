"""A real writer process for the crash tests: ``python -m tests.unit.store.writer_child DIR MODE``.

MODE ``loop``: add sessions forever, committing every 3; after each commit append the keys to DIR/../committed.txt.
MODE ``sigterm``: install the SIGTERM commit handler, add 5 sessions, print ``ready``, then sleep (deadline 60 s).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from polar_hpc.config.run import ShardConfig
from polar_hpc.store.writer import ShardWriter, install_sigterm_commit
from tests.fixtures.trajectories import make_session_result


def main() -> None:
    shards, mode = Path(sys.argv[1]), sys.argv[2]
    log = shards.parent / "committed.txt"
    rng = np.random.default_rng(7)

    def on_commit(path: Path, keys: list[str]) -> None:
        with open(log, "a") as f:
            f.write("".join(f"{path.name} {k}\n" for k in keys))

    if mode == "loop":
        w = ShardWriter(shards, 1, ShardConfig(max_sessions=3), {"mode": mode}, on_commit=on_commit)
        deadline = time.monotonic() + 60
        i = 0
        while time.monotonic() < deadline:
            w.add(
                make_session_result(
                    rng, task_id=f"t{i}", sample_index=0, turns=20, prompt_tokens=(400_000, 800_000)
                )
            )
            i += 1
        return
    w = ShardWriter(shards, 2, ShardConfig(max_sessions=100), {"mode": mode}, on_commit=on_commit)
    install_sigterm_commit(w)
    for i in range(5):
        w.add(make_session_result(rng, task_id=f"s{i}", sample_index=0))
    print("ready", flush=True)
    time.sleep(60)


if __name__ == "__main__":
    main()
