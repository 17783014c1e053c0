"""A small prefix cache for the reference server (the role of SGLang's radix cache, much simplified).

A finished request leaves its KV cache here keyed by the tokens it covers. A new request takes the entry
with the longest common prefix (exclusively: decoding extends a cache in place), crops it to that prefix and
only forwards the rest, so the growing prompt of a multi-turn session costs its new tokens only. Entries are
evicted least-recently-used beyond ``max_tokens`` cached tokens; a weight update clears everything.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any


def common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class PrefixCache:
    def __init__(self, max_tokens: int = 65536) -> None:
        self.max_tokens = max_tokens
        self._entries: OrderedDict[int, tuple[list[int], Any]] = OrderedDict()
        self._next = 0
        self._tokens = 0

    def take(self, ids: list[int], min_match: int = 1) -> tuple[Any | None, int]:
        """``(cache, n)``: a KV cache holding ``ids[:n]`` (``n < len(ids)``), or ``(None, 0)``."""
        best_key, best_n = None, 0
        for key, (covered, _) in self._entries.items():
            n = common_prefix(covered, ids)
            if n > best_n:
                best_key, best_n = key, n
        best_n = min(best_n, len(ids) - 1)
        if best_key is None or best_n < min_match:
            return None, 0
        covered, cache = self._entries.pop(best_key)
        self._tokens -= len(covered)
        if cache.get_seq_length() != len(covered):
            return None, 0
        if best_n < len(covered):
            cache.crop(best_n - len(covered))  # a negative count removes tokens (transformers 4.x and 5.x)
        return cache, best_n

    def put(self, covered: list[int], cache: Any) -> None:
        if not covered or len(covered) > self.max_tokens:
            return
        self._entries[self._next] = (covered, cache)
        self._next += 1
        self._tokens += len(covered)
        while self._tokens > self.max_tokens and self._entries:
            _, (old, _) = self._entries.popitem(last=False)
            self._tokens -= len(old)

    def clear(self) -> None:
        self._entries.clear()
        self._tokens = 0

    def __len__(self) -> int:
        return len(self._entries)
