"""Test/demo assets (real tokenizers, small models, the SGLang schema), fetched once into a local cache."""

from polar_hpc.assets.catalog import (
    ASSETS,
    AssetCorrupt,
    AssetError,
    AssetFetchError,
    AssetMissing,
    asset_path,
    cache_dir,
    resolve_model,
    verify,
)

__all__ = [
    "ASSETS",
    "AssetCorrupt",
    "AssetError",
    "AssetFetchError",
    "AssetMissing",
    "asset_path",
    "cache_dir",
    "resolve_model",
    "verify",
]
