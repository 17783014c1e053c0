"""Build the model assets (torch + transformers, imported here only: this runs at fetch time, never at run time)."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

from polar_hpc.assets.catalog import AssetFetchError

TINY_QWEN3_SEED = 0
TINY_QWEN3_CONFIG: dict[str, Any] = dict(
    vocab_size=151936, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
    num_key_value_heads=2, head_dim=8, max_position_embeddings=32768, tie_word_embeddings=True,
    bos_token_id=None,
)


def _offline_transformers() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
    for module in ("torch", "transformers"):
        if importlib.util.find_spec(module) is None:
            raise AssetFetchError(f"building model assets needs {module}: pip install 'polar-hpc[reference]'")


def build_tiny_qwen3(tokenizer_dir: Path, out: Path) -> None:
    """Random-init Qwen3ForCausalLM, same weights every time (fixed seed, CPU init)."""
    _offline_transformers()
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    cfg = Qwen3Config(**TINY_QWEN3_CONFIG, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(TINY_QWEN3_SEED)
    model = Qwen3ForCausalLM(cfg).eval()
    # Real Qwen3 checkpoints stop on <|im_end|> and <|endoftext|> (their generation_config.json).
    model.generation_config.eos_token_id = [tok.eos_token_id, tok.pad_token_id]
    model.save_pretrained(str(out))
    tok.save_pretrained(str(out))


def build_smollm2(gguf: Path, out: Path) -> None:
    """Dequantize the GGUF once and save it as a bf16 safetensors Llama model with its tokenizer."""
    _offline_transformers()
    if importlib.util.find_spec("gguf") is None or importlib.util.find_spec("accelerate") is None:
        raise AssetFetchError("converting the SmolLM2 GGUF needs the gguf and accelerate packages: "
                              "pip install gguf accelerate")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    quantized = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    cfg = quantized.config.to_dict()
    for key in ("quantization_config", "_name_or_path", "_model_name_or_path", "transformers_version"):
        cfg.pop(key, None)
    model = LlamaForCausalLM(LlamaConfig(**cfg))
    result = model.load_state_dict(quantized.state_dict())
    if result.missing_keys or result.unexpected_keys:
        raise AssetFetchError(f"SmolLM2 GGUF -> Llama weights do not line up: {result}")
    model.bfloat16().eval().save_pretrained(str(out))
    tok.save_pretrained(str(out))
