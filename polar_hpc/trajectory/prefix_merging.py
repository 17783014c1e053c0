"""``prefix_merging``: chains of completions whose prompts extend each other token for token.

Grouping walks completions in arrival order; each chain keeps a *tip* (its last member's prompt ids) and a
completion joins the chain whose tip is a token prefix of its prompt, the longest tip winning. Otherwise it
starts a new chain (sub-agents, compaction, forks, history rewritten by the template), whose provenance names
the chain it shares the longest prefix with among the recently active ones.

A chain becomes one trace: response = R'₁ ‖ T₁ ‖ … ‖ R'ₖ where R'ᵢ are the sampled ids (mask 1, real logprobs)
and Tᵢ the interstitial tokens of the next prompt (mask 0, logprob 0.0): what follows the previous reply there,
i.e. template glue, tool results, user turns and the next generation prompt. When the next prompt holds the
sampled ids verbatim (continuation mode) the reply is skipped by length; otherwise its canonical copy is skipped
up to the first end-of-turn token, which is kept when the sampled reply did not end with one (cut by length).

Re-tokenized replies break the chain. When the next prompt holds a copy of the reply that differs from the sampled
ids (the template re-rendered it, *drift* > 0 tokens), the model sampled the next reply conditioned on that copy,
not on the sampled ids a merged trace would keep in its place; merged, the later replies' logprobs would belong to
a context the trace does not hold. So such a completion starts a new chain (break reason ``retokenized``, its
``retokenized_tokens`` the drift at the break) whose prompt is exactly what the model saw. Keeping the chain and
filtering the trace out of training would lose every sampled token of a canonical-mode session with a template
that rewrites history; breaking keeps them all trainable and faithful. A reply copied verbatim (drift 0, as in
continuation mode) never breaks a chain.

Cost is linear in the tokens of the records: tips are compared with numpy, and when several tips could match,
candidates are found by polynomial prefix hashes of the prompt (computed once per prompt) and then verified.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field

import msgspec
import numpy as np

from polar_hpc.config.base import StrictStruct
from polar_hpc.trajectory.base import (
    NOT_SAMPLED,
    Builder,
    completion_metadata,
    recorded_versions,
    sampled_part,
    sampled_versions,
    top_part,
    top_width,
)
from polar_hpc.wire.calls import ChatMessage, CompletionRecord
from polar_hpc.wire.traces import ReconstructionStats, Trace

_BASE = np.uint64(0x9E3779B97F4A7C15)
_RECENT = 4
"""How many recently active chains a new chain is compared with to find its parent."""


class PrefixMergingOptions(StrictStruct):
    end_of_turn_id: int | None = None
    """Overrides the template's end-of-turn id; otherwise the last token of the first reply that stopped."""


class _Powers:
    def __init__(self) -> None:
        self.p = np.ones(1, dtype=np.uint64)

    def get(self, n: int) -> np.ndarray:
        if self.p.shape[0] < n:
            p = np.full(max(n, 2 * self.p.shape[0]), _BASE, dtype=np.uint64)
            p[0] = 1
            self.p = np.cumprod(p, dtype=np.uint64)  # wraps modulo 2**64 by design
        return self.p[:n]


@dataclass(eq=False)
class _Chain:
    index: int
    members: list[CompletionRecord]
    tip: np.ndarray
    starts: list[int] = field(default_factory=list)
    """Per link i→i+1: where the interstitial starts in the tail of prompt i+1 after prompt i."""
    retokenized: int = 0
    """Tokens of the parent's last reply re-tokenized in this chain's first prompt (reason ``retokenized``)."""
    tip_hash: int | None = None
    parent: int | None = None
    fork_token: int | None = None
    fork_completion_id: str | None = None
    reason: str | None = None


def _lcp(a: np.ndarray, b: np.ndarray) -> int:
    """Longest common prefix, scanning in growing chunks so an early difference costs little."""
    m = min(len(a), len(b))
    lo, step = 0, 256
    while lo < m:
        hi = min(m, lo + step)
        neq = np.flatnonzero(a[lo:hi] != b[lo:hi])
        if neq.size:
            return lo + int(neq[0])
        lo, step = hi, step * 4
    return m


class PrefixMergingBuilder(Builder):
    name = "prefix_merging"
    Options = PrefixMergingOptions

    def _eot(self, records: list[CompletionRecord]) -> int | None:
        opt: int | None = self.options.end_of_turn_id
        if opt is not None:
            return opt
        if self.end_of_turn_id is not None:
            return self.end_of_turn_id
        for r in records:
            if r.finish_reason == "stop" and len(r.output_ids):
                return int(r.output_ids[-1])
        return None

    def _build(self, records: list[CompletionRecord], stats: ReconstructionStats) -> list[Trace]:
        chains = _Grouper(self._eot(records)).group(records)
        breaks: Counter[str] = Counter(c.reason for c in chains if c.reason)
        stats.chains = len(chains)
        stats.completions_merged = sum(len(c.members) for c in chains if len(c.members) > 1)
        stats.breaks = dict(sorted(breaks.items()))
        return [_trace(c) for c in chains]


class _Grouper:
    def __init__(self, eot: int | None) -> None:
        self.eot = eot
        self.chains: list[_Chain] = []
        self.by_len: dict[int, list[_Chain]] = {}
        self.powers = _Powers()
        self.recent: list[_Chain] = []
        """The most recently active chains, newest first (at most ``_RECENT``)."""

    def _hash_all(self, p: np.ndarray) -> np.ndarray:
        x = p.view(np.uint32) * self.powers.get(p.shape[0])  # ids are non-negative: a free reinterpretation
        return np.cumsum(x, out=x)

    def _tip_hash(self, c: _Chain) -> int:
        if c.tip_hash is None:
            n = c.tip.shape[0]
            c.tip_hash = int(np.sum(c.tip.view(np.uint32) * self.powers.get(n), dtype=np.uint64)) if n else 0
        return c.tip_hash

    def _match(self, p: np.ndarray) -> tuple[_Chain | None, int | None]:
        """The chain with the longest tip that is a prefix of ``p``, and p's full hash when it was computed."""
        n = p.shape[0]
        lengths = sorted((k for k in self.by_len if 0 < k <= n), reverse=True)
        count = sum(len(self.by_len[k]) for k in lengths)
        if count <= 2:
            for k in lengths:
                for c in self.by_len[k]:
                    if p[k - 1] == c.tip[-1] and np.array_equal(p[:k], c.tip):
                        return c, None
            return None, None
        h = self._hash_all(p)
        for k in lengths:
            hk = int(h[k - 1])
            for c in self.by_len[k]:
                if self._tip_hash(c) == hk and np.array_equal(p[:k], c.tip):
                    return c, int(h[-1])
        return None, int(h[-1]) if n else 0

    def _link(self, c: _Chain, rec: CompletionRecord, p: np.ndarray) -> tuple[int, int] | None:
        """Where the interstitial starts in the new prompt's tail, and the reply tokens re-tokenized there."""
        prev = c.members[-1]
        reply, _ = sampled_part(prev)
        tail = p[c.tip.shape[0]:]
        r = reply.shape[0]
        if r <= tail.shape[0] and np.array_equal(tail[:r], reply):
            return r, 0
        if self.eot is None:
            return None
        hits = np.flatnonzero(tail == self.eot)
        if not hits.size:
            return None
        k = int(hits[0])
        body = reply[:-1] if r and reply[-1] == self.eot else reply
        drift = max(k, body.shape[0]) - _lcp(tail[:k], body)
        return (k + 1 if r and reply[-1] == self.eot else k), drift

    def _set_tip(self, c: _Chain, p: np.ndarray, h: int | None) -> None:
        old = self.by_len.get(c.tip.shape[0])
        if old is not None and c in old:
            old.remove(c)
            if not old:
                del self.by_len[c.tip.shape[0]]
        c.tip, c.tip_hash = p, h
        if c in self.recent:
            self.recent.remove(c)
        self.recent.insert(0, c)
        del self.recent[_RECENT:]
        self.by_len.setdefault(p.shape[0], []).append(c)

    def _new_chain(self, rec: CompletionRecord, p: np.ndarray, h: int | None, reason: str | None,
                   retokenized: int = 0) -> None:
        c = _Chain(index=len(self.chains), members=[rec], tip=p[:0], retokenized=retokenized)
        if self.recent:
            best, lcp = max(((x, _lcp(p, x.tip)) for x in self.recent), key=lambda t: t[1])
            if lcp > 0:
                c.parent, c.fork_token = best.index, lcp
                lens = [m.prompt_ids.shape[0] for m in best.members]
                c.fork_completion_id = best.members[max(0, bisect_right(lens, lcp) - 1)].completion_id
            c.reason = reason or ("unrelated_prompt" if lcp == 0 else
                                  "prompt_repeated" if lcp == p.shape[0] else "prompt_diverged")
        self.chains.append(c)
        self._set_tip(c, p, h)

    def group(self, records: list[CompletionRecord]) -> list[_Chain]:
        for rec in records:
            p = np.asarray(rec.prompt_ids, dtype=np.int32)
            c, h = self._match(p)
            if c is None:
                self._new_chain(rec, p, h, None)
                continue
            link = self._link(c, rec, p)
            if link is None:
                repeated = p.shape[0] == c.tip.shape[0]  # the same prompt again: a client's retry
                self._new_chain(rec, p, h, "prompt_repeated" if repeated else "no_end_of_turn")
                continue
            if link[1] > 0:  # the model saw a re-tokenized copy of the reply, not the sampled ids
                self._new_chain(rec, p, h, "retokenized", retokenized=link[1])
                continue
            c.starts.append(link[0])
            c.members.append(rec)
            self._set_tip(c, p, h)
        return self.chains


def _trace(c: _Chain) -> Trace:
    ids: list[np.ndarray] = []
    mask: list[np.ndarray] = []
    lps: list[np.ndarray] = []
    versions: list[np.ndarray] = []
    top: list[tuple[np.ndarray, np.ndarray]] = []
    k = top_width(c.members)
    first = c.members[0]
    response_messages: list[ChatMessage] = []
    seen = len(first.canonical.messages)
    for i, rec in enumerate(c.members):
        out, lp = sampled_part(rec)
        if i:
            msgs = rec.canonical.messages
            response_messages.extend(msgs[seen + 1:] if len(msgs) > seen else [])
            seen = len(msgs)
        response_messages.append(rec.response)
        ids.append(out)
        mask.append(np.full(out.shape[0], int(rec.trained), dtype=np.uint8))
        lps.append(lp)
        versions.append(sampled_versions(rec, out.shape[0]))
        top.append(top_part(rec, out.shape[0], k))
        if i + 1 < len(c.members):
            nxt = np.asarray(c.members[i + 1].prompt_ids, dtype=np.int32)
            inter = nxt[rec.prompt_ids.shape[0] + c.starts[i]:]
            ids.append(inter)
            mask.append(np.zeros(inter.shape[0], dtype=np.uint8))
            lps.append(np.zeros(inter.shape[0], dtype=np.float32))
            versions.append(np.full(inter.shape[0], NOT_SAMPLED, dtype=np.int32))
            top.append(top_part(None, inter.shape[0], k))
    meta = msgspec.structs.replace(
        completion_metadata(c.members), chain_index=c.index, parent_chain=c.parent, fork_token=c.fork_token,
        fork_completion_id=c.fork_completion_id, break_reason=c.reason, retokenized_tokens=c.retokenized)
    return Trace(
        prompt_ids=np.asarray(first.prompt_ids, dtype=np.int32),
        response_ids=np.concatenate(ids).astype(np.int32, copy=False),
        loss_mask=np.concatenate(mask), response_logprobs=np.concatenate(lps).astype(np.float32, copy=False),
        prompt_messages=list(first.canonical.messages), response_messages=response_messages,
        tools=list(first.canonical.tools), finish_reason=c.members[-1].finish_reason, meta=meta,
        response_versions=recorded_versions(np.concatenate(versions).astype(np.int32, copy=False)),
        response_top_ids=np.concatenate([t[0] for t in top]), response_top_logprobs=np.concatenate([t[1] for t in top]))
