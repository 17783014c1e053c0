"""``polar-hpc shards show KEY``: one session in the terminal, the same content as its HTML page."""

from __future__ import annotations

import json
import os
from typing import IO, Any

from polar_hpc.store.reader import ShardReader
from polar_hpc.store.select import TraceSelect
from polar_hpc.util.units import duration
from polar_hpc.view.model import SessionView, TokenTexts, TraceView, session_view
from polar_hpc.wire.ids import task_of_key

GREEN, DIM, BOLD, RED, CYAN, RESET = "\033[32m", "\033[2m", "\033[1m", "\033[31m", "\033[36m", "\033[0m"
MAX_CONTENT = 2000
"""Characters of one message shown in the terminal (the HTML page shows everything)."""


class _Style:
    def __init__(self, color: bool) -> None:
        self.on = color

    def __call__(self, code: str, text: str) -> str:
        return f"{code}{text}{RESET}" if self.on else text


def find_session(reader: ShardReader, key: str) -> Any:
    task_id = task_of_key(key)
    for r in reader.results(TraceSelect(task_ids=frozenset({task_id}))):
        if r.key == key:
            return r
    return None


def _clip(text: str) -> str:
    return text if len(text) <= MAX_CONTENT else text[:MAX_CONTENT] + f" … [{len(text) - MAX_CONTENT} more chars]"


def _message(m: dict[str, Any], st: _Style) -> list[str]:
    head = m["role"] + (f" {m['tool_call_id']}" if "tool_call_id" in m else "") + (f" ({m['name']})" if "name" in m
                                                                                 else "")
    lines = [st(BOLD, f"[{head}]")]
    if m.get("reasoning_content"):
        lines += [st(DIM, "  (reasoning) " + line) for line in _clip(m["reasoning_content"]).splitlines()]
    lines += ["  " + line for line in _clip(m.get("content") or "").splitlines()]
    for c in m.get("tool_calls", []):
        args = c["function"]["arguments"]
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        lines.append(st(CYAN, f"  → {c['function']['name']} {_clip(text)}  [{c['id']}]"))
    return lines


def _tokens(t: TraceView, vocab: dict[str, str], st: _Style) -> list[str]:
    parts = []
    for seg in t.segments:
        n = seg.end - seg.start
        if seg.kind == "sampled":
            lps = [v for v in t.logprobs[seg.start:seg.end] if v is not None]
            mean = f", mean logprob {sum(lps) / len(lps):.3f}" if lps else ""
            parts.append(st(GREEN, f"sampled {n}{mean}"))
        else:
            parts.append(st(DIM, f"{seg.kind} {n}"))
    lines = ["tokens: " + " | ".join(parts)]
    if vocab:
        text = "".join(st(GREEN, vocab.get(str(i), f"<{i}>")) if m else st(DIM, vocab.get(str(i), f"<{i}>"))
                       for i, m in zip(t.ids, t.trainable, strict=True))
        lines += ["", text]
    return lines


def render_text(v: SessionView, color: bool = False) -> str:
    st = _Style(color)
    verdict = st(GREEN, "accepted") if v.accepted else st(RED, f"not accepted: {v.reason}")
    lines = [
        st(BOLD, f"session {v.key}") + f"  task {v.task_id}  sample {v.sample_index}  attempt {v.attempt}",
        f"status {v.status}  reward {v.reward:g}  {verdict}",
        f"harness {v.harness or '-'}  model {v.model or '-'}  policy v{v.policy_version}  rank {v.gateway_rank}  "
        f"duration {duration(v.duration_s)}  turns {v.turns}  tokens {v.tokens}",
    ]
    if v.error:
        lines.append(st(RED, f"error: {v.error}"))
    for t in v.traces:
        chain = ", ".join(f"{k} {val}" for k, val in t.chain.items() if val is not None) or "-"
        lines += ["", st(BOLD, f"── chain {t.index}  ({chain})  {t.policy}  "
                               f"finish {t.finish_reason}  reward {t.reward:g}  "
                               f"prompt {t.prompt_tokens} tok, trainable {t.trainable_tokens} tok")]
        for m in t.messages:
            lines += _message(m, st)
        lines += _tokens(t, v.vocab, st)
    lines += ["", st(BOLD, "── evaluation")]
    if v.evaluation is None:
        lines.append("not evaluated")
    else:
        details = dict(v.evaluation.get("details", {}))
        printed = details.pop("output_tail", None)
        lines += [f"reward {v.evaluation['outcome_reward']:g}",
                  *json.dumps(details, indent=2, ensure_ascii=False).splitlines()]
        if printed:
            lines += ["what the tests printed (last part):", *("  " + ln for ln in _clip(str(printed)).splitlines())]
    lines += ["", st(BOLD, "── timings"), " → ".join(f"{k} {duration(s)}" for k, s in v.timings) or "none"]
    return "\n".join(lines) + "\n"


def show_session(reader: ShardReader, key: str, out: IO[str], *, color: str = "auto",
                 tokenizer: TokenTexts | None = None) -> int:
    """Print the session ``key``; exit status 1 (saying where it looked) when no shard holds it."""
    r = find_session(reader, key)
    if r is None:
        import sys

        sys.stderr.write(f"polar-hpc shards show: no session {key!r} in {len(reader.shards)} shards "
                         f"({', '.join(str(p) for p in reader.shards[:3])}{' …' if len(reader.shards) > 3 else ''})"
                         "; keys are task_id/sample_index, as `shards inspect` and the viewer list them\n")
        return 1
    use = color == "always" or (color == "auto" and out.isatty() and "NO_COLOR" not in os.environ)
    out.write(render_text(session_view(r, tokenizer=tokenizer), color=use))
    return 0
