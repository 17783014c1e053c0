"""docs/outputs.md's Python blocks, run as written on an export of a recorded SDK run (the only substitutions:
where the run, the export and the model live)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from polar_hpc.cli.entry import main

pytestmark = pytest.mark.slow
OUTPUTS = Path(__file__).resolve().parents[3] / "docs" / "outputs.md"


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", OUTPUTS.read_text(), re.S)


async def test_readme_loading_lines_work(sdk_run: Path, tmp_path: Path, tiny_qwen3_dir: Path) -> None:
    blocks = _blocks()
    assert len(blocks) == 3
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        assert main(["export", "sft", str(sdk_run), "--out", "sft", "--format", "parquet"]) == 0
        scope: dict[str, object] = {}
        for code in blocks:
            code = code.replace('"runs/demo"', repr(str(sdk_run))).replace('"path/to/model"', repr(str(tiny_qwen3_dir)))
            exec(compile(code, str(OUTPUTS), "exec"), scope)
    finally:
        os.chdir(cwd)
    assert "<tool_call>" in scope["text"]  # type: ignore[operator]
    assert scope["trainer"].train_dataset.num_rows == scope["chat"]["train"].num_rows  # type: ignore[attr-defined]
    assert len(scope["saved"]) == 2  # type: ignore[arg-type]  # two DataLoader workers, a cursor each
    assert int((scope["labels"] != -100).sum()) > 0  # type: ignore[operator]
