"""``polar-hpc proxy``: the proxy alone in front of an engine, writing each session's records as JSONL.

Capture any harness's traffic on a workstation: point the harness at the printed base URL with one of the
``--session-key`` values as its API key; records go to ``RECORDS/<session>.jsonl`` as calls finish.
"""

from __future__ import annotations

import argparse
from typing import Any, get_args

from polar_hpc.config.run import GatewayConfig, InferenceConfig, ProxyConfig, RenderMode, ToolParser

_INF = InferenceConfig()


def register(subparsers: Any) -> None:
    p = subparsers.add_parser("proxy", help="run the model-API proxy alone (standalone capture mode)")
    p.add_argument("--engine", action="append", required=True, metavar="URL",
                   help="SGLang (or reference) server URL; repeatable")
    p.add_argument("--model", required=True, metavar="DIR", help="model dir (tokenizer + chat template) or asset:NAME")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--unix", default=None, metavar="PATH", help="also listen on this Unix socket")
    p.add_argument("--session-key", action="append", default=[], metavar="KEY",
                   help="API key that opens a session of the same name; repeatable (default: one random key, printed)")
    p.add_argument("--records", required=True, metavar="DIR", help="folder for <session>.jsonl completion records")
    p.add_argument("--render", choices=get_args(RenderMode), default=GatewayConfig().render,
                   help="prompt render mode (default: %(default)s, as gateway.render)")
    p.add_argument("--tool-parser", choices=get_args(ToolParser), default=_INF.tool_parser,
                   help="default: %(default)s, as inference.tool_parser")
    p.add_argument("--model-name", default=_INF.served_model_name,
                   help="name /v1/models reports (default: %(default)s, as inference.served_model_name)")
    p.add_argument("--context-length", type=int, default=_INF.context_length,
                   help="default: %(default)s, as inference.context_length")
    p.add_argument("--max-new-tokens", type=int, default=_INF.max_new_tokens,
                   help="most tokens one call samples (default: %(default)s, as inference.max_new_tokens)")
    p.add_argument("--enable-thinking", action=argparse.BooleanOptionalAction, default=_INF.enable_thinking,
                   help="the chat template's enable_thinking (default: the template's own, as "
                        "inference.enable_thinking)")
    p.add_argument("--request-timeout", type=float, default=_INF.request_timeout_s, metavar="S",
                   help="default: %(default)s, as inference.request_timeout_s")
    p.add_argument("--oracle", default=None, metavar="SCRIPT",
                   help="answer every session's agent calls with the oracle policy: a JSON file with solution_patch "
                        "or solution_commands (and optional verify, answer, noop), written as the model's own tool "
                        "calls and scored by the engine (teacher forcing)")
    p.add_argument("--no-stream-upstream", dest="stream_upstream", action="store_false",
                   default=ProxyConfig().stream_upstream,
                   help="answer streaming requests from one non-streaming engine call (default: stream as sampled, "
                        "as proxy.stream_upstream)")
    p.add_argument("--keepalive", type=float, default=ProxyConfig().keepalive_s, metavar="S",
                   help="seconds of silence before a stream gets a keep-alive "
                        "(default: %(default)s, as proxy.keepalive_s)")
    p.add_argument("--stream-interval", type=int, default=ProxyConfig().stream_interval, metavar="N",
                   help="streamed engine calls: one chunk per N tokens after the first "
                        "(default: %(default)s, as proxy.stream_interval)")
    p.add_argument("--stream-max-delay", type=float, default=ProxyConfig().stream_max_delay_s, metavar="S",
                   help="longest a sampled delta waits before it is sent on "
                        "(default: %(default)s, as proxy.stream_max_delay_s)")
    p.add_argument("--engine-api-key", default=None, metavar="KEY",
                   help="the servers' API key (SGLang's --api-key); default: $POLAR_INFERENCE_API_KEY")
    p.set_defaults(func=run)


def configs(args: argparse.Namespace) -> tuple[InferenceConfig, ProxyConfig, GatewayConfig]:
    """The recipe sections the flags stand for: the proxy and its engine are built from them as a run builds its
    gateway ranks' (``ProxySettings.from_config``, ``EngineSettings.from_config``)."""
    inference = InferenceConfig(model=args.model, served_model_name=args.model_name, tool_parser=args.tool_parser,
                                context_length=args.context_length, max_new_tokens=args.max_new_tokens,
                                request_timeout_s=args.request_timeout, enable_thinking=args.enable_thinking)
    proxy = ProxyConfig(stream_upstream=args.stream_upstream, keepalive_s=args.keepalive,
                        stream_interval=args.stream_interval, stream_max_delay_s=args.stream_max_delay)
    return inference, proxy, GatewayConfig(render=args.render)


def run(args: argparse.Namespace) -> int:
    import asyncio
    import os
    import signal
    import sys
    from pathlib import Path

    from polar_hpc.assets import resolve_model
    from polar_hpc.chat.template import ChatTemplate
    from polar_hpc.engine.engine import SGLangEngine
    from polar_hpc.log import get_logger
    from polar_hpc.proxy.server import ProxyServer

    log = get_logger("cli.proxy")
    if args.stream_interval < 1 or args.stream_max_delay < 0:
        sys.stderr.write("polar-hpc proxy: --stream-interval needs a whole number of tokens >= 1 and "
                         f"--stream-max-delay seconds >= 0, got {args.stream_interval} and {args.stream_max_delay}\n")
        return 2
    oracle = None
    if args.oracle:
        from polar_hpc.policy.script import load_script

        try:
            oracle = load_script(args.oracle)
        except ValueError as err:
            sys.stderr.write(f"polar-hpc proxy: --oracle {args.oracle}: {err}\n")
            return 2

    inference, proxy, gateway = configs(args)

    async def main() -> None:
        template = ChatTemplate.from_model_dir(resolve_model(inference.model))
        api_key = args.engine_api_key or os.environ.get("POLAR_INFERENCE_API_KEY") or None
        engine = SGLangEngine.from_config(list(args.engine), inference, proxy, api_key=api_key)
        server = ProxyServer.from_config(template, engine, inference=inference, proxy=proxy, gateway=gateway,
                                         records_dir=Path(args.records))
        keys = ([server.open_session(k, api_key=k, oracle=oracle) for k in args.session_key]
                or [server.open_session("session-0", oracle=oracle)])
        base = await server.start(args.host, args.port, args.unix)
        sys.stdout.write(f"proxy listening on {base}\n")
        if not args.session_key:
            sys.stdout.write(f"session key: {keys[0]}\n")
        sys.stdout.flush()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
        log.info("stopping")
        await server.stop()
        for k in keys:
            n = len(server.close_session(k))
            log.info("session %s: %d record(s)", k if args.session_key else "session-0", n)
        await engine.close()

    asyncio.run(main())
    return 0
