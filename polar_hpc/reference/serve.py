"""Run the reference server in this process until SIGTERM/SIGINT."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

from aiohttp import web

from polar_hpc.log import get_logger
from polar_hpc.reference.app import ReferenceServer
from polar_hpc.reference.model import LogprobMode, ModelRunner
from polar_hpc.wire.endpoints import Endpoint, write_endpoint_file
from polar_hpc.wire.security import API_KEY_ENV

log = get_logger("inference.reference")


def serve(
    model_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    seed: int = 0,
    context_length: int | None = None,
    served_model_name: str | None = None,
    threads: int | None = None,
    ready_file: str | Path | None = None,
    logprob_mode: LogprobMode = "processed",
    api_key: str | None = None,
    first_token_delay_s: float = 0.0,
    token_delay_s: float = 0.0,
) -> int:
    """``api_key``: requests other than ``/health*`` need ``Authorization: Bearer <key>`` (SGLang's
    ``--api-key``); default: the ``POLAR_INFERENCE_API_KEY`` environment variable, none when unset."""
    import torch

    torch.set_num_threads(threads or max(1, min(4, (os.cpu_count() or 2) // 2)))
    torch.manual_seed(seed)
    runner = ModelRunner(model_dir, context_length=context_length, logprob_mode=logprob_mode)
    api_key = api_key or os.environ.get(API_KEY_ENV) or None
    server = ReferenceServer(
        runner, served_model_name=served_model_name or Path(model_dir).name, seed=seed, api_key=api_key,
        first_token_delay_s=first_token_delay_s, token_delay_s=token_delay_s,
    )
    asyncio.run(_run(server, host, port, ready_file))
    return 0


async def _run(server: ReferenceServer, host: str, port: int, ready_file: str | Path | None) -> None:
    runner = web.AppRunner(server.app(), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    sockets = getattr(site._server, "sockets", None) or []
    bound = sockets[0].getsockname()[1] if sockets else port
    url = f"http://{host}:{bound}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if ready_file:
        write_endpoint_file(
            ready_file,
            Endpoint(
                name=Path(ready_file).stem,
                url=url,
                pid=os.getpid(),
                host=host,
                port=bound,
                started_at=time.time(),
                kind="reference",
                model=str(server.runner.model_dir),
                served_model_name=server.served_model_name,
            ),
        )
    log.info("reference server ready at %s (model %s, context %d)", url, server.runner.model_dir,
             server.runner.context_length)
    try:
        await stop.wait()
    finally:
        log.info("reference server at %s shutting down", url)
        await runner.cleanup()
