"""PrefixCache bookkeeping, with a real transformers DynamicCache as the entry."""

from __future__ import annotations

import torch
from transformers import DynamicCache

from polar_hpc.reference.prefix_cache import PrefixCache, common_prefix


def kv(n: int) -> DynamicCache:
    cache = DynamicCache()
    cache.update(torch.zeros(1, 1, n, 2), torch.zeros(1, 1, n, 2), 0)
    return cache


def test_longest_prefix_is_taken_cropped_and_removed() -> None:
    pc = PrefixCache()
    pc.put([1, 2, 3, 4], kv(4))
    pc.put([1, 2, 9], kv(3))
    cache, n = pc.take([1, 2, 3, 7, 8])
    assert n == 3 and cache.get_seq_length() == 3
    assert len(pc) == 1  # taken exclusively
    again, m = pc.take([1, 2, 3, 7])
    assert m == 2 and again.get_seq_length() == 2


def test_full_match_leaves_one_token_to_forward() -> None:
    pc = PrefixCache()
    pc.put([5, 6, 7], kv(3))
    cache, n = pc.take([5, 6, 7])
    assert n == 2 and cache.get_seq_length() == 2


def test_no_match_and_eviction() -> None:
    pc = PrefixCache(max_tokens=5)
    assert pc.take([1, 2]) == (None, 0)
    pc.put([1, 2, 3], kv(3))
    pc.put([4, 5, 6], kv(3))  # over budget: the oldest entry goes
    assert len(pc) == 1 and pc.take([1, 2, 3, 4]) == (None, 0)
    pc.clear()
    assert len(pc) == 0
    assert common_prefix([1, 2, 3], [1, 2]) == 2
