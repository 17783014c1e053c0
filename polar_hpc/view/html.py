"""HTML of the viewer's pages: the run's session table and one page per session (conversation, tokens,
evaluation, timings). Everything text is escaped; the token view is drawn by ``viewer.js`` from the session's
data embedded in the page (one ``<script type="application/json">``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from html import escape
from typing import Any

import msgspec

from polar_hpc.util.units import duration
from polar_hpc.view.model import SessionView, TraceView

LONG = 4000
"""Messages longer than this are folded (``<details>``)."""


def _page(title: str, body: str, *, up: str = "") -> str:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<link rel="stylesheet" href="{up}viewer.css"><script src="{up}viewer.js" defer></script></head>'
            f"<body>{body}</body></html>\n")


def _num(v: float, text: str | None = None) -> str:
    return f'<td class="num" data-v="{v:.6g}">{escape(text if text is not None else f"{v:g}")}</td>'


def run_page(title: str, sessions: Sequence[SessionView], plots: Sequence[str], report: str | None) -> str:
    statuses = sorted({s.status for s in sessions})
    harnesses = sorted({s.harness for s in sessions})
    rows = []
    for s in sessions:
        verdict = ('<span class="ok">accepted</span>' if s.accepted
                   else f'<span class="bad">{escape(s.reason or "")}</span>')
        rows.append(
            f'<tr data-status="{escape(s.status)}" data-harness="{escape(s.harness)}" '
            f'data-accepted="{"yes" if s.accepted else "no"}" data-reward="{s.reward:.6g}">'
            f'<td><a href="sessions/{escape(s.page)}">{escape(s.key)}</a></td><td>{escape(s.task_id)}</td>'
            f"<td>{escape(s.harness)}</td><td>{escape(s.status)}</td>{_num(s.reward)}{_num(s.turns)}"
            f"{_num(s.tokens)}{_num(s.duration_s, duration(s.duration_s))}<td>{verdict}</td></tr>")
    opts = "".join(f'<option value="{escape(x)}">{escape(x)}</option>' for x in statuses)
    hopts = "".join(f'<option value="{escape(x)}">{escape(x or "(none)")}</option>' for x in harnesses)
    n_acc = sum(s.accepted for s in sessions)
    plot_html = "".join(f'<a href="{escape(p)}"><img src="{escape(p)}" alt="{escape(p)}"></a>' for p in plots)
    body = (
        f"<h1>{escape(title)}</h1><p class='meta'>{len(sessions)} sessions, {n_acc} accepted"
        + (f' · <a href="{escape(report)}">run report</a>' if report else "") + "</p>"
        '<div class="filters"><input id="q" type="search" placeholder="search key, task, reason">'
        f'<select id="status"><option value="">any status</option>{opts}</select>'
        f'<select id="harness"><option value="">any harness</option>{hopts}</select>'
        '<select id="accepted"><option value="">accepted or not</option><option value="yes">accepted</option>'
        '<option value="no">not accepted</option></select>'
        '<input id="minreward" type="number" step="any" placeholder="min reward" style="width:8em">'
        '<span id="shown" class="meta"></span></div>'
        '<table id="sessions"><thead><tr><th>session</th><th>task</th><th>harness</th><th>status</th>'
        '<th class="num">reward</th><th class="num">turns</th><th class="num">tokens</th>'
        '<th class="num">duration</th><th>failure reason</th></tr></thead><tbody>'
        + "".join(rows) + "</tbody></table>"
        + (f'<h2>Report plots</h2><div class="plots">{plot_html}</div>' if plots else ""))
    return _page(title, body)


def _pre(text: str, cls: str = "") -> str:
    inner = f'<pre class="{cls}">{escape(text)}</pre>'
    if len(text) <= LONG:
        return inner
    return f"<details><summary>{len(text):,} characters</summary>{inner}</details>"


def _message(m: dict[str, Any]) -> str:
    role = m["role"]
    head = escape(role) + (f' · <code>{escape(m["tool_call_id"])}</code>' if "tool_call_id" in m else "") \
        + (f" · {escape(m['name'])}" if "name" in m else "")
    parts = [f'<div class="role">{head}</div>']
    if m.get("reasoning_content"):
        parts.append(_pre(m["reasoning_content"], "reasoning"))
    if m.get("content"):
        parts.append(_pre(m["content"]))
    for c in m.get("tool_calls", []):
        args = c["function"]["arguments"]
        text = args if isinstance(args, str) else json.dumps(args, indent=2, ensure_ascii=False)
        parts.append(f'<div class="call" data-tool="{escape(c["function"]["name"])}">→ <b>'
                     f'{escape(c["function"]["name"])}</b> <code>{escape(c["id"])}</code>{_pre(text)}</div>')
    return f'<div class="msg {escape(role)}">{"".join(parts)}</div>'


def _chain(t: TraceView) -> str:
    facts = ", ".join(f"{escape(k)} <b>{escape(str(v))}</b>" for k, v in t.chain.items() if v is not None)
    tools = ", ".join(escape(x["function"]["name"]) for x in t.tools)
    return (
        f'<div class="chain" id="chain-{t.index}"><h2>Chain {t.index}</h2>'
        f'<p class="meta">{facts or "first chain"} · finish {escape(t.finish_reason)} · reward {t.reward:g} · '
        f"{t.prompt_tokens} prompt tokens, {t.trainable_tokens} trainable · tools: {tools or 'none'}</p>"
        f'<details open><summary>Conversation ({len(t.messages)} messages)</summary>'
        + "".join(_message(m) for m in t.messages) + "</details>"
        f'<details open><summary>Tokens ({len(t.ids)})</summary><p class="legend meta">'
        '<span class="tok p">prompt</span><span class="tok s">sampled, trainable</span>'
        '<span class="tok i">inserted (tool output, masked)</span> hover a token for its id and logprob</p>'
        f'<div class="tokens" data-trace="{t.index}">token view needs JavaScript</div></details></div>')


def session_page(v: SessionView) -> str:
    verdict = '<span class="ok">accepted</span>' if v.accepted else f'<span class="bad">{escape(v.reason or "")}</span>'
    total = sum(s for k, s in v.timings if k != "total") or 1.0
    timing_rows = "".join(
        f"<tr><td>{escape(k)}</td>{_num(s, duration(s))}<td>"
        + (f'<span class="bar" style="width:{min(300, 300 * s / total):.0f}px"></span>' if k != "total" else "")
        + "</td></tr>" for k, s in v.timings)
    ev = "<p>not evaluated</p>"
    if v.evaluation is not None:
        details = dict(v.evaluation.get("details", {}))
        printed = details.pop("output_tail", None)
        ev = (f"<p>outcome reward <b>{v.evaluation['outcome_reward']:g}</b></p>"
              + _pre(json.dumps(details, indent=2, ensure_ascii=False))
              + (f'<h3>What the tests printed (last part)</h3><div class="test-output">{_pre(str(printed))}</div>'
                 if printed else ""))
    tokens = [{"ids": t.ids, "trainable": t.trainable, "logprobs": t.logprobs, "segments": t.segments}
              for t in v.traces]
    data = msgspec.json.encode({"traces": tokens, "vocab": v.vocab}).decode().replace("<", "\\u003c")
    body = (
        f'<p><a href="../index.html">← all sessions</a></p><h1>{escape(v.key)}</h1>'
        f'<p class="meta">task {escape(v.task_id)} · sample {v.sample_index} · attempt {v.attempt} · '
        f"harness {escape(v.harness or '-')} · model {escape(v.model or '-')} · policy v{v.policy_version} · "
        f"rank {v.gateway_rank}</p>"
        f'<p>status <b id="status">{escape(v.status)}</b> · reward <b>{v.reward:g}</b> · {verdict} · '
        f"{v.turns} model calls · {v.tokens} tokens · {escape(duration(v.duration_s))}</p>"
        + (f'<p class="bad">error: {escape(v.error)}</p>' if v.error else "")
        + f"<h2>Evaluation</h2>{ev}"
        + f'<h2>Timings</h2><table class="timings" style="width:auto">{timing_rows}</table>'
        + "".join(_chain(t) for t in v.traces)
        + "<h2>Reconstruction</h2>" + _pre(json.dumps(v.stats, indent=2))
        + f'<script type="application/json" id="session-data">{data}</script>')
    return _page(v.key, body, up="../")
