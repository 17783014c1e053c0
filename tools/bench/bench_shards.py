"""Shard store throughput, side by side with the disk in the same run.

1. Write: a stream of realistic agent sessions (prompt 8k-32k tokens, 50 turns of 50-2k response tokens plus
   tool output, chat messages) through ``ShardWriter`` into several shards (encode, compress, write, fsync,
   rename; each full shard is published by the writer's thread while the next one is encoded), until the
   last one is durable; then the same file bytes written with plain ``write`` + ``fsync``. Ratio = shard
   MB/s / plain MB/s (target >= 50%), best round of each (the machine may be shared; the ratio of medians is
   printed too). The last shard's write is not overlapped: the fewer shards, the lower the ratio.
2. Read: ``ShardReader.traces()`` over those shards into numpy views (target >= 100M tokens/s), and
   ``results()`` (full SessionResults with messages) for reference.
3. Resume: ``resume_index`` over many shards of small synthetic sessions (default 1,000 x 1,000;
   target <= 10 s), with the page cache warm and after evicting the files (posix_fadvise DONTNEED).

    python tools/bench/bench_shards.py [--sessions 192] [--shard-sessions 32] [--rounds 5] [--turns 50]
        [--resume-shards 1000] [--resume-sessions 1000] [--dir DIR] [--skip-resume]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import h5py
import msgspec
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from polar_hpc.config.run import ShardConfig  # noqa: E402
from polar_hpc.store.encode import encode_session  # noqa: E402
from polar_hpc.store.reader import ShardReader  # noqa: E402
from polar_hpc.store.resume import resume_index  # noqa: E402
from polar_hpc.store.schema import TOKEN_COLUMNS  # noqa: E402
from polar_hpc.store.writer import ShardWriter, shard_name, write_shard  # noqa: E402
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import Trace, TraceStatus, Trajectory
from tests.fixtures.trajectories import make_session_result  # noqa: E402


def span(text: str) -> tuple[int, int]:
    lo, _, hi = text.partition(":")
    return int(lo), int(hi or lo)


def row(name: str, value: str, note: str = "") -> None:
    print(f"  {name:<34} {value:>16}  {note}")


def plain_write(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def bench_write_read(args: argparse.Namespace, root: Path) -> None:
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    sessions = [
        make_session_result(
            rng,
            task_id=f"task-{i}",
            sample_index=0,
            traces=args.traces,
            turns=args.turns,
            prompt_tokens=span(args.prompt),
            response_tokens=span(args.response),
            tool_tokens=span(args.tool),
        )
        for i in range(args.sessions)
    ]
    traces = [t for s in sessions for t in s.trajectory.traces]
    tokens = sum(t.prompt_ids.shape[0] + t.response_ids.shape[0] for t in traces)
    token_bytes = sum(t.prompt_ids.nbytes + t.response_ids.nbytes * 9 // 4 for t in traces)
    print(
        f"write: {len(sessions)} sessions, {len(traces)} traces, {tokens / 1e6:.1f}M tokens "
        f"({token_bytes / 1e6:.0f} MB of token arrays), generated in {time.perf_counter() - t0:.1f}s"
    )
    cfg = ShardConfig(max_sessions=args.shard_sessions, max_bytes=1 << 40, max_age_s=1e9)
    shard_s, tail_s, plain_s, shard_cpu, file_bytes = [], [], [], [], 0
    shard_dir = root / "write"
    for rnd in range(args.rounds):
        d = shard_dir / f"round{rnd}"
        w = ShardWriter(d, 0, cfg, {"bench": "write"})
        cpu0 = time.process_time()
        t0 = time.perf_counter()
        for s in sessions:
            w.add(s)  # JSON here; zstd and the publish of each full shard run in the writer's threads
        t1 = time.perf_counter()
        w.close()  # commit the last shard, wait until every shard is durable
        t2 = time.perf_counter()
        shard_s.append(t2 - t0)
        tail_s.append(t2 - t1)
        shard_cpu.append(time.process_time() - cpu0)
        files = sorted(d.glob("*.h5"))
        blobs = [p.read_bytes() for p in files]
        file_bytes = sum(len(b) for b in blobs)
        plain = root / "plain"
        plain.mkdir(exist_ok=True)
        t0 = time.perf_counter()
        for i, b in enumerate(blobs):
            plain_write(plain / f"{i}.bin", b)
        plain_s.append(time.perf_counter() - t0)
        for p in plain.iterdir():
            p.unlink()
        if rnd != args.rounds - 1:
            for p in files:
                p.unlink()
    ts, tp = min(shard_s), min(plain_s)
    row("shard file bytes", f"{file_bytes / 1e6:.0f} MB", f"{len(files)} shards")
    row(
        "shard write (best round)",
        f"{file_bytes / ts / 1e6:.0f} MB/s",
        f"{len(traces) / ts:.0f} traces/s, {tokens / ts / 1e6:.1f}M tokens/s, "
        f"{token_bytes / ts / 1e6:.0f} MB/s of token arrays",
    )
    row("plain write+fsync (best round)", f"{file_bytes / tp / 1e6:.0f} MB/s", "same bytes, same run")
    med = statistics.median(plain_s) / statistics.median(shard_s)
    row("ratio shard/plain", f"{tp / ts:.0%}", f"target >= 50% (ratio of medians {med:.0%})")
    best = shard_s.index(ts)
    row(
        "  of which waiting in the last commit",
        f"{tail_s[best] * 1e3:.0f} ms",
        f"{tail_s[best] / ts:.0%} of the round: the last shard's write+fsync (the others overlap the adds)",
    )
    row(
        "  CPU of the best shard round",
        f"{shard_cpu[best] * 1e3:.0f} ms",
        f"all threads; {shard_cpu[best] / ts:.2f} cores busy on average",
    )
    print(
        f"  rounds: shard {', '.join(f'{x:.2f}s' for x in shard_s)}; plain {', '.join(f'{x:.2f}s' for x in plain_s)}"
    )

    last = shard_dir / f"round{args.rounds - 1}"

    def read_tokens(blobs: bool) -> float:
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            views = ShardReader(last).traces(blobs=blobs)
            n = sum(t.prompt_ids.shape[0] + t.response_ids.shape[0] for t in views)
            best = min(best, time.perf_counter() - t0)
            assert n == tokens, (n, tokens)
        return best

    def read_plain() -> float:
        # The same token-column bytes read with plain preadv into fresh numpy buffers.
        spans = []
        for p in sorted(last.glob("*.h5")):
            with h5py.File(p, "r") as f:
                spans += [(p, ds.id.get_offset(), ds.id.get_storage_size())
                          for ds in (f[c.path] for c in TOKEN_COLUMNS)
                          if ds.id.get_offset() is not None]  # a column with no data is not allocated
        best = float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            for p, off, size in spans:
                fd = os.open(p, os.O_RDONLY)
                try:
                    os.preadv(fd, [bytearray(size)], off)
                finally:
                    os.close(fd)
            best = min(best, time.perf_counter() - t0)
        return best

    t_tok, t_blob, t_plain = read_tokens(False), read_tokens(True), read_plain()
    t0 = time.perf_counter()
    n_results = sum(1 for _ in ShardReader(last).results())
    tres = time.perf_counter() - t0
    print("read (page cache warm, best of 3):")
    row("traces(blobs=False) into numpy", f"{tokens / t_tok / 1e6:.0f}M tok/s", "target >= 100M tokens/s")
    row(
        "plain preadv, same token bytes",
        f"{tokens / t_plain / 1e6:.0f}M tok/s",
        f"reader at {t_plain / t_tok:.0%} of it",
    )
    row("traces() incl. message blobs", f"{tokens / t_blob / 1e6:.0f}M tok/s", "blobs read, not decoded")
    row(
        "results(): full SessionResults",
        f"{n_results / tres:.0f} sess/s",
        f"{tokens / tres / 1e6:.0f}M tokens/s, messages decoded",
    )


def tiny_session() -> SessionResult:
    trace = Trace(
        prompt_ids=np.arange(8, dtype=np.int32),
        response_ids=np.arange(4, dtype=np.int32),
        loss_mask=np.ones(4, dtype=np.uint8),
        response_logprobs=np.full(4, -0.5, dtype=np.float32),
    )
    return SessionResult(
        task_id="t", sample_index=0, trajectory=Trajectory(status=TraceStatus.COMPLETED, traces=[trace])
    )


def evict(paths: list[Path]) -> bool:
    if not hasattr(os, "posix_fadvise"):
        return False
    os.sync()
    for p in paths:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return True


def bench_resume(args: argparse.Namespace, root: Path) -> None:
    d = root / "resume"
    d.mkdir()
    template = encode_session(tiny_session())
    t0 = time.perf_counter()
    for s in range(args.resume_shards):
        batch = []
        for i in range(args.resume_sessions):
            r = msgspec.structs.replace(template.result, task_id=f"task-{s:05d}-{i:06d}", sample_index=i % 8)
            batch.append(msgspec.structs.replace(template, result=r))
        write_shard(d / shard_name(0, s), batch, producer={"bench": "resume"}, rank=0, seq=s, fsync=False)
    build = time.perf_counter() - t0
    files = sorted(d.glob("*.h5"))
    total = args.resume_shards * args.resume_sessions
    size = sum(p.stat().st_size for p in files)
    print(
        f"resume: {len(files)} shards, {total} sessions, {size / 1e6:.0f} MB (built in {build:.1f}s, no fsync)"
    )
    t0 = time.perf_counter()
    idx = resume_index(d)
    warm = time.perf_counter() - t0
    assert len(idx.keys) == total and not idx.problems, (len(idx.keys), idx.problems[:3])
    row("resume_index, page cache warm", f"{warm:.2f} s", f"{total / warm / 1e6:.2f}M keys/s; target <= 10 s")
    if evict(files):
        t0 = time.perf_counter()
        idx = resume_index(d)
        cold = time.perf_counter() - t0
        assert len(idx.keys) == total
        row("resume_index, files evicted", f"{cold:.2f} s", "posix_fadvise(DONTNEED) after sync")
    t0 = time.perf_counter()
    reader = ShardReader(d)
    assert not reader.duplicates
    row("ShardReader session-table scan", f"{time.perf_counter() - t0:.2f} s", "all session columns, dedupe")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sessions", type=int, default=192)
    p.add_argument("--shard-sessions", type=int, default=32, help="sessions per shard (rotation)")
    p.add_argument("--traces", type=int, default=1, help="traces per session (prefix merging: few)")
    p.add_argument("--turns", type=int, default=50)
    p.add_argument("--prompt", default="8000:32000", help="prompt tokens per trace, LO:HI")
    p.add_argument("--response", default="50:2000", help="model tokens per turn, LO:HI")
    p.add_argument("--tool", default="20:400", help="tool-output tokens per turn (mask 0), LO:HI")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--resume-shards", type=int, default=1000)
    p.add_argument("--resume-sessions", type=int, default=1000, help="sessions per resume shard")
    p.add_argument("--skip-resume", action="store_true")
    p.add_argument("--dir", type=Path, default=None, help="work directory (default: a temp dir, removed)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-shards-") as tmp:
        root = Path(tmp)
        print(f"work dir {root} ({os.cpu_count()} cpus)")
        t0 = time.perf_counter()
        bench_write_read(args, root)
        if not args.skip_resume:
            bench_resume(args, root)
        print(f"total {time.perf_counter() - t0:.0f}s")


if __name__ == "__main__":
    main()
