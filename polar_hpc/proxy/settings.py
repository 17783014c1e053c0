"""The proxy's settings, one Struct passed whole to :class:`~polar_hpc.proxy.server.ProxyServer`.

The fields a recipe sets are named in :data:`RECIPE_KEYS` (field → ``section.key``); their defaults are the
recipe's, ``render_mode`` and ``request_timeout_s`` excepted (see the fields), and
``tests/unit/test_settings_defaults.py`` holds them equal. :meth:`ProxySettings.from_config` is the one mapping from
a recipe's sections, for a gateway rank and ``polar-hpc proxy`` alike. Light: the CLI reads the defaults at
``--help``.
"""

from __future__ import annotations

import msgspec

from polar_hpc.config.run import GatewayConfig, InferenceConfig, ProxyConfig, RenderMode, ToolParser
from polar_hpc.engine.settings import recipe_value

_INF = InferenceConfig()
_PROXY = ProxyConfig()
_GATEWAY = GatewayConfig()

RECIPE_KEYS: dict[str, str] = {
    "model_name": "inference.served_model_name",
    "tool_parser": "inference.tool_parser",
    "render_mode": "gateway.render",
    "context_length": "inference.context_length",
    "max_new_tokens": "inference.max_new_tokens",
    "enable_thinking": "inference.enable_thinking",
    "request_timeout_s": "inference.request_timeout_s",
    "measure_divergence": "gateway.measure_divergence",
    "stream_upstream": "proxy.stream_upstream",
    "sse_keepalive_s": "proxy.keepalive_s",
    "run_seed": "inference.random_seed",
}
"""The settings a recipe sets, as ``section.key`` of :class:`~polar_hpc.config.run.RunConfig`."""


class ProxySettings(msgspec.Struct, frozen=True, kw_only=True):
    """``served_models``: when given, other model names get the provider's 404 (default: any name is served by
    the policy, as harnesses send their own names). ``stream_upstream``: streaming requests stream from the engine
    as it samples (else one engine call and a synthesized stream). ``run_seed``: seeds every sampled call whose
    request carries no seed (``wire.session.call_seed``); None: unseeded."""

    model_name: str = _INF.served_model_name
    tool_parser: ToolParser = _INF.tool_parser
    render_mode: RenderMode = "canonical"
    """A bare server renders each prompt canonically; runs and ``polar-hpc proxy`` take ``gateway.render``."""
    context_length: int = _INF.context_length
    max_new_tokens: int = _INF.max_new_tokens
    enable_thinking: bool | None = _INF.enable_thinking
    request_timeout_s: float | None = None
    """Each call's deadline; None: the engine's own (``EngineSettings.request_timeout_s``, the same recipe key)."""
    served_models: list[str] | None = None
    max_body_bytes: int = 64 * 1024 * 1024
    session_memory_bytes: int = 256 * 1024 * 1024
    sse_keepalive_s: float = _PROXY.keepalive_s
    measure_divergence: bool = _GATEWAY.measure_divergence
    stream_upstream: bool = _PROXY.stream_upstream
    run_seed: int | None = _INF.random_seed

    @classmethod
    def from_config(cls, inference: InferenceConfig, proxy: ProxyConfig, gateway: GatewayConfig) -> ProxySettings:
        """The settings a recipe's ``inference``, ``proxy`` and ``gateway`` sections give (:data:`RECIPE_KEYS`)."""
        sections = {"inference": inference, "proxy": proxy, "gateway": gateway}
        return msgspec.convert({f: recipe_value(sections, key) for f, key in RECIPE_KEYS.items()}, cls)
