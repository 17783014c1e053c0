"""The provider registry: one ``ProviderAPI`` per value of the ``Provider`` literal, and no other."""

from __future__ import annotations

from typing import get_args

import pytest

from polar_hpc.providers import PROVIDERS, provider_api
from polar_hpc.providers.detect import route_by_path
from polar_hpc.wire.calls import Provider


def test_registry_keys_are_the_literal() -> None:
    assert sorted(PROVIDERS) == sorted(get_args(Provider))
    for name, api in PROVIDERS.items():
        assert api.name == name


def test_unknown_provider_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="no provider API named 'cohere'"):
        provider_api("cohere")  # type: ignore[arg-type]


def test_paths_are_owned_by_one_provider() -> None:
    paths = {"anthropic": "/v1/messages", "openai_chat": "/v1/chat/completions", "openai_responses": "/v1/responses",
             "google": "/v1beta/models/m:generateContent"}
    assert sorted(paths) == sorted(PROVIDERS)
    for name, path in paths.items():
        owners = [api.name for api in PROVIDERS.values() if api.route("POST", path) is not None]
        assert owners == [name]
        route = route_by_path("POST", path, {})
        assert route is not None and route.provider == name
