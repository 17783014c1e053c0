"""The reference server's worker thread: all model work happens here, one token per active request per round.

Each round samples a token for every active request and then forwards all of them in one batched step
(``DecodeBatch``; a lone request steps on its own KV cache), so concurrent requests progress together at
little more than one request's cost, and the HTTP loop stays free for health checks. Admin work (weight
loads) runs in the same thread between rounds. As in SGLang, a weight update waits for in-flight requests
to finish unless generation is paused; paused requests kept in place are re-prefilled under the new
weights (SGLang's "retract").
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import torch

from polar_hpc.engine.protocol import FinishAbort, FinishLength, FinishReason, FinishStop
from polar_hpc.log import get_logger
from polar_hpc.reference.batch import DecodeBatch
from polar_hpc.reference.model import ModelRunner, SamplingSpec, make_generator
from polar_hpc.reference.prefix_cache import PrefixCache
from polar_hpc.wire.versions import INITIAL_VERSION

log = get_logger("reference")


@dataclass(eq=False)
class Generation:
    rid: str
    input_ids: list[int]
    spec: SamplingSpec
    on_done: Callable[[Generation], None]
    on_token: Callable[[Generation], None] | None = None
    internal: bool = False
    """Health probes: run even while generation is paused."""
    output_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    finish: FinishReason | None = None
    weight_version: str = INITIAL_VERSION
    created: float = field(default_factory=time.monotonic)
    cache: Any = None
    """The request's own KV cache; None while it sits in the decode batch (``slot``)."""
    slot: int | None = None
    cache_len: int = 0
    """Tokens of ``input_ids + output_ids`` the KV cache covers."""
    cached_tokens: int = 0
    """Prompt tokens served from the prefix cache."""
    logits: torch.Tensor | None = None
    generator: torch.Generator | None = None
    score_from: int | None = None
    """Teacher forcing (``max_new_tokens`` 0, ``logprob_start_len`` k): one prefill, no sampled token."""
    input_logprobs: list[float | None] = field(default_factory=list)
    top_logprobs_num: int = 0
    """SGLang's ``top_logprobs_num``: with k > 0, ``top`` gets the k most likely (logprob, id) per sampled token."""
    top: list[list[tuple[float, int]]] = field(default_factory=list)


class Scheduler:
    def __init__(self, runner: ModelRunner, *, seed: int = 0, prefix_cache_tokens: int = 65536, decode_batch: int,
                 first_token_delay_s: float = 0.0, token_delay_s: float = 0.0) -> None:
        """``decode_batch``: how many requests one forward steps at most (1: each on its own).
        ``first_token_delay_s`` / ``token_delay_s``: a deliberately slow engine (a request's first token comes
        no sooner than that after it arrived, and each round of tokens takes at least ``token_delay_s``), to
        test what clients do while a real GPU server queues, prefills and decodes."""
        self.runner = runner
        self.decode_batch = decode_batch
        self.first_token_delay_s = first_token_delay_s
        self.token_delay_s = token_delay_s
        self.prefix = PrefixCache(prefix_cache_tokens)
        self._rng = random.Random(seed)
        self._cond = threading.Condition()
        self._pending: deque[Generation] = deque()
        self._active: list[Generation] = []
        self._aborts: set[str] = set()
        self._abort_all = False
        self._admin: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._paused = False
        self._stopped = False
        self._batch: DecodeBatch | None = None
        self._thread = threading.Thread(target=self._loop, name="reference-model", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(timeout=10.0)

    @property
    def num_requests(self) -> int:
        with self._cond:
            return len(self._pending) + len(self._active)

    def submit(self, gen: Generation) -> None:
        with self._cond:
            self._pending.append(gen)
            self._cond.notify_all()

    def abort(self, rid: str) -> None:
        with self._cond:
            self._aborts.add(rid)
            self._cond.notify_all()

    def abort_all(self) -> None:
        with self._cond:
            self._abort_all = True
            self._cond.notify_all()

    def pause(self, mode: str) -> None:
        with self._cond:
            self._paused = True
            if mode == "abort":
                self._abort_all = True
            self._cond.notify_all()

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def run_admin(self, fn: Callable[[], Any]) -> Future[Any]:
        fut: Future[Any] = Future()
        with self._cond:
            self._admin.append((fn, fut))
            self._cond.notify_all()
        return fut

    def _has_work(self) -> bool:
        runnable = any(g.internal for g in self._active + list(self._pending)) or (
            not self._paused and (self._active or self._pending)
        )
        return bool(self._admin or self._aborts or self._abort_all or runnable)

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and not self._has_work():
                    self._cond.wait(timeout=1.0)
                if self._stopped:
                    break
                aborts, self._aborts = self._aborts, set()
                abort_all, self._abort_all = self._abort_all, False
                paused = self._paused
                admin_ready = bool(self._admin) and (paused or not self._active)
                if not self._admin or admin_ready:
                    while self._pending and (not paused or self._pending[0].internal):
                        self._active.append(self._pending.popleft())
                active = list(self._active)
            for gen in active + list(self._pending):
                if abort_all or gen.rid in aborts:
                    self._finish(gen, FinishAbort(message="Abort request", status_code=200, err_type=None))
            if admin_ready:
                self._run_admin()
            stepped = False
            waiting: list[float] = []
            ready: dict[Generation, int] = {}
            for gen in list(self._active):
                if gen.finish is None and (not paused or gen.internal):
                    due = gen.created + self.first_token_delay_s
                    if not gen.output_ids and not gen.internal and due > time.monotonic():
                        if gen.logits is None:  # prefill now; only the first token waits
                            try:
                                self._prefill(gen)
                            except Exception as err:
                                log.exception("generation %s failed", gen.rid)
                                self._finish(gen, FinishAbort(message=f"{type(err).__name__}: {err}",
                                                              status_code=500, err_type="InternalServerError"))
                                continue
                        waiting.append(due)
                        continue
                    tok = self._sample(gen)
                    if tok is not None:
                        ready[gen] = tok
                    stepped = True
            self._forward(ready)
            delay = self.token_delay_s if stepped else (min(waiting) - time.monotonic() if waiting else 0.0)
            if delay > 0:
                with self._cond:
                    self._cond.wait(timeout=delay)

    def _run_admin(self) -> None:
        with self._cond:
            fn, fut = self._admin.popleft()
        try:
            fut.set_result(fn())
        except Exception as err:  # reported to the HTTP caller
            fut.set_exception(err)
        self.prefix.clear()
        self._batch = None
        for gen in self._active:  # weights may have changed: recompute the KV cache on the next step
            gen.cache = None
            gen.slot = None
            gen.logits = None

    def _prefill(self, gen: Generation) -> None:
        if gen.generator is None:
            gen.generator = make_generator(gen.spec.seed, self._rng)
        ids = gen.input_ids + gen.output_ids
        cache, n = (None, 0) if gen.internal else self.prefix.take(ids)
        if not gen.output_ids:
            gen.cached_tokens = n
        gen.logits, gen.cache = self.runner.forward(ids[n:], cache)
        gen.cache_len = len(ids)

    def _sample(self, gen: Generation) -> int | None:
        """The request's next token, or None when it finished (or was scored) this round."""
        if gen.score_from is not None:
            self._score(gen, gen.score_from)
            return None
        try:
            if gen.logits is None:
                self._prefill(gen)
            assert gen.logits is not None and gen.generator is not None  # _prefill sets both
            tok, lp = self.runner.sample(gen.logits, gen.spec, gen.generator)
            if gen.top_logprobs_num:
                gen.top.append(self.runner.top_logprobs(gen.logits, gen.spec, gen.top_logprobs_num))
            gen.output_ids.append(tok)
            gen.logprobs.append(lp)
            finish = self._check_stop(gen, tok)
        except Exception as err:
            self._fail(gen, err)
            return None
        if finish is not None:
            self._finish(gen, finish)
            return None
        return tok

    def _forward(self, ready: dict[Generation, int]) -> None:
        """Forward each request's new token: together in the decode batch when more than one needs it."""
        if self._batch is not None and self._batch.occupied == 1 and len(ready) <= 1:
            for gen in self._active:  # a lone request steps faster on its own cache than in a batch
                self._leave_batch(gen)
        alone = [gen for gen in ready if gen.slot is None]
        crowd = self._batch is not None and self._batch.occupied > 0
        if self.decode_batch > 1 and (len(ready) >= 2 or crowd):
            if self._batch is None:
                self._batch = DecodeBatch(alone[0].cache, self.decode_batch)
            for gen in alone:
                if not self._batch.full:
                    gen.slot = self._batch.add(gen.cache, gen.cache_len)
                    gen.cache = None
        batched = {gen: tok for gen, tok in ready.items() if gen.slot is not None}
        if batched:
            assert self._batch is not None
            try:
                logits = self._batch.step(self.runner.model, {gen.slot: tok for gen, tok in batched.items()
                                                              if gen.slot is not None})
            except Exception as err:
                for gen in batched:
                    self._fail(gen, err)
            else:
                for gen in batched:
                    assert gen.slot is not None
                    gen.logits = logits[gen.slot]
                    gen.cache_len += 1
        for gen, tok in ready.items():
            if gen.slot is None and gen.finish is None:
                try:
                    gen.logits, gen.cache = self.runner.forward([tok], gen.cache)
                    gen.cache_len += 1
                except Exception as err:
                    self._fail(gen, err)
        for gen in ready:
            if gen.finish is None and gen.on_token is not None:
                gen.on_token(gen)

    def _leave_batch(self, gen: Generation) -> None:
        if gen.slot is None or self._batch is None:
            return
        gen.cache = self._batch.remove(gen.slot)
        gen.slot = None

    def _fail(self, gen: Generation, err: Exception) -> None:
        log.exception("generation %s failed", gen.rid, exc_info=err)
        self._finish(gen, FinishAbort(message=f"{type(err).__name__}: {err}", status_code=500,
                                      err_type="InternalServerError"))

    def _score(self, gen: Generation, start: int) -> None:
        try:
            cache, n = self.prefix.take(gen.input_ids[: start + 1])
            gen.cached_tokens = n
            gen.input_logprobs, gen.cache = self.runner.input_logprobs(gen.input_ids, cache, n, start)
            gen.cache_len = len(gen.input_ids)
            gen.logits = torch.zeros(0)  # marks the cache as reusable for _finish
        except Exception as err:
            log.exception("teacher forcing %s failed", gen.rid)
            self._finish(gen, FinishAbort(message=f"{type(err).__name__}: {err}", status_code=500,
                                          err_type="InternalServerError"))
            return
        self._finish(gen, FinishLength(length=0))

    def _check_stop(self, gen: Generation, tok: int) -> FinishReason | None:
        spec = gen.spec
        if tok in spec.stop_token_ids or (not spec.ignore_eos and tok in self.runner.eos_token_ids):
            return FinishStop(matched=tok)
        if spec.stop:
            text = self.runner.decode(gen.output_ids, spec.skip_special_tokens)
            for s in spec.stop:
                if s and s in text:
                    return FinishStop(matched=s)
        if len(gen.output_ids) >= spec.max_new_tokens:
            return FinishLength(length=len(gen.output_ids))
        return None

    def _finish(self, gen: Generation, reason: FinishReason) -> None:
        if gen.finish is not None:
            return
        gen.finish = reason
        gen.weight_version = self.runner.weight_version
        self._leave_batch(gen)
        healthy = not (isinstance(reason, FinishAbort) and reason.status_code == 500)
        if gen.cache is not None and gen.logits is not None and healthy and not gen.internal:
            self.prefix.put((gen.input_ids + gen.output_ids)[: gen.cache_len], gen.cache)
        gen.cache = None
        gen.logits = None
        with self._cond:
            if gen in self._active:
                self._active.remove(gen)
            if gen in self._pending:
                self._pending.remove(gen)
        gen.on_done(gen)
