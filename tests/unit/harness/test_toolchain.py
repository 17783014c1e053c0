"""Where a harness CLI and its Node are found (``resolve_harness``), on a prefix laid out like the installer's."""

from __future__ import annotations

from pathlib import Path

import pytest

from polar_hpc.harness import HarnessError
from polar_hpc.harness.toolchain import prefix_node, resolve_harness, venv_dir


def _script(prefix: Path, name: str, head: bytes) -> Path:
    pkg = prefix / "npm" / "lib" / "node_modules" / name / "cli.js"
    pkg.parent.mkdir(parents=True)
    pkg.write_bytes(head + b"\n")
    (prefix / "npm" / "bin").mkdir(parents=True, exist_ok=True)
    (prefix / "npm" / "bin" / name).symlink_to(pkg)
    return pkg


def test_a_js_cli_in_the_prefix_runs_under_the_prefix_node(tmp_path: Path) -> None:
    script = _script(tmp_path, "qwen", b"#!/usr/bin/env node")
    node = prefix_node(tmp_path)
    node.parent.mkdir(parents=True)
    node.write_bytes(b"\x7fELF")
    launch = resolve_harness("qwen", tmp_path)
    assert launch.argv == [str(node), str(script)] and launch.binds == [str(tmp_path)]


def test_a_native_cli_in_the_prefix_runs_as_itself(tmp_path: Path) -> None:
    script = _script(tmp_path, "claude", b"\x7fELF")
    assert resolve_harness("claude", tmp_path).argv == [str(script)]


def test_a_js_cli_without_its_node_is_a_clear_error(tmp_path: Path) -> None:
    _script(tmp_path, "qwen", b"#!/usr/bin/env node")
    with pytest.raises(HarnessError, match="needs Node 22, expected at .*install_harnesses.sh"):
        resolve_harness("qwen", tmp_path)


def test_outside_the_prefix_the_cli_on_path_is_used(tmp_path: Path) -> None:
    assert resolve_harness("sh", tmp_path).argv == ["sh"]
    with pytest.raises(HarnessError, match="`no-such-cli`: not in .* nor on PATH"):
        resolve_harness("no-such-cli", tmp_path)


def test_a_python_cli_runs_from_its_venv_with_the_interpreter_it_links_to_bound(tmp_path: Path) -> None:
    venv = venv_dir(tmp_path)
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "mini").write_text("#!/x/python\n")
    (venv / "pyvenv.cfg").write_text("home = /opt/pyenv/versions/3.11.7/bin\ninclude-system-site-packages = false\n")
    launch = resolve_harness("mini", tmp_path)
    assert launch.argv == [str(venv / "bin" / "mini")]
    assert launch.binds == [str(tmp_path), "/opt/pyenv/versions/3.11.7"]
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")  # the system's Python: already in the sandbox
    assert resolve_harness("mini", tmp_path).binds == [str(tmp_path)]


def test_a_python_cli_in_a_venv_of_another_python_is_found(tmp_path: Path) -> None:
    """OpenHands needs Python 3.12: its venv ``pip-py3.12`` sits beside the installer's ``pip``."""
    (venv_dir(tmp_path) / "bin").mkdir(parents=True)
    (venv_dir(tmp_path) / "bin" / "mini").write_text("#!/x/python\n")
    venv = venv_dir(tmp_path, python="3.12")
    assert venv == tmp_path / "pip-py3.12"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "openhands").write_text("#!/x/python\n")
    (venv / "pyvenv.cfg").write_text("home = /opt/pyenv/versions/3.12.1/bin\n")
    launch = resolve_harness("openhands", tmp_path)
    assert launch.argv == [str(venv / "bin" / "openhands")]
    assert launch.binds == [str(tmp_path), "/opt/pyenv/versions/3.12.1"]
    assert resolve_harness("mini", tmp_path).argv == [str(venv_dir(tmp_path) / "bin" / "mini")]
    with pytest.raises(HarnessError, match=f"not in .*, {tmp_path}/pip\\*/bin \\(the Python CLIs\\) nor on PATH"):
        resolve_harness("no-such-cli", tmp_path)
