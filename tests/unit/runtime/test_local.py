from __future__ import annotations

from pathlib import Path

import msgspec
import pytest

from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime import BACKENDS, SandboxStateError, make_runtime


async def test_local_runs_in_session_dir_and_maps_polar_paths(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    rt = make_runtime(RuntimeSpec(backend="local", env={"X": "1"}), tmp_path / "s")
    assert rt.sandbox_session_dir == str((tmp_path / "s").resolve())
    with pytest.raises(SandboxStateError, match="exec\\(\\) when new"):
        await rt.exec("true")
    await rt.start()
    res = await rt.exec("pwd; echo $HOME $X $Y", env={"Y": "2"}, cwd="/polar/session/sub")
    root = rt.sandbox_session_dir
    assert res.stdout == f"{root}/sub\n{root}/home 1 2\n"
    await rt.upload(Path(__file__), "/polar/session/copy.py")
    assert (tmp_path / "s" / "copy.py").read_text() == Path(__file__).read_text()
    await rt.stop()
    await rt.stop()


def test_unknown_backend_is_a_clear_error(tmp_path: Path) -> None:
    spec = RuntimeSpec(backend="local")
    msgspec.structs.force_setattr(spec, "backend", "lxc")
    with pytest.raises(ValueError, match=f"expected one of {', '.join(BACKENDS)}, got 'lxc'"):
        make_runtime(spec, tmp_path)
