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
from polar_hpc.reference.model import ModelRunner
from polar_hpc.reference.options import ReferenceOptions
from polar_hpc.wire.endpoints import Endpoint, write_endpoint_file
from polar_hpc.wire.security import API_KEY_ENV

log = get_logger("reference")


def serve(model_dir: str | Path, options: ReferenceOptions, *, api_key: str | None = None) -> int:
    """``api_key``: requests other than ``/health*`` need ``Authorization: Bearer <key>`` (SGLang's
    ``--api-key``); default: the ``POLAR_INFERENCE_API_KEY`` environment variable, none when unset."""
    import torch

    torch.set_num_threads(options.threads or max(1, min(4, (os.cpu_count() or 2) // 2)))
    torch.manual_seed(options.seed)
    runner = ModelRunner(model_dir, context_length=options.context_length, logprob_mode=options.logprob_mode)
    server = ReferenceServer(runner, options, api_key=api_key or os.environ.get(API_KEY_ENV) or None)
    asyncio.run(_run(server, options.host, options.port, options.ready_file))
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
