"""CLI flags that mirror a config field take the field's default: walks every subcommand's parser.

A flag with a default (not ``None``) whose name is a config field's (``NAME``, ``NAME_s`` or ``served_NAME``) must
be listed in ``MIRRORED`` (same default, and for a ``Literal`` field choices from its values) or in ``NOT_MIRRORED``
with the reason it differs, so a new flag cannot re-declare a config knob with a default of its own.
"""

from __future__ import annotations

import argparse
import re
import typing
from collections.abc import Iterator
from pathlib import Path

import msgspec
import pytest

from polar_hpc.cli.entry import build_parser, main
from polar_hpc.config.run import (
    Backend,
    BuilderSpec,
    GatewayConfig,
    InferenceConfig,
    ProxyConfig,
    RunConfig,
)

MIRRORED: dict[tuple[str, str], tuple[type[msgspec.Struct], str]] = {
    ("proxy", "render"): (GatewayConfig, "render"),
    ("proxy", "tool_parser"): (InferenceConfig, "tool_parser"),
    ("proxy", "model_name"): (InferenceConfig, "served_model_name"),
    ("proxy", "context_length"): (InferenceConfig, "context_length"),
    ("proxy", "max_new_tokens"): (InferenceConfig, "max_new_tokens"),
    ("proxy", "request_timeout"): (InferenceConfig, "request_timeout_s"),
    ("proxy", "stream_upstream"): (ProxyConfig, "stream_upstream"),
    ("proxy", "keepalive"): (ProxyConfig, "keepalive_s"),
    ("proxy", "stream_interval"): (ProxyConfig, "stream_interval"),
    ("proxy", "stream_max_delay"): (ProxyConfig, "stream_max_delay_s"),
    ("build", "builder"): (BuilderSpec, "name"),
    ("build", "include_side_requests"): (BuilderSpec, "include_side_requests"),
    ("probe", "model"): (InferenceConfig, "model"),
}

NOT_MIRRORED: dict[tuple[str, str], str] = {
    ("images build-base", "engine"): "a container engine, not inference.engine",
    ("tasks build-offline", "engine"): "a container engine, not inference.engine",
    ("probe", "policy"): "a probe is an oracle session: agent.policy's default (sample) is not offered",
    ("probe", "timeout"): "the probe's harness budget, not evaluator.timeout_s",
    ("probe", "runtime"): "unset: the --recipe's runtime.backend, else the demo layout's (RuntimeSpec's default)",
    ("serve-reference", "seed"): "the reference server's default sampling seed, not trainer.seed (TRL's)",
    ("export sft", "seed"): "the train/test split's shuffle seed, not trainer.seed (TRL's)",
    ("tasks generate", "seed"): "the task generator's seed (tasks/generate.py DEFAULT_SEED), not trainer.seed",
    ("eval", "seed"): "becomes inference.random_seed (None there: unseeded); an evaluation is seeded, 0 unless given",
}


def _field_default(cls: type[msgspec.Struct], name: str) -> object:
    field = next(f for f in msgspec.structs.fields(cls) if f.name == name)
    return field.default_factory() if field.default is msgspec.NODEFAULT else field.default


def _config_fields() -> set[str]:
    names: set[str] = set()
    todo: list[type[msgspec.Struct]] = [RunConfig]
    while todo:
        for f in msgspec.structs.fields(todo.pop()):
            names.add(f.name)
            for t in (f.type, *typing.get_args(f.type)):
                if isinstance(t, type) and issubclass(t, msgspec.Struct):
                    todo.append(t)
    return names


def _flags(parser: argparse.ArgumentParser, command: str = "") -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _flags(sub, f"{command} {name}".strip())
        elif action.option_strings and action.dest not in ("help", "version"):
            yield command, action


FLAGS = {(cmd, a.dest): a for cmd, a in _flags(build_parser())}


@pytest.mark.parametrize("key", sorted(MIRRORED), ids=lambda k: f"{k[0]} --{k[1]}")
def test_mirrored_flag_takes_the_config_default(key: tuple[str, str]) -> None:
    assert key in FLAGS, f"polar-hpc {key[0]} has no flag {key[1]!r} any more: update MIRRORED"
    action = FLAGS[key]
    cls, name = MIRRORED[key]
    assert action.default == _field_default(cls, name), f"polar-hpc {key[0]} {action.option_strings[0]}"
    values = typing.get_args(typing.get_type_hints(cls)[name])
    if action.choices is not None and values:
        assert set(action.choices) <= set(values), f"polar-hpc {key[0]} {action.option_strings[0]} choices"
    written = re.search(rf"default:?\s*{re.escape(str(action.default))}\b", action.help or "")
    assert written is None, f"polar-hpc {key[0]} {action.option_strings[0]}: help shows the default as %(default)s"


def test_every_flag_named_like_a_config_field_is_classified() -> None:
    fields = _config_fields()
    unclassified = [
        f"polar-hpc {cmd} {a.option_strings[0]} (default {a.default!r})"
        for (cmd, dest), a in FLAGS.items()
        if a.default is not None and {dest, f"{dest}_s", f"served_{dest}"} & fields
        and (cmd, dest) not in MIRRORED and (cmd, dest) not in NOT_MIRRORED
    ]
    assert not unclassified, ("flags named like a config field: take the field's default (MIRRORED) or say why "
                              f"not (NOT_MIRRORED): {unclassified}")
    assert all(key in FLAGS for key in NOT_MIRRORED), [k for k in NOT_MIRRORED if k not in FLAGS]


def _positionals(parser: argparse.ArgumentParser, command: str = "") -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _positionals(sub, f"{command} {name}".strip())
        elif not action.option_strings:
            yield command, action


def test_choices_are_the_owners_values() -> None:
    """CLI modules stay light (no numpy at ``--help``), so they spell some owners' values out: here they are
    compared with the owner (the reference server's ``--logprob-mode`` is left out: its owner imports torch)."""
    from polar_hpc.export.sft_files import Format
    from polar_hpc.tasks import HARBOR, Dataset
    from polar_hpc.wire.traces import TraceStatus

    statuses = {s.name.lower() for s in TraceStatus}
    owners: dict[tuple[str, str], set[str]] = {
        ("proxy", "render"): set(typing.get_args(typing.get_type_hints(GatewayConfig)["render"])),
        ("proxy", "tool_parser"): set(typing.get_args(typing.get_type_hints(InferenceConfig)["tool_parser"])),
        ("launch", "backend"): set(typing.get_args(Backend)),
        ("build", "status"): statuses,
        ("export sft", "status"): statuses,
        ("export sft", "format"): set(typing.get_args(Format)),
        ("tasks import", "dataset"): {*typing.get_args(Dataset), HARBOR},
    }
    flags = {**FLAGS, **{(cmd, a.dest): a for cmd, a in _positionals(build_parser())}}
    for (cmd, dest), values in owners.items():
        assert set(flags[cmd, dest].choices or ()) == values, f"polar-hpc {cmd} {dest}"
    shards_status = next(a for (cmd, dest), a in FLAGS.items() if cmd.startswith("shards") and dest == "status")
    assert set(shards_status.choices or ()) == statuses


def test_proxy_rejects_a_stream_cadence_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for flags in (["--stream-interval", "0"], ["--stream-max-delay", "-1"]):
        argv = ["proxy", "--engine", "http://127.0.0.1:9", "--model", str(tmp_path), "--records", str(tmp_path),
                *flags]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--stream-interval needs a whole number of tokens >= 1" in err
