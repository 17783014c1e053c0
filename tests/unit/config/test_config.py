from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from polar_hpc.config import ConfigError, RunConfig, decode, dump_config, load_recipe

RECIPES = sorted((Path(__file__).parents[3] / "recipes").glob("*.toml"))


def test_recipes_folder_is_not_empty() -> None:
    assert RECIPES, "recipes/ holds no *.toml"


@pytest.mark.parametrize("recipe", RECIPES, ids=lambda p: p.name)
def test_every_recipe_decodes_and_round_trips(recipe: Path) -> None:
    cfg = load_recipe(recipe)
    again = decode(tomllib.loads(dump_config(cfg)), RunConfig)
    assert again == cfg


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "r.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[gatway]\n", ["gatway", "unknown key", "valid keys:", "gateway"]),
        ("[gateway]\nnum_rank = 2\n", ["gateway.num_rank", "unknown key", "num_ranks"]),
        ("[runtime]\nbackend = 'lxc'\n", ["runtime.backend", "'lxc'", "valid choices:", "'bwrap'", "'podman'"]),
        ("[gateway]\nnum_ranks = 'two'\n", ["gateway.num_ranks", "Expected `int`, got `str`"]),
        ("[gateway.resources]\nmem_gb = [1]\n", ["gateway.resources.mem_gb", "Expected"]),
        ("[gateway\n", ["not valid TOML"]),
    ],
)
def test_bad_recipes_name_path_and_choices(tmp_path: Path, text: str, expected: list[str]) -> None:
    p = _write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_recipe(p)
    msg = str(info.value)
    assert str(p) in msg
    for part in expected:
        assert part in msg, msg


def test_overrides_are_type_checked(tmp_path: Path) -> None:
    p = _write(tmp_path, "name = 'x'\n")
    cfg = load_recipe(p, ["gateway.num_ranks=3", "runtime.backend=local", "agent.command=echo hi"])
    assert cfg.gateway.num_ranks == 3
    assert cfg.runtime.backend == "local"
    assert cfg.agent.command == "echo hi"
    with pytest.raises(ConfigError, match="gateway.num_ranks"):
        load_recipe(p, ["gateway.num_ranks=many"])
    with pytest.raises(ConfigError, match="KEY=VALUE"):
        load_recipe(p, ["gateway.num_ranks"])
    with pytest.raises(ConfigError, match="unknown key 'nope'"):
        load_recipe(p, ["gateway.nope=1"])


def test_missing_file_is_clear(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such recipe file"):
        load_recipe(tmp_path / "absent.toml")


def test_help_is_fast_and_light() -> None:
    code = (
        "import sys, polar_hpc.cli.entry as c\n"
        "try:\n    c.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('h5py', 'torch', 'sglang', 'numpy', 'transformers') if m in sys.modules]\n"
        "sys.stderr.write(repr(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stderr.strip().endswith("[]"), out.stderr
