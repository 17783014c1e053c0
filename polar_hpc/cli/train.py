"""``polar-hpc train grpo|sft``: the command group; each kind is its own module (``train_grpo``, ``train_sft``)."""

from __future__ import annotations

from typing import Any


def register(subparsers: Any) -> None:
    train = subparsers.add_parser("train", help="train on a run's rollouts (GRPO with TRL) or its SFT corpus")
    from polar_hpc.cli.train_grpo import register as register_grpo
    from polar_hpc.cli.train_sft import register as register_sft

    kinds = train.add_subparsers(dest="train_kind", metavar="KIND", required=True)
    register_grpo(kinds)
    register_sft(kinds)
