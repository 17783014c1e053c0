"""Each sampled call gets a seed derived from the run seed and the call's identity (``wire.session.call_seed``), a
harness's own seed wins, and the record keeps what the engine applied (temperature, top_p, top_k, seed). The
engine is the scripted stand-in at the engine boundary; the client is the real OpenAI SDK."""

from __future__ import annotations

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.proxy.server import ProxyServer
from polar_hpc.proxy.settings import ProxySettings
from polar_hpc.wire.calls import AppliedSampling
from polar_hpc.wire.session import SEED_BITS, call_seed
from tests.fixtures.proxy import ScriptedEngine
from tests.fixtures.sdk_clients import SdkClients


def test_the_seed_depends_on_the_call_not_on_the_attempt() -> None:
    base = call_seed(0, "add-3@step2/5#0", 1)
    assert base == call_seed(0, "add-3@step2/5#0", 1)  # the same call: the same seed
    assert base == call_seed(0, "add-3@step2/5#4", 1)  # another attempt at the same session samples the same
    others = [call_seed(1, "add-3@step2/5#0", 1), call_seed(0, "add-3@step3/5#0", 1),
              call_seed(0, "add-3@step2/6#0", 1), call_seed(0, "add-3@step2/5#0", 2),
              call_seed(0, "add-4@step2/5#0", 1)]
    assert len({base, *others}) == 6
    assert all(0 <= s < 1 << SEED_BITS for s in [base, *others])


async def test_the_proxy_seeds_unseeded_calls_and_records_what_was_applied(qwen3_template: ChatTemplate,
                                                                          sdk: SdkClients) -> None:
    engine = ScriptedEngine(qwen3_template)
    server = ProxyServer(qwen3_template, engine, ProxySettings(model_name="policy", context_length=4096,
                                                               max_new_tokens=32, run_seed=11))
    base = await server.start()
    try:
        sid = "add-3@step2/5#1"
        key = server.open_session(sid)
        client = sdk.openai(base, key)
        messages = [{"role": "user", "content": "What is 2 + 3?"}]
        await client.chat.completions.create(model="policy", messages=messages)  # type: ignore[arg-type]
        await client.chat.completions.create(model="policy", messages=messages, temperature=0.5,  # type: ignore[arg-type]
                                             top_p=0.9)
        await client.chat.completions.create(model="policy", messages=messages, seed=42)  # type: ignore[arg-type]
        records = server.close_session(key)
    finally:
        await server.stop()
    sent = [c.sampling.seed for c in engine.calls]
    assert sent == [call_seed(11, sid, 0), call_seed(11, sid, 1), 42]
    assert [r.sampling for r in records] == [
        AppliedSampling(temperature=1.0, top_p=1.0, top_k=-1, seed=sent[0]),
        AppliedSampling(temperature=0.5, top_p=0.9, top_k=-1, seed=sent[1]),
        AppliedSampling(temperature=1.0, top_p=1.0, top_k=-1, seed=42),
    ]


async def test_without_a_run_seed_calls_are_not_seeded(qwen3_template: ChatTemplate, sdk: SdkClients) -> None:
    engine = ScriptedEngine(qwen3_template)
    server = ProxyServer(qwen3_template, engine, ProxySettings(model_name="policy", context_length=4096,
                                                               max_new_tokens=32))
    base = await server.start()
    try:
        key = server.open_session("t/0#0")
        await sdk.openai(base, key).chat.completions.create(
            model="policy", messages=[{"role": "user", "content": "hi"}], temperature=0.7)  # type: ignore[arg-type]
        (record,) = server.close_session(key)
    finally:
        await server.stop()
    assert engine.calls[0].sampling.seed is None
    assert record.sampling == AppliedSampling(temperature=0.7, top_p=1.0, top_k=-1, seed=None)


def test_the_recipes_random_seed_reaches_the_proxy(qwen3_template: ChatTemplate) -> None:
    from polar_hpc.config.run import GatewayConfig, InferenceConfig, ProxyConfig

    inf = InferenceConfig(random_seed=9)
    engine = SGLangEngine.from_config(["http://127.0.0.1:9"], inf, ProxyConfig(), api_key=None)
    server = ProxyServer.from_config(qwen3_template, engine, inference=inf, proxy=ProxyConfig(),
                                     gateway=GatewayConfig())
    assert server.gen.run_seed == 9
