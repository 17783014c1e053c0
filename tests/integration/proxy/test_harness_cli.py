"""Real harness CLIs from npm (pi in its four wire formats, Codex) through the standalone proxy
(``polar-hpc proxy --oracle``) in front of the reference server: the oracle writes a small solution as the
model's tool calls, so each run is a real multi-turn session in that wire format (look, apply, verify, answer)
that must exit 0, leave the file the solution writes, and a complete session record (JSONL). No phone-home:
settings from fixtures.md §3.2.

Install: ``bash tools/install_harnesses.sh`` (the pins: ``polar_hpc/harness/pins.py``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from polar_hpc.harness.pins import pin
from polar_hpc.wire import codec
from polar_hpc.wire.calls import CompletionRecord

pytestmark = [pytest.mark.harness, pytest.mark.slow]
RUN_TIMEOUT_S = 240
KEYS = ["pi-chat", "pi-resp", "pi-anth", "pi-gem", "codex"]
SCRIPT = {"solution_commands": ["printf 'solved\\n' > SOLVED.txt"], "verify": "cat SOLVED.txt"}
PROMPT = "Create SOLVED.txt saying solved."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def need(binary: str) -> str:
    path = shutil.which(binary)
    if path is None:
        specs = " ".join(pin(h).spec for h in ("pi", "codex"))
        pytest.fail(f"{binary} is not installed; run: npm install -g {specs}", pytrace=False)
    return path


class Proxy:
    def __init__(self, base: str, records: Path, proc: subprocess.Popen[bytes]) -> None:
        self.base, self.records, self.proc = base, records, proc

    def records_of(self, key: str) -> list[CompletionRecord]:
        path = self.records / f"{key}.jsonl"
        if not path.exists():
            return []
        return [codec.from_json(line, CompletionRecord) for line in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def proxy(reference_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    work = tmp_path_factory.mktemp("harness-proxy")
    (work / "oracle.json").write_text(json.dumps(SCRIPT))
    port = free_port()
    cmd = [sys.executable, "-m", "polar_hpc", "proxy", "--engine", reference_server.url,
           "--model", reference_server.model_dir, "--port", str(port), "--records", str(work / "records"),
           "--max-new-tokens", "24", "--context-length", "32768", "--render", "continuation",
           "--oracle", str(work / "oracle.json")]
    for k in KEYS:
        cmd += ["--session-key", k]
    log = open(work / "proxy.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/health", timeout=2).read()
            break
        except OSError as err:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"proxy did not come up at {base} ({err}); log: {(work / 'proxy.log').read_text()[-2000:]}")
            time.sleep(0.2)
    try:
        yield Proxy(base, work / "records", proc)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    full = {"PATH": os.environ["PATH"], "LANG": "C.UTF-8", **env}
    try:
        return subprocess.run(argv, env=full, cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as err:
        pytest.fail(f"{argv[0]} did not finish in {RUN_TIMEOUT_S}s: {err.stdout!r} {err.stderr!r}")


def git_repo(path: Path) -> Path:
    path.mkdir()
    subprocess.run("git init -q . && git -c user.email=t@polar -c user.name=t commit -q --allow-empty -m base",
                   shell=True, cwd=path, check=True)
    return path


def check_session(proxy: Proxy, key: str, provider: str, out: subprocess.CompletedProcess[str], work: Path) -> None:
    recs = proxy.records_of(key)
    why = f"exit {out.returncode}\nstdout: {out.stdout[-2000:]}\nstderr: {out.stderr[-2000:]}"
    assert len(recs) >= 4, f"{len(recs)} records for {key}; {why}"
    assert [r.index for r in recs] == list(range(len(recs)))
    for r in recs:
        assert r.provider == provider and r.session_id == key
        assert len(r.prompt_ids) > 50 and len(r.output_ids) == len(r.output_logprobs) > 0
        assert r.finish_reason == "stop" and r.policy == "oracle" and r.parse_error is None
        assert r.canonical.stream
    assert [len(r.response.tool_calls) > 0 for r in recs[-4:]] == [True, True, True, False], why
    assert (work / "SOLVED.txt").read_text() == "solved\n", why


PI_FORMATS = [("pi-chat", "openai-completions", "/v1", "openai_chat"),
              ("pi-resp", "openai-responses", "/v1", "openai_responses"),
              ("pi-anth", "anthropic-messages", "", "anthropic"),
              ("pi-gem", "google-generative-ai", "/v1beta", "google")]


@pytest.mark.parametrize("key,api,suffix,provider", PI_FORMATS, ids=[p[1] for p in PI_FORMATS])
def test_pi(proxy: Proxy, tmp_path: Path, key: str, api: str, suffix: str, provider: str) -> None:
    pi = need("pi")
    agent_dir = tmp_path / "pi"
    agent_dir.mkdir()
    prov: dict[str, Any] = {"baseUrl": proxy.base + suffix, "api": api, "apiKey": "POLAR_KEY",
                            "models": [{"id": "policy"}]}
    if api == "openai-completions":
        prov["compat"] = {"supportsDeveloperRole": False, "supportsReasoningEffort": False}
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"polar": prov}}))
    env = {"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": str(agent_dir), "PI_OFFLINE": "1", "POLAR_KEY": key}
    work = git_repo(tmp_path / "work")
    out = run([pi, "-p", "--provider", "polar", "--model", "policy", PROMPT], env, work)
    assert out.returncode == 0, f"pi exited {out.returncode}: {out.stderr[-2000:]}"
    check_session(proxy, key, provider, out, work)


def test_codex(proxy: Proxy, tmp_path: Path) -> None:
    codex = need("codex")
    home = tmp_path / "codexhome"
    home.mkdir()
    (home / "config.toml").write_text(
        'model = "policy"\nmodel_provider = "polar"\napproval_policy = "never"\nsandbox_mode = "danger-full-access"\n'
        "check_for_update_on_startup = false\n[model_providers.polar]\nname = \"Polar\"\n"
        f'base_url = "{proxy.base}/v1"\nenv_key = "POLAR_KEY"\nwire_api = "responses"\n[analytics]\nenabled = false\n'
    )
    work = git_repo(tmp_path / "work")
    env = {"HOME": str(tmp_path), "CODEX_HOME": str(home), "POLAR_KEY": "codex"}
    out = run([codex, "exec", "--skip-git-repo-check", "--disable", "plugins", PROMPT], env, work)
    assert out.returncode == 0, f"codex exited {out.returncode}: {out.stderr[-3000:]}"
    check_session(proxy, "codex", "openai_responses", out, work)
