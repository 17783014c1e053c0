"""Requests that decode together: one forward a round for every request that needs a token.

On a CPU a decode step of a small model reads all its weights whichever the batch size, so eight rows cost little
more than one. The batch is a table of slots: a request's KV cache is copied into a free slot once (``add``) and
back out when it leaves (``remove``); in between its keys and values are written in place, at the row's own length,
into buffers that grow by doubling (no per-token concatenation). Rows of different lengths share one forward: each
gets its own positions and an attention mask of its own tokens. A slot without a request (or one that does not
step this round) is fed a placeholder token that writes past its row's end and is overwritten later.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import DynamicCache
from transformers.cache_utils import Cache, DynamicLayer

PLACEHOLDER_TOKEN = 0
MIN_CAPACITY = 256


def _buffers(slots: int, capacity: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    shape = (slots, like.shape[1], capacity, like.shape[3])
    return like.new_zeros(shape), like.new_zeros(shape)


class _SlotLayer(DynamicLayer):
    """One attention layer's keys and values for every slot: ``[slots, heads, capacity, dim]``, row ``i`` valid
    up to its length; ``keys`` / ``values`` are the views the model attends over (``view``: the rows in use, up to
    the longest row). A step writes row ``i``'s new key at ``write_at[i]``. (No reference back to the batch: the
    buffers go as soon as the batch does.)"""

    def __init__(self, key_buf: torch.Tensor, value_buf: torch.Tensor) -> None:
        super().__init__()
        self.key_buf, self.value_buf = key_buf, value_buf
        self.write_at = torch.zeros(0, dtype=torch.long)
        self.is_initialized = True
        self.device = key_buf.device
        self.view(0, 0)

    def view(self, rows: int, width: int) -> None:
        self.rows, self.width = rows, width
        self.keys = self.key_buf[:rows, :, :width]
        self.values = self.value_buf[:rows, :, :width]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any,
               **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        index = torch.arange(self.rows)
        self.key_buf[index, :, self.write_at] = key_states[:, :, 0]
        self.value_buf[index, :, self.write_at] = value_states[:, :, 0]
        self.view(self.rows, self.width + 1)
        return self.key_buf[: self.rows, :, : self.width], self.value_buf[: self.rows, :, : self.width]


class DecodeBatch:
    @torch.inference_mode()
    def __init__(self, template: Any, max_slots: int, slots: int = 2) -> None:
        """``template``: any batch-1 ``DynamicCache`` of the model (its layer count, heads, head size and dtype);
        ``slots`` to begin with, doubling up to ``max_slots``."""
        self.max_slots = max_slots
        self.lengths = [0] * slots
        self.used = [False] * slots
        self.width = 0
        self.rows = 0
        """Slots up to the highest one in use: what a step computes (free slots are reused lowest first)."""
        self.cache = Cache(layers=[_SlotLayer(*_buffers(slots, MIN_CAPACITY, layer.keys))
                                   for layer in template.layers])

    @property
    def capacity(self) -> int:
        return int(self._layers[0].key_buf.shape[2])

    @property
    def _layers(self) -> list[_SlotLayer]:
        return self.cache.layers  # type: ignore[return-value]

    @property
    def full(self) -> bool:
        return all(self.used) and len(self.used) >= self.max_slots

    @property
    def occupied(self) -> int:
        return sum(self.used)

    @torch.inference_mode()
    def _resize(self, slots: int, capacity: int) -> None:
        for layer in self._layers:
            for name in ("key_buf", "value_buf"):
                old = getattr(layer, name)
                new = old.new_zeros(slots, old.shape[1], capacity, old.shape[3])
                new[: old.shape[0], :, : old.shape[2]] = old
                setattr(layer, name, new)
        grown = slots - len(self.used)
        self.used += [False] * grown
        self.lengths += [0] * grown
        self._refresh()

    def _reserve(self, tokens: int) -> None:
        """Room for ``tokens`` columns in every buffer (doubling)."""
        capacity = self.capacity
        while capacity < tokens:
            capacity *= 2
        if capacity != self.capacity:
            self._resize(len(self.used), capacity)

    @torch.inference_mode()
    def add(self, cache: Any, length: int) -> int:
        """Copy a request's batch-1 cache of ``length`` tokens into a free slot; returns the slot."""
        if self.full:
            raise RuntimeError(f"no free slot among {len(self.used)}")
        if all(self.used):
            self._resize(min(2 * len(self.used), self.max_slots), self.capacity)
        slot = self.used.index(False)
        self._reserve(length + 1)
        for layer, src in zip(self._layers, cache.layers, strict=True):
            layer.key_buf[slot, :, :length] = src.keys[0]
            layer.value_buf[slot, :, :length] = src.values[0]
        self.used[slot] = True
        self.lengths[slot] = length
        self._refresh()
        return slot

    @torch.inference_mode()
    def remove(self, slot: int) -> DynamicCache:
        """The slot's request's own cache (batch 1), as ``ModelRunner.forward`` takes it; frees the slot."""
        n = self.lengths[slot]
        cache = DynamicCache([(layer.key_buf[slot: slot + 1, :, :n].clone(),
                               layer.value_buf[slot: slot + 1, :, :n].clone()) for layer in self._layers])
        self.used[slot] = False
        self.lengths[slot] = 0
        self._refresh()
        return cache

    def _refresh(self) -> None:
        """``width`` and ``rows`` from the slots in use; every layer's view to match."""
        self.width = max((n for n, u in zip(self.lengths, self.used, strict=True) if u), default=0)
        self.rows = max((s + 1 for s, u in enumerate(self.used) if u), default=0)
        for layer in self._layers:
            layer.view(self.rows, self.width)

    @torch.inference_mode()
    def step(self, model: torch.nn.Module, tokens: dict[int, int]) -> dict[int, torch.Tensor]:
        """One token for each slot in ``tokens`` (slot → the token that follows its row); their next logits.
        The other slots do not advance."""
        self._reserve(self.width + 1)
        write_at = torch.tensor(self.lengths[: self.rows], dtype=torch.long)
        for layer in self._layers:
            layer.write_at = write_at
        ids = torch.tensor([[tokens.get(s, PLACEHOLDER_TOKEN)] for s in range(self.rows)], dtype=torch.long)
        positions = write_at[:, None]
        mask = (torch.arange(self.width + 1)[None, :] <= positions).long()
        out = model(input_ids=ids, attention_mask=mask, position_ids=positions, cache=self.cache, use_cache=True,
                    logits_to_keep=1)
        logits = out.logits[:, -1].float()
        for s in tokens:
            self.lengths[s] += 1
        self._refresh()
        return {s: logits[s] for s in tokens}
