"""Encoding a new piece of ASCII text: ``tokenizers``' ``Tokenizer.encode`` (old) vs the word fast path
(:class:`polar_hpc.chat.pretokenize.WordEncoder`, new), side by side in one run, cold and hot.

Cold: each call after a 20 ms idle (``--pause-ms``), the CPU caches the host's by then, as for a proxy between
two requests; hot: the next call at once (another new piece). Each call encodes a piece not encoded before (a new
number, another slice of the text), after the added-token cut ``ChatTemplate.encode`` runs first. Pieces:

  prompt   "user\\nWrite a long story about the number N." (45 characters; its words seen before);
  prose    slices of the ASCII lines of the README and docs/ (words mostly seen);
  code     slices of the ASCII lines of polar_hpc/inference/*.py (words mostly seen);
  fresh    random lowercase words, none seen before (every word goes to the BPE model: the fast path's worst case);

and the ``ChatTemplate.encode`` of a rendered conversation whose last user message is new ("render"), with the
fast path off and on. Figures are p50 µs over ``--reps`` calls; the ratio is new/old. The fast path's
length limit (``template.WORD_PATH_CHARS``) comes from these figures: where a ratio, hot or cold, nears 1.

    python tools/bench/bench_pretokenize.py [--reps 40] [--lengths 45,128,512,2048,8192] [--model tiny-qwen3]
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import string
import time
from collections.abc import Callable
from pathlib import Path

from common import load_average

from polar_hpc.assets import asset_path
from polar_hpc.chat.pretokenize import WordEncoder
from polar_hpc.chat.template import ChatTemplate

ROOT = Path(__file__).resolve().parents[2]


def ascii_text(paths: list[Path], added: re.Pattern[str] | None) -> str:
    """The ASCII lines of ``paths`` with no added token in them (the pieces ``ChatTemplate.encode`` cuts)."""
    lines = [line for p in paths for line in p.read_text(encoding="utf-8").splitlines(keepends=True)]
    return "".join(line for line in lines if line.isascii() and not (added and added.search(line)))


def pieces(kind: str, length: int, n: int, rng: random.Random, prose: str, code: str) -> list[str]:
    if kind == "prompt":
        return [f"user\nWrite a long story about the number {rng.randrange(10**6)}." for _ in range(n)]
    if kind == "fresh":
        def word() -> str:
            return "".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(3, 9)))
        return [" ".join(word() for _ in range(length // 7 + 1))[:length] for _ in range(n)]
    source = prose if kind == "prose" else code
    source *= 2 * length // len(source) + 1
    starts = [rng.randrange(len(source) - length) for _ in range(n)]
    return [source[s:s + length] for s in starts]


def measure(fns: dict[str, Callable[[str], object]], inputs: dict[str, list[str]], pause_s: float,
            splitter: Callable[[str], object]) -> dict[str, tuple[float, float]]:
    """label → (cold p50 µs, hot p50 µs); the functions take turns, call by call."""
    cold: dict[str, list[float]] = {k: [] for k in fns}
    hot: dict[str, list[float]] = {k: [] for k in fns}
    for i in range(0, len(next(iter(inputs.values()))) - 1, 2):
        for label, fn in fns.items():
            text, then = inputs[label][i:i + 2]
            time.sleep(pause_s)
            splitter(text)
            t0 = time.perf_counter()
            fn(text)
            cold[label].append((time.perf_counter() - t0) * 1e6)
            splitter(then)
            t0 = time.perf_counter()
            fn(then)
            hot[label].append((time.perf_counter() - t0) * 1e6)
    return {k: (statistics.median(cold[k]), statistics.median(hot[k])) for k in fns}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--pause-ms", type=float, default=20.0)
    ap.add_argument("--lengths", default="45,128,512,2048,8192")
    ap.add_argument("--kinds", default="prompt,prose,code,fresh")
    ap.add_argument("--model", default="tiny-qwen3")
    args = ap.parse_args()
    template = ChatTemplate.from_model_dir(asset_path(args.model))
    tok = template.tokenizer
    words = WordEncoder.of(tok)
    assert words is not None, f"{args.model}: no word fast path for this tokenizer"
    added = template._splitter
    prose = ascii_text([ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))], added)
    code = ascii_text(sorted((ROOT / "polar_hpc" / "inference").glob("*.py")), added)
    splitter = added.split if added is not None else str.split
    rng = random.Random(0)
    warm = pieces("prose", 4000, 20, rng, prose, code) + pieces("code", 4000, 20, rng, prose, code)
    for text in warm:  # the words a running proxy has seen
        words.encode(text)

    def old(text: str) -> object:
        return tok.encode(text, add_special_tokens=False).ids

    print(f"# encode of a new ASCII piece, {args.model}: old = Tokenizer.encode, new = WordEncoder.encode; "
          f"p50 µs of {args.reps}, cold = after {args.pause_ms:g} ms idle")
    print("| piece | chars | cold old | cold new | cold new/old | hot old | hot new | hot new/old |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in args.kinds.split(","):
        for length in ([45] if kind == "prompt" else [int(x) for x in args.lengths.split(",")]):
            n = 2 * args.reps
            inputs = {k: pieces(kind, length, n, rng, prose, code) for k in ("old", "new")}
            for text in inputs["new"][:3]:
                assert words.encode(text) == old(text), text
            got = measure({"old": old, "new": words.encode}, inputs, args.pause_ms / 1000, splitter)
            (co, ho), (cn, hn) = got["old"], got["new"]
            print(f"| {kind} | {length} | {co:.0f} | {cn:.0f} | {cn / co:.2f} | {ho:.1f} | {hn:.1f} | {hn / ho:.2f} |")

    slow = ChatTemplate(tok, template.templates, template.special_tokens, source="fast path off")
    slow._words = None
    history = [{"role": "system", "content": "You are a helpful assistant."},
               {"role": "user", "content": "Write a long story."},
               {"role": "assistant", "content": "Once upon a time."}]

    def rendered() -> str:
        ask = {"role": "user", "content": f"Write a long story about the number {rng.randrange(10**6)}."}
        return template.render([*history, ask])

    inputs = {k: [rendered() for _ in range(2 * args.reps)] for k in ("off", "on")}
    for t in (slow, template):
        t.encode(inputs["off"][0])  # the history's pieces are kept by both
    got = measure({"off": slow.encode, "on": template.encode}, inputs, args.pause_ms / 1000, lambda _: None)
    (co, ho), (cn, hn) = got["off"], got["on"]
    print(f"| render (ChatTemplate.encode) | {len(inputs['on'][0])} | {co:.0f} | {cn:.0f} | {cn / co:.2f} | "
          f"{ho:.1f} | {hn:.1f} | {hn / ho:.2f} |")
    print(f"load average {load_average()}")


if __name__ == "__main__":
    main()
