"""An open session of the proxy (its records, prompt builder, oracle, whether it lost the engine) and the
provider-shaped JSON answers the server sends."""

from __future__ import annotations

import asyncio
import secrets

import msgspec
from aiohttp import web

from polar_hpc.policy.oracle import OraclePolicy
from polar_hpc.providers import provider_api
from polar_hpc.providers.errors import Failed, ProxyError
from polar_hpc.proxy.capture import SessionLog
from polar_hpc.proxy.prompt import PromptBuilder
from polar_hpc.wire.calls import Provider

JSON_CT = "application/json"
_ENC = msgspec.json.Encoder()


class ProxySession:
    __slots__ = ("session_id", "log", "builder", "oracle", "engine_lost", "lost", "max_turns", "agent_calls",
                 "turn_limit")

    def __init__(self, session_id: str, log: SessionLog, builder: PromptBuilder,
                 oracle: OraclePolicy | None = None, max_turns: int | None = None) -> None:
        self.session_id = session_id
        self.log = log
        self.builder = builder
        self.oracle = oracle
        self.engine_lost: str | None = None
        """Why a call found no model server (the first such call): the session was cut by the system."""
        self.lost = asyncio.Event()
        self.max_turns = max_turns
        """The agent calls this session may make (side requests not counted); None: no limit here."""
        self.agent_calls = 0
        self.turn_limit = asyncio.Event()
        """Set when a call past ``max_turns`` came (and was refused)."""

    def take_turn(self, side: bool) -> bool:
        """Count an agent call; False (and ``turn_limit`` set) for one past ``max_turns``."""
        if self.max_turns is None or side:
            return True
        if self.agent_calls >= self.max_turns:
            self.turn_limit.set()
            return False
        self.agent_calls += 1
        return True

    def note(self, err: BaseException) -> None:
        perr = err.error if isinstance(err, Failed) else err
        if isinstance(perr, ProxyError) and perr.kind == "engine_down" and self.engine_lost is None:
            self.engine_lost = perr.message
            self.lost.set()


def json_response(data: bytes, status: int = 200) -> web.Response:
    return web.Response(body=data, status=status, content_type=JSON_CT)


def error_response(provider: Provider, err: ProxyError) -> web.Response:
    body = _ENC.encode(provider_api(provider).error_body(err))
    return web.Response(body=body, status=err.status, content_type=JSON_CT)


def stream_error_event(provider: Provider, err: ProxyError, model: str) -> bytes:
    """The in-stream error event of a call that has no completion id yet (a fresh one names it)."""
    return provider_api(provider).stream_error(err, secrets.token_hex(8), model)
