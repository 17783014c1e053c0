"""``host_python``: the interpreter and the polar_hpc package are visible read-only, the checkout around it not."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import pytest

import polar_hpc
from polar_hpc.config.run import RuntimeSpec
from polar_hpc.runtime import make_runtime
from polar_hpc.runtime.bwrap import bwrap_argv
from polar_hpc.runtime.common import SANDBOX_POLAR_ROOT, host_python_binds

PACKAGE = Path(polar_hpc.__file__).resolve().parent


def test_binds_the_package_itself_at_a_fixed_path() -> None:
    binds = host_python_binds()
    assert (str(PACKAGE), "/opt/polar-hpc/polar_hpc") in binds
    assert all(src != str(PACKAGE.parent) for src, _ in binds)
    argv = bwrap_argv(RuntimeSpec(host_python=True), session_dir=Path("/s"), tmp_dir=Path("/t"), cmd=["true"],
                      cwd="/", root=[])
    i = argv.index(str(PACKAGE))
    assert argv[i - 1 : i + 2] == ["--ro-bind", str(PACKAGE), f"{SANDBOX_POLAR_ROOT}/polar_hpc"]
    assert str(PACKAGE.parent) not in argv


@pytest.mark.usefixtures("need_bwrap")
async def test_checkout_next_to_the_package_is_not_visible(tmp_path: Path) -> None:
    checkout = PACKAGE.parent
    if str(checkout).startswith((sys.prefix, sys.base_prefix)):
        pytest.skip("polar_hpc is installed inside the interpreter prefix, not from a checkout")
    secret = checkout / f".polar-test-secret-{uuid.uuid4().hex[:8]}"  # stands in for ./runs/*/secrets
    secret.write_text("sk-other-run")
    rt = make_runtime(RuntimeSpec(backend="bwrap", host_python=True), tmp_path / "s")
    try:
        await rt.start()
        res = await rt.exec(
            f"test -e {secret} && echo SEEN; cat {secret} 2>/dev/null; "
            "python -c 'import polar_hpc, os; print(polar_hpc.__file__); print(os.environ[\"PYTHONPATH\"])'"
        )
    finally:
        secret.unlink()
        await rt.stop()
    assert res.ok, res.stderr
    assert "SEEN" not in res.stdout and "sk-other-run" not in res.stdout
    assert res.stdout.split()[-2:] == ["/opt/polar-hpc/polar_hpc/__init__.py", "/opt/polar-hpc"]
