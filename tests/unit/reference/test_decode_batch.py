"""DecodeBatch against the model stepped one request at a time, on the real tiny Qwen3 (torch CPU).

Rows of different lengths decode together, join and leave mid-way, skip rounds; every row's logprobs must match
the same row stepped alone within ``LOGPROB_ATOL`` (two batch shapes round differently in the last bits), and a
row taken back out holds the same keys as the row stepped alone.
"""

from __future__ import annotations

import pytest
import torch

from polar_hpc.assets import AssetError, asset_path
from polar_hpc.reference.batch import DecodeBatch
from polar_hpc.reference.model import ModelRunner
from tests.fixtures.floats import LOGPROB_ATOL

LENGTHS = [37, 120, 5, 64, 200]


@pytest.fixture(scope="module")
def runner() -> ModelRunner:
    try:
        model_dir = asset_path("tiny-qwen3")
    except AssetError as err:
        pytest.fail(str(err), pytrace=False)
    torch.set_num_threads(1)
    return ModelRunner(model_dir)


def gap(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((torch.log_softmax(a, -1) - torch.log_softmax(b, -1)).abs().max())


def test_rows_decode_together_as_they_would_alone(runner: ModelRunner) -> None:
    gen = torch.Generator().manual_seed(0)
    prompts = [torch.randint(0, 1000, (n,), generator=gen).tolist() for n in LENGTHS]
    alone, tokens = [], []
    for p in prompts:
        logits, cache = runner.forward(p, None)
        alone.append(cache)
        tokens.append(int(torch.argmax(logits)))
    batch = DecodeBatch(alone[0], max_slots=16, slots=2)  # grows to 8 slots as rows join
    slots: dict[int, int] = {}
    worst = 0.0
    for step in range(30):
        if step in (0, 3):  # rows join in two waves (row 4, the longest, last)
            for row in ([0, 1, 2] if step == 0 else [3, 4]):
                slots[row] = batch.add(runner.forward(prompts[row], None)[1], len(prompts[row]))
        if step == 12:  # row 1 leaves (its cache back out) and joins again
            cache = batch.remove(slots.pop(1))
            assert cache.get_seq_length() == alone[1].get_seq_length()
            slots[1] = batch.add(cache, cache.get_seq_length())
        stepping = [r for r in slots if not (r == 2 and 5 <= step < 15)]  # row 2 sits out ten rounds
        out = batch.step(runner.model, {slots[r]: tokens[r] for r in stepping})
        assert sorted(out) == sorted(slots[r] for r in stepping)
        assert not any(x.requires_grad for x in out.values()), "a step builds no autograd graph (memory)"
        for r in stepping:
            logits, alone[r] = runner.forward([tokens[r]], alone[r])
            worst = max(worst, gap(out[slots[r]], logits))
            tokens[r] = int(torch.argmax(logits))
    assert worst < LOGPROB_ATOL, f"batched logprobs differ from one row alone by {worst:.2e}"
    assert batch.occupied == 5 and len(batch.used) == 8
    for r, slot in slots.items():
        back = batch.remove(slot)
        assert back.get_seq_length() == alone[r].get_seq_length()
        for ours, theirs in zip(back.layers, alone[r].layers, strict=True):
            torch.testing.assert_close(ours.keys, theirs.keys, atol=1e-4, rtol=0)
    assert batch.occupied == 0 and batch.width == 0


def test_a_full_batch_refuses_one_more(runner: ModelRunner) -> None:
    _, cache = runner.forward([1, 2, 3], None)
    batch = DecodeBatch(cache, slots=1, max_slots=2)
    batch.add(cache, 3)
    batch.add(cache, 3)
    assert batch.full
    with pytest.raises(RuntimeError, match="no free slot among 2"):
        batch.add(cache, 3)
