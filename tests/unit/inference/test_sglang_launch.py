"""``polar_hpc.inference.sglang_launch`` keeps the API key off command lines.

SGLang cannot run on this machine (no GPU), so a stand-in ``sglang/launch_server.py`` on ``PYTHONPATH`` (a fake
at the process boundary) records what SGLang's module would see: its argv, its /proc cmdline, its environment.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from polar_hpc.wire.security import API_KEY_ENV

REPO = Path(__file__).resolve().parents[3]

STAND_IN = """
import json, os, sys
if __name__ == "__main__":
    out = sys.argv[sys.argv.index("--record") + 1]
    with open("/proc/self/cmdline", "rb") as f:
        cmdline = f.read().decode()
    with open(out, "w") as f:
        json.dump({"argv": sys.argv, "cmdline": cmdline, "env": sorted(os.environ)}, f)
"""


def _run(tmp_path: Path, *args: str, key: str | None) -> subprocess.CompletedProcess[str]:
    pkg = tmp_path / "fake" / "sglang"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(STAND_IN)
    env = {k: v for k, v in os.environ.items() if k != API_KEY_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "fake"), str(REPO)])
    if key is not None:
        env[API_KEY_ENV] = key
    return subprocess.run(
        [sys.executable, "-m", "polar_hpc.inference.sglang_launch", *args],
        env=env, capture_output=True, text=True, timeout=60,
    )


def test_key_reaches_sglang_argv_but_no_command_line_or_child_env(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    proc = _run(tmp_path, "--model-path", "/m", "--port", "1", "--record", str(out), key="run-token-123")
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(out.read_text())
    assert seen["argv"][1:] == ["--model-path", "/m", "--port", "1", "--record", str(out), "--api-key", "run-token-123"]
    assert "run-token-123" not in seen["cmdline"]
    assert API_KEY_ENV not in seen["env"]


def test_without_a_key_the_arguments_pass_unchanged(tmp_path: Path) -> None:
    out = tmp_path / "seen.json"
    proc = _run(tmp_path, "--model-path", "/m", "--record", str(out), key=None)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["argv"][1:] == ["--model-path", "/m", "--record", str(out)]


def test_a_key_on_the_command_line_is_refused(tmp_path: Path) -> None:
    proc = _run(tmp_path, "--model-path", "/m", "--api-key", "visible", key=None)
    assert proc.returncode == 1
    assert API_KEY_ENV in proc.stderr and "not as --api-key" in proc.stderr
