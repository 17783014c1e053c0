"""The engine client's settings, one Struct passed whole to :class:`~polar_hpc.engine.engine.SGLangEngine`.

The fields a recipe sets are named in :data:`RECIPE_KEYS` (field → ``section.key``); their defaults are the
recipe's (``tests/unit/test_settings_defaults.py`` holds them equal) and :meth:`EngineSettings.from_config` is
the one mapping from a recipe's sections, for a gateway rank and ``polar-hpc proxy`` alike. Light: no
aiohttp, no numpy (the CLI reads the defaults at ``--help``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from polar_hpc.config.run import InferenceConfig, ProxyConfig

_INF = InferenceConfig()
_PROXY = ProxyConfig()

RECIPE_KEYS: dict[str, str] = {
    "request_timeout_s": "inference.request_timeout_s",
    "context_length": "inference.context_length",
    "default_max_new_tokens": "inference.max_new_tokens",
    "top_logprobs": "inference.top_logprobs",
    "stream_interval": "proxy.stream_interval",
    "stream_max_delay_s": "proxy.stream_max_delay_s",
}
"""The settings a recipe sets, as ``section.key`` of :class:`~polar_hpc.config.run.RunConfig`."""


class EngineSettings(msgspec.Struct, frozen=True, kw_only=True):
    """``context_length``: when known, ``max_new_tokens`` is clamped to the room left after the prompt and a
    prompt that leaves no room raises ``ContextOverflow`` without a request (None here: not known; a recipe
    always knows it). ``max_connections``: most requests in flight to the servers at once (more wait their
    turn); 0 = no limit. ``stream_interval``, ``stream_max_delay_s``: the cadence of streamed calls."""

    request_timeout_s: float = _INF.request_timeout_s
    max_retries: int = 3
    context_length: int | None = None
    default_max_new_tokens: int = _INF.max_new_tokens
    backoff_s: float = 0.2
    max_backoff_s: float = 5.0
    connect_timeout_s: float = 10.0
    admin_timeout_s: float = 600.0
    max_connections: int = 0
    stream_interval: int = _PROXY.stream_interval
    stream_max_delay_s: float = _PROXY.stream_max_delay_s
    top_logprobs: int = _INF.top_logprobs

    @classmethod
    def from_config(cls, inference: InferenceConfig, proxy: ProxyConfig) -> EngineSettings:
        """The settings a recipe's ``inference`` and ``proxy`` sections give (see :data:`RECIPE_KEYS`)."""
        sections = {"inference": inference, "proxy": proxy}
        return msgspec.convert({f: recipe_value(sections, key) for f, key in RECIPE_KEYS.items()}, cls)


def recipe_value(sections: Mapping[str, msgspec.Struct], key: str) -> Any:
    """The value of ``section.key`` among ``sections``."""
    section, name = key.split(".", 1)
    return getattr(sections[section], name)
