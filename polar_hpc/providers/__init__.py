"""The provider APIs the proxy answers, one package each, and their registry.

``PROVIDERS`` is keyed by the ``polar_hpc.wire.calls.Provider`` literal (a test holds the two equal); its order
is the detection order of headers and bodies (Anthropic's headers before Google's; a body with ``contents`` is
Google's, then ``input`` / ``instructions`` Responses', then ``messages`` Chat's). Adding a provider: its package
here (``ProviderAPI`` as ``API``), its name in the literal, its line below.
"""

from __future__ import annotations

from polar_hpc.providers import anthropic, google, openai_chat, openai_responses
from polar_hpc.providers.base import ProviderAPI, Route
from polar_hpc.wire.calls import Provider

PROVIDERS: dict[Provider, ProviderAPI] = {
    api.name: api for api in (anthropic.API, google.API, openai_responses.API, openai_chat.API)
}


def provider_api(provider: Provider) -> ProviderAPI:
    try:
        return PROVIDERS[provider]
    except KeyError:
        raise ValueError(f"no provider API named {provider!r}; known: {sorted(PROVIDERS)}") from None


__all__ = ["PROVIDERS", "ProviderAPI", "Route", "provider_api"]
