"""The reference server's model: a transformers causal LM on torch CPU, stepped one token at a time.

Logprob convention (what SGLang reports by default): the logprob of the sampled token under
``softmax(logits / temperature)``, taken *before* top-k / top-p / min-p filtering; for greedy decoding
(``temperature`` ≈ 0 or ``top_k == 1``) under ``softmax(logits)``. With ``logprob_mode="original"``
(SGLang's ``SGLANG_RETURN_ORIGINAL_LOGPROB``) it is always ``log_softmax(logits)`` of the raw logits.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer

from polar_hpc.log import get_logger
from polar_hpc.reference.options import LogprobMode
from polar_hpc.wire.versions import INITIAL_VERSION

log = get_logger("reference")

GREEDY_EPS = 1e-5



@dataclass
class SamplingSpec:
    max_new_tokens: int = 128
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1
    min_p: float = 0.0
    stop: list[str] = field(default_factory=list)
    stop_token_ids: set[int] = field(default_factory=set)
    ignore_eos: bool = False
    skip_special_tokens: bool = True
    no_stop_trim: bool = False
    seed: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature < GREEDY_EPS or self.top_k == 1


def _read_json(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text()) if path.is_file() else {}


def _as_ids(value: Any) -> set[int]:
    if value is None:
        return set()
    if isinstance(value, int):
        return {value}
    return {int(v) for v in value}


def load_model(model_dir: str | Path) -> torch.nn.Module:
    """The model of a transformers model dir as the reference server runs it: float32, eval mode. Also what
    ``polar_hpc.train.agreement`` recomputes logprobs with, so both sides load a checkpoint the same way."""
    from transformers import AutoModelForCausalLM

    model_dir = Path(model_dir)
    if not (model_dir / "config.json").is_file():
        raise FileNotFoundError(f"no config.json in {model_dir}: expected a transformers model dir")
    model = AutoModelForCausalLM.from_pretrained(str(model_dir), dtype=torch.float32)
    model.eval()
    return model


class ModelRunner:
    """Loads a model dir (config.json + safetensors + tokenizer.json) and runs prefill/decode steps."""

    def __init__(self, model_dir: str | Path, *, context_length: int | None = None,
                 logprob_mode: LogprobMode = "processed") -> None:
        self.logprob_mode = logprob_mode
        self.weight_version = INITIAL_VERSION
        self.model_dir = Path(model_dir)
        self.model = load_model(self.model_dir)
        tok_file = self.model_dir / "tokenizer.json"
        if not tok_file.is_file():
            raise FileNotFoundError(f"the reference server needs {tok_file} (a model dir with a tokenizer.json)")
        self.tokenizer = Tokenizer.from_file(str(tok_file))
        config = _read_json(self.model_dir / "config.json")
        gen_config = _read_json(self.model_dir / "generation_config.json")
        tok_config = _read_json(self.model_dir / "tokenizer_config.json")
        eos = _as_ids(gen_config.get("eos_token_id")) | _as_ids(config.get("eos_token_id"))
        eos_token = tok_config.get("eos_token")
        if isinstance(eos_token, dict):
            eos_token = eos_token.get("content")
        eos_id = self.tokenizer.token_to_id(eos_token) if isinstance(eos_token, str) else None
        if eos_id is not None:
            eos.add(int(eos_id))
        self.eos_token_ids = eos
        max_pos = int(config.get("max_position_embeddings") or 32768)
        self.context_length = context_length or max_pos
        self.vocab_size = int(config.get("vocab_size") or self.tokenizer.get_vocab_size())

    def load_weights(self, model_dir: str | Path) -> None:
        """Replace the model by the checkpoint in ``model_dir`` (same architecture and tokenizer)."""
        new = load_model(Path(model_dir))
        self.model = new
        self.model_dir = Path(model_dir)

    @torch.inference_mode()
    def forward(self, ids: list[int], cache: Any | None) -> tuple[torch.Tensor, Any]:
        """Logits (float32, ``[vocab]``) after ``ids``, given ``cache`` of everything before them."""
        inp = torch.tensor([ids], dtype=torch.long)
        out = self.model(input_ids=inp, cache=cache, use_cache=True, logits_to_keep=1)  # not [len(ids), vocab]
        return out.logits[0, -1].float(), out.cache

    @torch.inference_mode()
    def input_logprobs(self, ids: list[int], cache: Any | None, cached: int,
                       start: int) -> tuple[list[float | None], Any]:
        """SGLang's ``input_token_logprobs`` values for positions ``start..`` of ``ids`` (the first is None: its
        logit comes before ``start``), given ``cache`` of ``ids[:cached]`` (``cached <= start``); raw
        ``log_softmax`` (temperature 1), as SGLang computes prompt logprobs."""
        inp = torch.tensor([ids[cached:]], dtype=torch.long)
        out = self.model(input_ids=inp, cache=cache, use_cache=True, logits_to_keep=len(ids) - start)
        logits = out.logits[0, :-1].float()
        targets = torch.tensor(ids[start + 1:], dtype=torch.long)
        lps = torch.log_softmax(logits, dim=-1).gather(1, targets[:, None])[:, 0]
        return [None, *lps.tolist()], out.cache

    def sample(self, logits: torch.Tensor, spec: SamplingSpec, gen: torch.Generator) -> tuple[int, float]:
        if spec.greedy:
            lp = torch.log_softmax(logits, dim=-1)
            tok = int(torch.argmax(logits))
            return tok, float(lp[tok])
        lp = torch.log_softmax(logits / spec.temperature, dim=-1)
        probs = lp.exp()
        if 0 < spec.top_k < probs.numel():
            kth = torch.topk(probs, spec.top_k).values[-1]
            probs = torch.where(probs >= kth, probs, torch.zeros_like(probs))
        if spec.top_p < 1.0:
            sorted_p, order = torch.sort(probs, descending=True)
            cum = torch.cumsum(sorted_p, dim=-1)
            sorted_p[(cum - sorted_p) > spec.top_p] = 0.0
            probs = torch.zeros_like(probs).scatter_(0, order, sorted_p)
        if spec.min_p > 0.0:
            probs = torch.where(probs >= probs.max() * spec.min_p, probs, torch.zeros_like(probs))
        tok = int(torch.multinomial(probs, 1, generator=gen))
        if self.logprob_mode == "original":
            return tok, float(torch.log_softmax(logits, dim=-1)[tok])
        return tok, float(lp[tok])

    def top_logprobs(self, logits: torch.Tensor, spec: SamplingSpec, k: int) -> list[tuple[float, int]]:
        """The ``k`` most likely tokens and their logprobs, most likely first, under the distribution ``sample``
        reports the sampled token's logprob from (temperature-scaled unless greedy or ``original`` mode; before
        top-k / top-p / min-p filtering, as SGLang's ``output_top_logprobs``)."""
        plain = spec.greedy or self.logprob_mode == "original"
        lp = torch.log_softmax(logits if plain else logits / spec.temperature, dim=-1)
        top = torch.topk(lp, min(k, lp.numel()))
        return list(zip(top.values.tolist(), top.indices.tolist(), strict=True))

    def decode(self, ids: list[int], skip_special_tokens: bool) -> str:
        vocab = self.tokenizer.get_vocab_size(with_added_tokens=True)
        return str(self.tokenizer.decode([i for i in ids if i < vocab], skip_special_tokens=skip_special_tokens))

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer.encode(text, add_special_tokens=False).ids)


def make_generator(seed: int | None, fallback: random.Random) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(seed if seed is not None else fallback.getrandbits(63))
    return gen
