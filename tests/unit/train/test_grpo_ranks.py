"""Several trainer processes (``train/grpo/ranks``), on two real gloo processes: rank 0 alone collects a step for
every rank's prompts (in rank order) and each rank gets its own slice; a stop on rank 0 stops every rank with the
same signal; the step-end agreement takes any rank's signal; the weights digest tells equal from different."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the train extra is not installed")
pytest.importorskip("accelerate", reason="the train extra is not installed")


class _Step:
    """Rank 0's collector: one row per prompt (its completion names the prompt), the calls it got recorded."""

    def __init__(self, stop_at: int | None = None) -> None:
        self.calls: list[list[str]] = []
        self.last = None
        self.stop_at = stop_at

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, Any]:
        from polar_hpc.train.grpo.stop import Stopped

        self.calls.append(list(prompts))
        if self.stop_at is not None and len(self.calls) > self.stop_at:
            raise Stopped(signal.SIGUSR2)
        return {"prompt_ids": [[1]] * len(prompts), "completion_ids": [[int(p[1:])] for p in prompts],
                "logprobs": [[0.0]] * len(prompts)}


def _worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world),
                      LOCAL_RANK=str(rank))
    from accelerate import PartialState

    from polar_hpc.train.grpo.ranks import RankedRollouts, Ranks, agree_stop, check_in_sync, weights_digest
    from polar_hpc.train.grpo.stop import Stopped

    ranks = Ranks(PartialState(cpu=True))
    step = _Step(stop_at=1) if ranks.main else None
    ro = RankedRollouts(step, ranks)
    mine = [f"t{rank * 2}", f"t{rank * 2}", f"t{rank * 2 + 1}", f"t{rank * 2 + 1}"]
    got = ro(mine, None)["completion_ids"]
    stopped = 0
    try:
        ro(mine, None)
    except Stopped as err:
        stopped = err.signum
    agreed = agree_stop(int(signal.SIGTERM) if rank == 1 else 0)
    model = torch.nn.Linear(2, 2)
    torch.manual_seed(0)
    torch.nn.init.normal_(model.weight)
    torch.nn.init.zeros_(model.bias)
    same = check_in_sync(model, ranks)
    Path(out, f"rank-{rank}.txt").write_text(repr({
        "got": got, "stopped": stopped, "agreed": agreed, "same": same == weights_digest(model),
        "calls": step.calls if step else None}))
    ranks.barrier()


@pytest.mark.slow  # two spawned trainer processes (torch, gloo), each importing torch and TRL
def test_rank_0_collects_the_step_and_every_rank_gets_its_slice(tmp_path: Path) -> None:
    import ast

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.start_processes(_worker, args=(2, port, str(tmp_path)), nprocs=2, join=True, start_method="spawn")
    r0 = ast.literal_eval((tmp_path / "rank-0.txt").read_text())
    r1 = ast.literal_eval((tmp_path / "rank-1.txt").read_text())
    # rank 0 was called once per step with every rank's prompts, in rank order (the one-process order)
    assert r0["calls"] == [["t0", "t0", "t1", "t1", "t2", "t2", "t3", "t3"]] * 2
    assert r0["got"] == [[0], [0], [1], [1]] and r1["got"] == [[2], [2], [3], [3]]
    assert r0["stopped"] == r1["stopped"] == signal.SIGUSR2  # rank 0's stop reached rank 1
    assert r0["agreed"] == r1["agreed"] == signal.SIGTERM  # rank 1's signal stops rank 0 at the step end
    assert r0["same"] and r1["same"]


def test_a_step_that_does_not_split_across_the_ranks_is_refused() -> None:
    from polar_hpc.config import ConfigError, load_recipe
    from polar_hpc.train.grpo.ranks import check_ranks

    root = Path(__file__).parents[3]
    cfg = load_recipe(root / "recipes" / "local-grpo.toml", ["trainer.groups_per_step=3", "tasks.num_samples=3"])
    check_ranks(cfg, 3)
    with pytest.raises(ConfigError, match="9 rows .* do not split across 2 trainer processes"):
        check_ranks(cfg, 2)
    session = load_recipe(root / "recipes" / "local-grpo.toml", ["trainer.loss_norm=session"])
    check_ranks(session, 1)
    with pytest.raises(ConfigError, match="loss_norm = 'session' .* 2 trainer processes"):
        check_ranks(session, 2)


def test_credit_rows_split_evenly_padded_with_rows_that_train_nothing() -> None:
    from polar_hpc.train.grpo.ranks import rank_slice

    rows = {"prompt_ids": [[1, 2], [3], [4], [5], [6]], "completion_ids": [[7], [8], [9], [10], [11]],
            "logprobs": [[-0.1]] * 5, "env_mask": [[1]] * 5, "reward": [1.0, 1.0, 0.0, 0.0, 1.0],
            "advantage": [0.5, 0.5, -1.0, -1.0, 0.5], "session": ["g/0", "g/0", "g/1", "g/2", "h/0"],
            "group": ["g", "g", "g", "g", "h"]}
    parts = [rank_slice(rows, r, 2) for r in range(2)]
    assert [len(p["prompt_ids"]) for p in parts] == [3, 3]
    assert parts[0]["session"] + parts[1]["session"][:2] == rows["session"]  # contiguous, in order
    pad = {k: v[-1] for k, v in parts[1].items()}
    assert pad["env_mask"] == [0] and pad["advantage"] == 0.0 and pad["reward"] is None, pad
    assert pad["session"] not in rows["session"] and pad["group"] not in rows["group"]
    assert rank_slice(rows, 0, 1) == rows
