"""`<cli> --version` of each real harness CLI inside a bwrap sandbox, with the adapter's env.

Needs the CLIs from npm: ``bash tools/install_harnesses.sh`` (Claude Code and Qwen Code go into the Node-22 prefix
of ``polar_hpc.harness.toolchain`` when the system Node is older; that prefix is bound into the sandbox).
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from polar_hpc.config.run import AgentSpec, RuntimeSpec
from polar_hpc.harness import HarnessContext, HarnessError, get_adapter
from polar_hpc.harness.pins import VERSIONS
from polar_hpc.harness.toolchain import resolve_harness
from polar_hpc.runtime import make_runtime

SLOW_TO_START = {"openhands", "cline", "gemini_cli"}
"""CLIs that take seconds to print their version (OpenHands imports its Python package, the others load large
bundles): checked in the slow tier, the rest in the fast one."""


@pytest.mark.harness
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_TO_START else n
                                  for n in sorted(VERSIONS)])
async def test_version_in_bwrap(tmp_path: Path, name: str) -> None:
    adapter = get_adapter(name)
    if shutil.which("bwrap") is None:
        pytest.fail("bwrap not on PATH (apt-get install bubblewrap)")
    try:
        launch = resolve_harness(adapter.binary)
    except HarnessError as err:
        pytest.fail(f"{err} (see this module's docstring)")
    rt = make_runtime(RuntimeSpec(backend="bwrap", network="none", binds=launch.binds), tmp_path / "s")
    await rt.start()
    try:
        ctx = HarnessContext(
            instruction="hi", base_url=rt.proxy_base_url("http://127.0.0.1:1"), api_key="k", model="policy",
            agent=AgentSpec(harness=name), session_dir=str(rt.session_dir),
            sandbox_session_dir=rt.sandbox_session_dir, is_root=rt.is_root,
        )  # fmt: skip
        cmd = adapter.prepare(ctx)
        assert cmd.argv[0] == adapter.binary
        env = {k: v for k, v in cmd.env.items() if k != "MSWEA_SILENT_STARTUP"}  # mini's banner is its version
        res = await rt.exec([*launch.argv, *adapter.version_args], env=env, timeout_s=120, log_path=Path(cmd.log_path))
    finally:
        await rt.stop()
    assert res.ok, f"{name}: exit {res.returncode}\n{res.stdout}\n{res.stderr}"
    assert VERSIONS[name] in adapter.version_of(res.stdout.strip() or res.stderr.strip())  # pi: on stderr


@pytest.mark.harness
async def test_pi_reaches_proxy_socket_from_network_less_sandbox(tmp_path: Path) -> None:
    """The real pi CLI in a `network = "none"` sandbox sends its request through the bound socket + forwarder."""
    if shutil.which("pi") is None:
        pytest.fail("pi not on PATH: install the harness CLIs (see this module's docstring)")
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        seen.append(head.split(b"\r\n", 1)[0])
        writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 2\r\nConnection: close\r\n\r\nno")
        await writer.drain()
        writer.close()

    sock = tmp_path / "proxy.sock"
    server = await asyncio.start_unix_server(handle, path=str(sock))
    rt = make_runtime(RuntimeSpec(backend="bwrap", network="none"), tmp_path / "s", proxy_socket=sock)
    await rt.start()
    try:
        ctx = HarnessContext(
            instruction="Say hello", base_url=rt.proxy_base_url("http://127.0.0.1:1"), api_key="k", model="policy",
            agent=AgentSpec(harness="pi"), session_dir=str(rt.session_dir),
            sandbox_session_dir=rt.sandbox_session_dir, is_root=rt.is_root,
        )  # fmt: skip
        cmd = get_adapter("pi").prepare(ctx)
        res = await rt.exec(cmd.argv, env=cmd.env, cwd=cmd.cwd, timeout_s=60, log_path=Path(cmd.log_path))
    finally:
        await rt.stop()
        server.close()
    assert not res.timed_out
    assert seen and seen[0] == b"POST /v1/chat/completions HTTP/1.1"
