"""Trajectory building and prompt construction costs along long agent sessions.

1. ``prefix_merging`` on a synthetic session whose prompts grow ~160 tokens a turn (200 turns ≈ 32k tokens),
   from 50 to 400 turns, in three shapes: one chain (continuation), one chain whose replies were re-rendered
   (canonical copies), and history rewritten every turn (a new chain per completion, the hashing path).
2. Prompt construction CPU per request along a 200-turn tool loop with the real Qwen3 template, continuation
   vs canonical mode (needs the ``qwen3-tokenizer`` asset: ``polar-hpc assets fetch``).

    python tools/bench/bench_builders.py [--turns 50,100,200,400] [--prompt-turns 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from polar_hpc.config.run import BuilderSpec
from polar_hpc.trajectory.registry import get_builder
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, CompletionRecord, ToolCall, ToolSpec

EOT = 2


def synthetic(turns: int, shape: str, seed: int = 0) -> list[CompletionRecord]:
    rng = np.random.default_rng(seed)
    prompt = rng.integers(10, 150_000, 400).astype(np.int32)
    records = []
    for i in range(turns):
        out = np.append(rng.integers(10, 150_000, 79), EOT).astype(np.int32)
        records.append(CompletionRecord(
            completion_id=f"c{i}", session_id="s#0", index=i, provider="openai_chat",
            canonical=CanonicalRequest(messages=[ChatMessage(role="user", content="x")]),
            prompt_ids=prompt, output_ids=out, output_logprobs=np.full(80, -0.5, dtype=np.float32),
            finish_reason="stop", response=ChatMessage(role="assistant", content="y")))
        copy = out if shape != "rerendered" else np.append(rng.integers(10, 150_000, 78), EOT).astype(np.int32)
        inter = np.append(rng.integers(10, 150_000, 79), EOT).astype(np.int32)
        head = prompt if shape != "rewritten" else np.concatenate([prompt[:200], prompt[201:], prompt[200:201]])
        prompt = np.concatenate([head, copy, inter])
    return records


def time_build(records: list[CompletionRecord], repeat: int) -> tuple[float, int]:
    builder = get_builder(BuilderSpec(name="prefix_merging"), end_of_turn_id=EOT)
    times = []
    chains = 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        traj = builder.build(records)
        times.append(time.perf_counter() - t0)
        chains = traj.stats.chains
    return min(times), chains


def bench_merging(turn_list: list[int], repeat: int) -> None:
    print(f"prefix_merging (best of {repeat})")
    print(f"{'turns':>6} {'last prompt':>12} {'tokens in':>10} | " + " | ".join(
        f"{s:>22}" for s in ("one chain", "re-rendered replies", "rewritten every turn")))
    base = None
    for turns in turn_list:
        row = []
        recs = {}
        for shape in ("continuation", "rerendered", "rewritten"):
            recs[shape] = synthetic(turns, shape)
            t, chains = time_build(recs[shape], repeat)
            row.append(f"{t * 1e3:8.2f} ms {chains:4d} ch")
            if shape == "continuation" and base is None:
                base = (t, turns)
        r = recs["continuation"]
        total = sum(x.prompt_ids.shape[0] + x.output_ids.shape[0] for x in r)
        print(f"{turns:6d} {r[-1].prompt_ids.shape[0]:12d} {total:10d} | " + " | ".join(f"{c:>22}" for c in row))
    print("(linear in tokens read means time ∝ 'tokens in', which grows ~quadratically with turns here)\n")


def bench_prompts(tokenizer_dir: str, turns: int, repeat: int) -> None:
    from polar_hpc.chat.template import ChatTemplate
    from polar_hpc.proxy.prompt import PromptBuilder

    tpl = ChatTemplate.from_model_dir(tokenizer_dir)
    tools = [ToolSpec(name="bash", description="Run a shell command",
                      parameters={"type": "object", "properties": {"cmd": {"type": "string"}}})]
    rng = np.random.default_rng(0)
    words = ["alpha", "beta", "gamma", "delta", "file", "src", "test", "def", "return", "import", "value"]

    def text(n: int) -> str:
        return " ".join(rng.choice(words, n))

    checkpoints = sorted({1, turns // 4, turns // 2, turns})
    results: dict[str, dict[int, tuple[float, int]]] = {}
    for mode in ("continuation", "canonical"):
        pb = PromptBuilder(tpl, mode)
        msgs = [ChatMessage(role="system", content="You are a coding agent. " + text(150)),
                ChatMessage(role="user", content="Fix the failing tests. " + text(50))]
        results[mode] = {}
        for turn in range(1, turns + 1):
            req = CanonicalRequest(messages=list(msgs), tools=tools)
            if turn in checkpoints:
                cpu = []
                for _ in range(repeat):
                    t0 = time.process_time()
                    build = pb.build(req)
                    cpu.append(time.process_time() - t0)
                results[mode][turn] = (statistics.median(cpu), len(build.ids))
            else:
                build = pb.build(req)
            reply = f"<think>\nstep {turn}: {text(20)}\n</think>\n\n{text(15)}"
            args = json.dumps({"cmd": f"ls src/{turn}"})
            call = ToolCall(id=f"c{turn}", name="bash", arguments=args)
            body = json.dumps({"name": "bash", "arguments": {"cmd": f"ls src/{turn}"}})
            out = tpl.encode(f"{reply}\n<tool_call>\n{body}\n</tool_call>") + [tpl.end_of_turn_id]
            resp = ChatMessage(role="assistant", content=text(15), reasoning_content=f"step {turn}",
                               tool_calls=[call])
            pb.observe(req, build.ids, out, "stop", resp)
            msgs.append(ChatMessage(role="assistant", content=resp.content, tool_calls=[call]))
            msgs.append(ChatMessage(role="tool", content=text(60), tool_call_id=call.id))
    print(f"prompt construction, CPU ms per request (median of {repeat}), Qwen3 template, {turns}-turn tool loop")
    print(f"{'turn':>6} {'prompt tokens':>14} | {'continuation':>13} | {'canonical':>10}")
    for turn in checkpoints:
        c, n = results["continuation"][turn]
        k, _ = results["canonical"][turn]
        print(f"{turn:6d} {n:14d} | {c * 1e3:10.2f} ms | {k * 1e3:7.2f} ms")
    c1, cn = results["continuation"][1][0], results["continuation"][turns][0]
    k1, kn = results["canonical"][1][0], results["canonical"][turns][0]
    print(f"turn {turns} / turn 1: continuation {cn / c1:.2f}x, canonical {kn / k1:.2f}x; "
          f"canonical / continuation at turn {turns}: {kn / cn:.1f}x\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", default="50,100,200,400")
    ap.add_argument("--prompt-turns", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tokenizer", default=None, help="tokenizer dir (default: the qwen3-tokenizer asset)")
    args = ap.parse_args()
    bench_merging([int(t) for t in args.turns.split(",")], args.repeat)
    tok = args.tokenizer
    if tok is None:
        from polar_hpc.assets import asset_path

        tok = str(asset_path("qwen3-tokenizer"))
    bench_prompts(tok, args.prompt_turns, args.repeat)


if __name__ == "__main__":
    main()
