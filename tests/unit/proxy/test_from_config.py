"""A gateway rank and ``polar-hpc proxy`` build their proxy and engine from the same config Structs
(``ProxyServer.from_config``, ``SGLangEngine.from_config``), so a knob of the recipe reaches both."""

from __future__ import annotations

from pathlib import Path

from polar_hpc.chat.template import ChatTemplate
from polar_hpc.cli.entry import build_parser
from polar_hpc.config.run import GatewayConfig, InferenceConfig, ProxyConfig
from polar_hpc.engine.engine import SGLangEngine
from polar_hpc.proxy.server import ProxyServer


async def test_every_knob_reaches_the_proxy(qwen3_template: ChatTemplate, tmp_path: Path) -> None:
    inf = InferenceConfig(served_model_name="pol", tool_parser="qwen", context_length=4096, max_new_tokens=77,
                          request_timeout_s=12.0, enable_thinking=False)
    px = ProxyConfig(stream_upstream=False, keepalive_s=3.0, stream_interval=4, stream_max_delay_s=0.5)
    gw = GatewayConfig(render="canonical", measure_divergence=True)
    engine = SGLangEngine.from_config(["http://127.0.0.1:9"], inf, px, api_key="k")
    server = ProxyServer.from_config(qwen3_template, engine, inference=inf, proxy=px, gateway=gw, records_dir=tmp_path)
    try:
        st = engine.settings
        assert (st.request_timeout_s, st.context_length, st.default_max_new_tokens, engine.api_key,
                st.stream_interval, st.stream_max_delay_s) == (12.0, 4096, 77, "k", 4, 0.5)
        g = server.gen
        assert (server.model_name, g.tool_parser, g.context_length, g.max_new_tokens, g.enable_thinking,
                g.request_timeout_s) == ("pol", "qwen", 4096, 77, False, 12.0)
        assert (server.render_mode, server.measure_divergence, server.stream_upstream, server.sse_keepalive_s,
                server.records_dir) == ("canonical", True, False, 3.0, tmp_path)
    finally:
        await server.stop()
        await engine.close()


def test_the_standalone_proxy_sets_enable_thinking() -> None:
    base = ["proxy", "--engine", "http://127.0.0.1:9", "--model", "m", "--records", "r"]
    assert build_parser().parse_args(base).enable_thinking is None
    assert build_parser().parse_args([*base, "--enable-thinking"]).enable_thinking is True
    assert build_parser().parse_args([*base, "--no-enable-thinking"]).enable_thinking is False
