"""Whether a model dir is one the reference server can load, checked without torch (before a run is launched).

What :class:`polar_hpc.reference.model.ModelRunner` reads: ``config.json`` (a JSON object naming its
``model_type``, what ``AutoModelForCausalLM`` dispatches on), the weights ``from_pretrained`` finds
(``model.safetensors``, a sharded ``model.safetensors.index.json`` with every shard present, or
``pytorch_model.bin``), each safetensors header readable, and ``tokenizer.json`` (``tokenizers`` loads it).
"""

from __future__ import annotations

import json
from pathlib import Path

CONFIG = "config.json"
TOKENIZER = "tokenizer.json"
SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
TORCH_BIN = "pytorch_model.bin"


def _json_object(path: Path) -> tuple[dict[str, object] | None, str | None]:
    try:
        value = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as err:
        return None, f"{path} cannot be read ({err})"
    except json.JSONDecodeError as err:
        return None, f"{path} is not JSON ({err.msg} at line {err.lineno})"
    if not isinstance(value, dict):
        return None, f"{path}: expected a JSON object, got {type(value).__name__}"
    return value, None


def _weight_files(root: Path) -> tuple[list[Path], str | None]:
    if (root / SAFETENSORS).is_file():
        return [root / SAFETENSORS], None
    if (root / SAFETENSORS_INDEX).is_file():
        index, err = _json_object(root / SAFETENSORS_INDEX)
        if index is None:
            return [], err
        weight_map = index.get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            return [], f"{root / SAFETENSORS_INDEX}: no weight_map"
        files = [root / str(f) for f in sorted(set(weight_map.values()))]
        missing = [f.name for f in files if not f.is_file()]
        return files, (f"{root / SAFETENSORS_INDEX} names shards that are not there: {', '.join(missing)}"
                       if missing else None)
    if (root / TORCH_BIN).is_file():
        return [], None
    return [], (f"no weights in {root} (expected {SAFETENSORS}, {SAFETENSORS_INDEX} with its shards, or "
                f"{TORCH_BIN})")


def _safetensors_problem(path: Path) -> str | None:
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="numpy") as f:
            if not list(f.keys()):
                return f"{path} holds no tensors"
    except Exception as err:  # safetensors raises its own SafetensorError and OSError for a bad header
        return f"{path} is not a readable safetensors file ({err})"
    return None


def model_dir_problems(model_dir: Path) -> list[str]:
    """What stops the reference server from loading ``model_dir`` (empty: nothing that can be seen before)."""
    if not model_dir.is_dir():
        return [f"{model_dir}: not a directory (expected a transformers model dir: {CONFIG}, weights, {TOKENIZER})"]
    problems: list[str] = []
    if not (model_dir / CONFIG).is_file():
        problems.append(f"no {CONFIG} in {model_dir} (expected a transformers model dir)")
    else:
        config, err = _json_object(model_dir / CONFIG)
        if err:
            problems.append(err)
        elif config is not None and not isinstance(config.get("model_type"), str):
            problems.append(f"{model_dir / CONFIG} names no model_type (what AutoModelForCausalLM loads it by)")
    files, err = _weight_files(model_dir)
    if err:
        problems.append(err)
    problems += [p for f in files if (p := _safetensors_problem(f)) is not None]
    if not (model_dir / TOKENIZER).is_file():
        problems.append(f"no {TOKENIZER} in {model_dir} (the reference server tokenizes with it)")
    else:
        from tokenizers import Tokenizer

        try:
            Tokenizer.from_file(str(model_dir / TOKENIZER))
        except Exception as err:  # tokenizers raises a bare Exception for a file it cannot parse
            problems.append(f"{model_dir / TOKENIZER} does not load ({str(err)[:160]})")
    return problems
