"""SGLang's own ``/generate`` JSON contract, loaded from the pinned wheel's ``api_types.py`` by file path.

``api_types.py`` (generated, msgspec-only) is the ``sglang-api-types`` asset; importing it through the
``sglang`` package would pull in torch and CUDA, so it is loaded as a standalone module. Contract tests run
every request the engine sends and every response the reference server returns through these validators.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache
from types import ModuleType
from typing import Any

from polar_hpc.assets.versions import SGLANG_VERSION

_MODULE_NAME = "polar_hpc_sglang_api_types"


class SchemaViolation(ValueError):
    """A body does not satisfy SGLang's schema; the message is SGLang's (serde-style) text."""


@cache
def load_api_types(path: str | None = None) -> ModuleType:
    """The ``api_types`` module of SGLang ``SGLANG_VERSION`` (from the asset unless ``path`` is given)."""
    if path is None:
        from polar_hpc.assets import asset_path

        path = str(asset_path("sglang-api-types"))
    spec = importlib.util.spec_from_file_location(_MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load SGLang {SGLANG_VERSION} api_types from {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[_MODULE_NAME] = module  # msgspec resolves forward references through sys.modules
    spec.loader.exec_module(module)
    return module


def _parse(body: bytes | str, what: str) -> Any:
    try:
        return json.loads(body)
    except ValueError as err:
        raise SchemaViolation(f"{what} is not JSON: {err}") from None


def validate_generate_request(body: bytes | str) -> Any:
    """Decode a ``POST /generate`` body with SGLang's ``decode_GenerateRequest``; raises :class:`SchemaViolation`."""
    api = load_api_types()
    try:
        return api.decode_GenerateRequest(_parse(body, "the /generate request"))
    except api.JsonContractError as err:
        raise SchemaViolation(f"SGLang {SGLANG_VERSION} rejects the /generate request: {err}") from None


def validate_generate_response(body: bytes | str) -> Any:
    """Decode a ``/generate`` response (or one streamed chunk) with ``decode_GenerateResponse``.

    SGLang's decoder falls back to a plain dict for a ``finish_reason`` it cannot type; that is refused
    here, so a malformed finish reason fails the contract."""
    api = load_api_types()
    try:
        resp = api.decode_GenerateResponse(_parse(body, "the /generate response"))
    except api.JsonContractError as err:
        raise SchemaViolation(f"SGLang {SGLANG_VERSION} rejects the /generate response: {err}") from None
    meta = resp.meta_info
    if meta is None:
        raise SchemaViolation("the /generate response has no meta_info")
    if isinstance(meta.finish_reason, dict):
        raise SchemaViolation(f"meta_info.finish_reason {meta.finish_reason!r} is not a stop/length/abort object")
    return resp
