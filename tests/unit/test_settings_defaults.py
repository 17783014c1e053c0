"""Each component's settings are one Struct (``ProxySettings``, ``EngineSettings``, ``ReferenceOptions``): the recipe
keys they take and the CLI flags that set them are derived from it, and these tests hold them equal.

- A settings field a recipe sets (``RECIPE_KEYS``) defaults to the recipe key's default, unless ``BARE_DEFAULTS``
  says why a server built without a recipe differs (``from_config`` always passes the recipe's value).
- ``polar-hpc proxy`` without flags builds the settings a default recipe gives.
- ``polar-hpc serve-reference``'s flags are ``ReferenceOptions``'s fields with its defaults, and the command line a
  run starts the server with reads back as the options it was made from.
"""

from __future__ import annotations

import argparse

import msgspec
import pytest

from polar_hpc.cli.entry import build_parser
from polar_hpc.config.run import GatewayConfig, InferenceConfig, ProxyConfig, RunConfig
from polar_hpc.engine.settings import RECIPE_KEYS as ENGINE_KEYS
from polar_hpc.engine.settings import EngineSettings, recipe_value
from polar_hpc.proxy.settings import RECIPE_KEYS as PROXY_KEYS
from polar_hpc.proxy.settings import ProxySettings
from polar_hpc.reference.options import FLAGS, ReferenceOptions

SETTINGS: dict[type[msgspec.Struct], dict[str, str]] = {ProxySettings: PROXY_KEYS, EngineSettings: ENGINE_KEYS}
BARE_DEFAULTS: dict[tuple[type[msgspec.Struct], str], str] = {
    (ProxySettings, "render_mode"): "a bare server renders each prompt canonically; runs take gateway.render",
    (ProxySettings, "request_timeout_s"): "None: the engine's own deadline (EngineSettings.request_timeout_s)",
    (EngineSettings, "context_length"): "None: not known, no clamping without a recipe",
}
RECIPE = RunConfig.__struct_fields__
SECTIONS = {"inference": InferenceConfig(), "proxy": ProxyConfig(), "gateway": GatewayConfig()}


def _default(cls: type[msgspec.Struct], name: str) -> object:
    field = next(f for f in msgspec.structs.fields(cls) if f.name == name)
    return field.default_factory() if field.default is msgspec.NODEFAULT else field.default


@pytest.mark.parametrize("cls", list(SETTINGS), ids=lambda c: c.__name__)
def test_a_setting_a_recipe_sets_has_the_recipe_default(cls: type[msgspec.Struct]) -> None:
    for name, key in SETTINGS[cls].items():
        assert name in cls.__struct_fields__, f"{cls.__name__}.RECIPE_KEYS names no field {name!r}"
        assert key.split(".")[0] in RECIPE, key
        if (cls, name) in BARE_DEFAULTS:
            assert _default(cls, name) != recipe_value(SECTIONS, key), f"{cls.__name__}.{name} is no exception now"
            continue
        assert _default(cls, name) == recipe_value(SECTIONS, key), f"{cls.__name__}.{name} vs {key}"
    assert {k[1] for k in BARE_DEFAULTS if k[0] is cls} <= set(SETTINGS[cls])


def test_from_config_reads_every_recipe_key() -> None:
    inf = InferenceConfig(served_model_name="pol", tool_parser="none", context_length=4096, max_new_tokens=77,
                          request_timeout_s=12.0, enable_thinking=False, random_seed=5, top_logprobs=3)
    px = ProxyConfig(stream_upstream=False, keepalive_s=3.0, stream_interval=4, stream_max_delay_s=0.5)
    gw = GatewayConfig(render="canonical", measure_divergence=True)
    sections = {"inference": inf, "proxy": px, "gateway": gw}
    built = {ProxySettings: ProxySettings.from_config(inf, px, gw), EngineSettings: EngineSettings.from_config(inf, px)}
    for cls, settings in built.items():
        for name, key in SETTINGS[cls].items():
            assert getattr(settings, name) == recipe_value(sections, key), f"{cls.__name__}.{name}"
            assert getattr(settings, name) != _default(cls, name) or (cls, name) in BARE_DEFAULTS, (
                f"pick a non-default value for {key} above")


def _sub(name: str) -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[name]


def test_the_standalone_proxy_without_flags_is_a_default_recipe() -> None:
    from polar_hpc.cli.proxy import configs

    args = build_parser().parse_args(["proxy", "--engine", "http://127.0.0.1:9", "--model", "m", "--records", "r"])
    inf, px, gw = configs(args)
    assert ProxySettings.from_config(inf, px, gw) == ProxySettings.from_config(*SECTIONS.values())  # type: ignore[arg-type]
    assert EngineSettings.from_config(inf, px) == EngineSettings.from_config(SECTIONS["inference"], SECTIONS["proxy"])  # type: ignore[arg-type]


def test_serve_reference_flags_are_the_options() -> None:
    actions = {a.dest: a for a in _sub("serve-reference")._actions}
    assert set(FLAGS) == set(ReferenceOptions.__struct_fields__)
    for name, flag in FLAGS.items():
        assert actions[name].option_strings == [flag]
        assert actions[name].default == _default(ReferenceOptions, name), flag


@pytest.mark.parametrize("options", [
    ReferenceOptions(),
    ReferenceOptions(host="10.0.0.2", port=0, seed=3, context_length=4096, served_model_name="pol", threads=2,
                     ready_file="/tmp/r.json", logprob_mode="original", first_token_delay_s=0.5, token_delay_s=0.01),
], ids=["defaults", "every-option"])
def test_the_command_line_reads_back_as_its_options(options: ReferenceOptions) -> None:
    cmd = options.command("/m/tiny", python="py")
    assert cmd[:6] == ["py", "-m", "polar_hpc", "serve-reference", "--model", "/m/tiny"]
    args = build_parser().parse_args(cmd[3:])
    assert ReferenceOptions(**{name: getattr(args, name) for name in FLAGS}) == options
