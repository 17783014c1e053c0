"""Offline trainer reader: selected traces of one or more runs, shuffled per epoch, packed under a token budget.

    reader = TraceReader(["runs/a", "runs/b"], TraceSelect(min_reward=1.0), ReaderConfig(token_budget=16384))
    for batch in reader.batches(cursor=saved, epochs=3):
        train_step(batch.input_ids, batch.position_ids, batch.segment_ids, batch.loss_mask)
        save(batch.cursor)            # msgspec.json.encode(batch.cursor)

A batch is one packed row: sequences (prompt ‖ response) laid end to end, at most ``token_budget`` tokens.
Order within an epoch is a seeded permutation of the index (``seed`` and the epoch number), packing is greedy in
that order, so a cursor (epoch, position) after any batch determines every later batch: a trainer restarted
from it gets exactly the traces it had not consumed yet. No torch here (``polar_hpc.train.torch_data``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

import msgspec
import numpy as np

from polar_hpc.errors import PolarError
from polar_hpc.store.index import Dedup, RunPath, TraceIndex, build_index, rl_select
from polar_hpc.store.select import TraceSelect
from polar_hpc.store.shardfile import Tokens, open_shard, read_tokens


class ReaderConfig(msgspec.Struct, kw_only=True, frozen=True):
    token_budget: int = 16384
    seed: int = 0
    shuffle: bool = True
    dedup: Dedup = "content"
    oversize: Literal["skip", "truncate"] = "skip"
    """A trace longer than the budget: dropped (counted), or its response cut to fit."""
    pad_to_budget: bool = False
    """Pad every batch to exactly ``token_budget`` (pad id 0, loss mask 0, segment id -1)."""
    cache_shards: int = 64
    """Shards whose token columns stay in memory (LRU); random order reads each shard many times."""
    include_oracle: bool = False
    """Also read oracle traces (forced tokens, not sampled by the behaviour policy); RL leaves them out."""


class Cursor(msgspec.Struct, kw_only=True, frozen=True):
    """Where the reader stands: the next trace is ``order(epoch)[position]``. Save it with the checkpoint."""

    epoch: int = 0
    position: int = 0
    seed: int = 0
    fingerprint: str = ""
    """Of the index the positions refer to; resuming on a different selection is refused."""
    shard: int = 0
    shards: int = 1
    """This cursor reads part ``shard`` of ``shards`` of every epoch: order positions shard, shard + shards, ...
    (one part per DDP rank x DataLoader worker); ``position`` counts within that part."""


class Batch(msgspec.Struct, kw_only=True):
    input_ids: np.ndarray
    """int32 [T]: prompt ‖ response of each sequence, end to end."""
    loss_mask: np.ndarray
    """uint8 [T]: 0 over prompts, the trace's mask over responses."""
    logprobs: np.ndarray
    """float32 [T]: behaviour-policy logprobs of response tokens, 0 over prompts."""
    position_ids: np.ndarray
    """int32 [T]: restart at 0 at each sequence."""
    segment_ids: np.ndarray
    """int32 [T]: sequence number within the batch; -1 on padding."""
    cu_seqlens: np.ndarray
    """int32 [n+1]: sequence boundaries (varlen attention)."""
    prompt_lens: np.ndarray
    rewards: np.ndarray
    """float32 [n]: per-trace reward."""
    keys: list[str]
    trace_index: np.ndarray
    """int32 [n]: trace number within its session."""
    policy_versions: np.ndarray
    cursor: Cursor
    """Cursor after this batch."""

    @property
    def num_tokens(self) -> int:
        return int(self.cu_seqlens[-1])


class ReaderStats(msgspec.Struct, kw_only=True):
    traces: int = 0
    skipped_oversize: int = 0
    truncated: int = 0
    batches: int = 0
    tokens: int = 0
    padding: int = 0


class CursorMismatch(PolarError, ValueError):
    pass


class TraceReader:
    """Packed batches of the selected traces of one or more runs, for an offline trainer.

    Example (one process; see ``polar_hpc.train.torch_data.PackedTraceDataset`` for DDP and DataLoader
    workers)::

        reader = TraceReader("runs/demo", TraceSelect(min_reward=1.0, status=("COMPLETED",)),
                             ReaderConfig(token_budget=8192))
        for batch in reader.batches(epochs=2):
            loss = model(batch.input_ids, batch.position_ids, batch.cu_seqlens, batch.loss_mask)
            checkpoint["cursor"] = msgspec.json.encode(batch.cursor)
        # after a restart: reader.batches(msgspec.json.decode(saved, type=Cursor), epochs=2)

    A run path that does not exist, or runs without a committed shard, raise ``MissingShards``; a filter of the
    wrong type raises ``TypeError`` naming the field (``harness="pi"`` must be ``harness=("pi",)``); status
    names are accepted in any case. An empty selection is allowed (``len(reader) == 0``, no batches).
    """

    def __init__(
        self,
        runs: RunPath | Sequence[RunPath],
        select: TraceSelect | None = None,
        config: ReaderConfig | None = None,
        *,
        index: TraceIndex | None = None,
    ) -> None:
        self.config = config or ReaderConfig()
        if self.config.token_budget < 1:
            raise ValueError(f"ReaderConfig.token_budget must be >= 1, got {self.config.token_budget}")
        self.index = index if index is not None else build_index(
            runs, rl_select(select, self.config.include_oracle), dedup=self.config.dedup)
        self.stats = ReaderStats()
        self._cache: OrderedDict[int, Tokens] = OrderedDict()
        self._fingerprint = self.index.fingerprint()

    def __len__(self) -> int:
        return len(self.index)

    def start(self, shard: int = 0, shards: int = 1) -> Cursor:
        """The cursor at the start of part ``shard`` of ``shards`` (default: everything)."""
        if not 0 <= shard < shards:
            raise ValueError(f"shard must be in 0..{shards - 1} (shards={shards}), got {shard}")
        return Cursor(seed=self.config.seed, fingerprint=self._fingerprint, shard=shard, shards=shards)

    def order(self, epoch: int, shard: int = 0, shards: int = 1) -> np.ndarray:
        """Trace rows of ``epoch`` in read order; with ``shards`` > 1, every ``shards``-th from ``shard`` (the
        parts of one epoch are disjoint and together hold every trace once)."""
        n = len(self.index)
        if not self.config.shuffle:
            full = np.arange(n, dtype=np.int64)
        else:
            full = np.random.default_rng([self.config.seed, epoch]).permutation(n)
        return full[shard::shards] if shards > 1 else full

    def _check(self, cursor: Cursor) -> None:
        if cursor.fingerprint != self._fingerprint or cursor.seed != self.config.seed:
            raise CursorMismatch(
                f"cursor is for selection {cursor.fingerprint} seed {cursor.seed}; this reader has "
                f"selection {self._fingerprint} seed {self.config.seed} ({len(self.index)} traces). "
                "Resume with the same runs, filters, dedup and seed."
            )
        if not 0 <= cursor.shard < cursor.shards:
            raise CursorMismatch(f"cursor shard {cursor.shard} outside 0..{cursor.shards - 1}")
        part = len(self.order(0, cursor.shard, cursor.shards)) if cursor.shards > 1 else len(self.index)
        if not 0 <= cursor.position <= part:
            raise CursorMismatch(f"cursor position {cursor.position} outside 0..{part}")

    def _tokens(self, shard: int) -> Tokens:
        tok = self._cache.get(shard)
        if tok is not None:
            self._cache.move_to_end(shard)
            return tok
        with open_shard(Path(self.index.shards[shard]), check=False) as f:
            tok = read_tokens(f)
        self._cache[shard] = tok
        while len(self._cache) > max(1, self.config.cache_shards):
            self._cache.popitem(last=False)
        return tok

    def _fits(self, i: int) -> int:
        """Tokens trace ``i`` takes in a batch (0: dropped)."""
        ix, budget = self.index, self.config.token_budget
        n = int(ix.prompt_len[i] + ix.response_len[i])
        if n <= budget:
            return n
        if self.config.oversize == "truncate" and ix.prompt_len[i] < budget:
            return budget
        return 0

    def batches(self, cursor: Cursor | None = None, *, epochs: int | None = 1) -> Iterator[Batch]:
        """Packed batches from ``cursor`` (default: the start of everything) until ``epochs`` end (None:
        forever); a cursor from ``start(shard, shards)`` reads that part of each epoch only. Each batch carries
        the cursor after it."""
        cur = cursor or self.start()
        self._check(cur)
        budget = self.config.token_budget
        epoch, pos = cur.epoch, cur.position
        part = {"shard": cur.shard, "shards": cur.shards}
        while epochs is None or epoch < epochs:
            order = self.order(epoch, cur.shard, cur.shards)
            pending: list[tuple[int, int]] = []
            used = 0
            while pos < len(order):
                i = int(order[pos])
                n = self._fits(i)
                if n == 0:
                    self.stats.skipped_oversize += 1
                    pos += 1
                    continue
                if used + n > budget and pending:
                    yield self._pack(pending, Cursor(epoch=epoch, position=pos, seed=cur.seed,
                                                     fingerprint=self._fingerprint, **part))
                    pending, used = [], 0
                pending.append((i, n))
                used += n
                pos += 1
            last = pos >= len(order)
            epoch, pos = (epoch + 1, 0) if last else (epoch, pos)
            if pending:
                yield self._pack(pending, Cursor(epoch=epoch, position=pos, seed=cur.seed,
                                                 fingerprint=self._fingerprint, **part))
            if not len(order):
                return

    def _pack(self, items: list[tuple[int, int]], after: Cursor) -> Batch:
        ix = self.index
        total = sum(n for _, n in items)
        size = self.config.token_budget if self.config.pad_to_budget else total
        ids = np.zeros(size, dtype=np.int32)
        mask = np.zeros(size, dtype=np.uint8)
        lps = np.zeros(size, dtype=np.float32)
        pos = np.zeros(size, dtype=np.int32)
        seg = np.full(size, -1, dtype=np.int32)
        cu = np.zeros(len(items) + 1, dtype=np.int32)
        plens = np.zeros(len(items), dtype=np.int32)
        at = 0
        for k, (i, n) in enumerate(items):
            tok = self._tokens(int(ix.shard[i]))
            p0, pl = int(ix.prompt_start[i]), int(ix.prompt_len[i])
            r0 = int(ix.response_start[i])
            rl = n - pl
            if rl < ix.response_len[i]:
                self.stats.truncated += 1
            e = at + pl
            ids[at:e] = tok.prompt_ids[p0:p0 + pl]
            ids[e:e + rl] = tok.response_ids[r0:r0 + rl]
            mask[e:e + rl] = tok.loss_mask[r0:r0 + rl]
            lps[e:e + rl] = tok.response_logprobs[r0:r0 + rl]
            pos[at:at + n] = np.arange(n, dtype=np.int32)
            seg[at:at + n] = k
            at += n
            cu[k + 1] = at
            plens[k] = pl
        sel = np.fromiter((i for i, _ in items), dtype=np.int64, count=len(items))
        self.stats.batches += 1
        self.stats.traces += len(items)
        self.stats.tokens += total
        self.stats.padding += size - total
        return Batch(
            input_ids=ids, loss_mask=mask, logprobs=lps, position_ids=pos, segment_ids=seg, cu_seqlens=cu,
            prompt_lens=plens, rewards=ix.reward[sel].astype(np.float32), keys=[ix.key[i] for i in sel.tolist()],
            trace_index=ix.trace_in_session[sel].astype(np.int32), policy_versions=ix.policy_version[sel],
            cursor=after,
        )

