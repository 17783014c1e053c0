"""Each invariant violation planted with h5py is caught and named (file, session, trace)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from polar_hpc.cli.entry import main
from polar_hpc.config.run import ShardConfig
from polar_hpc.store import schema as S
from polar_hpc.store.schema import offsets_name
from polar_hpc.store.validate import validate_paths
from polar_hpc.store.writer import ShardWriter


@pytest.fixture
def good_shard(
    tmp_path_factory: pytest.TempPathFactory, session_result_factory: Any
) -> tuple[Path, list[str]]:
    d = tmp_path_factory.mktemp("good")
    w = ShardWriter(d, 0, ShardConfig(), {"test": "validate"})
    rs = [session_result_factory(traces=2, turns=3) for _ in range(3)]
    for r in rs:
        w.add(r)
    path = w.close()
    assert path is not None
    return path, [r.key for r in rs]


def _replace(f: h5py.File, name: str, data: np.ndarray) -> None:
    del f[name]
    f.create_dataset(name, data=data)


def _set(name: str, index: Callable[[h5py.File], int], value: Any) -> Callable[[h5py.File], None]:
    def plant(f: h5py.File) -> None:
        arr = f[name][()]
        arr[index(f)] = value
        _replace(f, name, arr)

    return plant


def _resp(f: h5py.File, trace: int, token: int) -> int:
    return int(f[S.RESPONSE_OFFSETS][trace]) + token


def _shorten(name: str) -> Callable[[h5py.File], None]:
    return lambda f: _replace(f, name, f[name][()][:-1])


def _corrupt_blob(f: h5py.File) -> None:
    data = f[S.TRACE_BLOB][()]
    start = int(f[offsets_name(S.TRACE_BLOB)][3])
    data[start : start + 4] = 0
    _replace(f, S.TRACE_BLOB, data)


def _set_filter(f: h5py.File, trace: int, text: str) -> None:
    name = offsets_name(S.FILTER)
    items = [bytes(f[S.FILTER][a:b]) for a, b in zip(f[name][:-1], f[name][1:], strict=True)]
    items[trace] = text.encode()
    _replace(f, S.FILTER, np.frombuffer(b"".join(items), dtype=np.uint8))
    _replace(f, name, np.concatenate([[0], np.cumsum([len(i) for i in items])]).astype(np.int64))


# (planted fault, expected text; {s1} is session 1's key; trace 3 of the file is session 1 trace 1)
CASES: dict[str, tuple[Callable[[h5py.File], None], str]] = {
    "mask_not_binary": (
        _set(S.LOSS_MASK, lambda f: _resp(f, 3, 5), 2),
        "session {s1!r} trace 1: loss_mask value not 0/1 at token 5",
    ),
    "mask1_nan_logprob": (
        _set(S.RESPONSE_LOGPROBS, lambda f: _resp(f, 3, 0), np.nan),
        "session {s1!r} trace 1: loss_mask 1 without a finite logprob at token 0",
    ),
    "mask1_inf_logprob": (
        _set(S.RESPONSE_LOGPROBS, lambda f: _resp(f, 3, 1), -np.inf),
        "session {s1!r} trace 1: loss_mask 1 without a finite logprob at token 1",
    ),
    "negative_token": (
        _set(S.PROMPT_IDS, lambda f: int(f[S.PROMPT_OFFSETS][3]) + 2, -7),
        "session {s1!r} trace 1: negative prompt token id at token 2",
    ),
    "logprobs_not_aligned": (
        _shorten(S.RESPONSE_LOGPROBS),
        f"{S.RESPONSE_LOGPROBS}: expected",
    ),
    "offsets_end_wrong": (
        _set(S.RESPONSE_OFFSETS, lambda f: -1, 3),
        f"{S.RESPONSE_OFFSETS}: ends at 3",
    ),
    "offsets_decrease": (
        _set(S.PROMPT_OFFSETS, lambda f: 2, 1),
        f"{S.PROMPT_OFFSETS}: decreases at row",
    ),
    "trace_session_row": (
        _set(S.TRACE_SESSION, lambda f: 3, 0),
        "session {s1!r} trace 1: " + S.TRACE_SESSION + " is 0, session ranges say 1",
    ),
    "key_mismatch": (
        _set(S.SAMPLE_INDEX, lambda f: 1, 99),
        "session {s1!r}: key does not match task_id/sample_index",
    ),
    "bad_status": (
        _set(S.STATUS, lambda f: 1, 9),
        "session {s1!r}: status 9 not in [0, 1, 2]",
    ),
    "corrupt_blob": (_corrupt_blob, "session {s1!r} trace 1: trace blob does not decode"),
    "wrong_dtype": (
        lambda f: _replace(f, S.LOSS_MASK, f[S.LOSS_MASK][()].astype(np.float32)),
        f"{S.LOSS_MASK}: expected 1-D uint8, found float32",
    ),
    "trainable_not_binary": (
        _set(S.TRAINABLE, lambda f: 3, 2),
        "session {s1!r} trace 1: " + S.TRAINABLE + " is 2, expected 0 or 1",
    ),
    "reasons_but_trainable": (
        lambda f: _set_filter(f, 3, "session_timeout"),
        "session {s1!r} trace 1: " + S.TRAINABLE + " is 1 but " + S.FILTER + " gives reasons 'session_timeout'",
    ),
    "filter_malformed": (
        lambda f: _set_filter(f, 3, "a,,b"),
        "session {s1!r} trace 1: " + S.FILTER + " 'a,,b': expected reasons joined by ','",
    ),
    "wrong_schema": (
        lambda f: f.attrs.__setitem__("schema", "something-else"),
        "attribute schema: expected 'polar-hpc-shard'",
    ),
}


def test_good_shard_validates(good_shard: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = good_shard
    assert validate_paths(path) == (1, [])
    assert main(["shards", "validate", str(path.parent)]) == 0
    assert "1 shards checked, 0 with violations" in capsys.readouterr().out


@pytest.mark.parametrize("case", sorted(CASES))
def test_planted_violation_is_caught(
    case: str, good_shard: tuple[Path, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src, keys = good_shard
    bad = tmp_path / src.name
    shutil.copy(src, bad)
    plant, expected = CASES[case]
    with h5py.File(bad, "r+") as f:
        plant(f)
    assert main(["shards", "validate", str(src), str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}: " in out or f"{bad} session" in out
    assert expected.format(s1=keys[1]) in out, out
    assert str(src) not in out.replace(str(bad), "")
