"""What one probed session says about its harness: calls, chains, each chain break and why, tokens held vs rendered.

A break names the first message of the new chain's request that differs from the history its parent chain had
reached (the parent's last request and its reply), and how: removed, content truncated or rewritten, reasoning
dropped, a system prompt rewritten; or the tool list / template arguments changed.
"""

from __future__ import annotations

import msgspec

from polar_hpc.proxy.prompt import messages_match
from polar_hpc.report.outcome import failure_reason
from polar_hpc.wire.calls import ChatMessage, CompletionRecord
from polar_hpc.wire.results import SessionResult


class ChainBreak(msgspec.Struct, kw_only=True, frozen=True):
    chain: int
    reason: str
    """The builder's ``break_reason`` (``prompt_diverged``, ``unrelated_prompt``, ``retokenized``, ...)."""
    detail: str
    """Which message changed and how."""


class ProbeRow(msgspec.Struct, kw_only=True):
    harness: str
    version: str = ""
    status: str = ""
    """How the harness ended: ``completed`` (exit 0), ``failed``, ``timeout``, ``error``."""
    returncode: int | None = None
    detail: str = ""
    """Why the harness ended that way, when not completed (the tail of its stderr)."""
    reward: float = 0.0
    verdict: str = ""
    """Why the session falls short of reward 1 (``report.outcome.failure_reason``); empty when it does not."""
    calls: int = 0
    """Main-agent model calls (side requests left out)."""
    side_calls: int = 0
    tool_calls: int = 0
    parallel_turns: int = 0
    chains: int = 0
    breaks: list[ChainBreak] = msgspec.field(default_factory=list)
    tokens_held: int = 0
    tokens_rendered: int = 0
    drift_prevented: int = 0
    """Tokens a canonical re-render would have changed in the continued prompts (-1: not measured)."""
    tokens_trainable: int = 0
    tools: list[str] = msgspec.field(default_factory=list)
    records: str = ""
    shard: str = ""


def _history(rec: CompletionRecord) -> list[ChatMessage]:
    return [*rec.canonical.messages, rec.response]


def _how(old: ChatMessage, new: ChatMessage) -> str:
    if old.role != new.role:
        return f"role {old.role} became {new.role}"
    if old.reasoning_content and not new.reasoning_content and old.content.strip() == new.content.strip():
        return "reasoning dropped"
    if len(new.content) < len(old.content) and old.content.startswith(new.content[: max(1, len(new.content) // 2)]):
        return f"content truncated ({len(old.content)} -> {len(new.content)} chars)"
    if old.role == "system":
        return "system prompt rewritten"
    if old.tool_calls != new.tool_calls and old.content == new.content:
        return "tool calls changed"
    return f"content rewritten ({len(old.content)} -> {len(new.content)} chars)"


def _spawned_by(old: list[ChatMessage], new: list[ChatMessage]) -> str | None:
    """The tool call of the parent's history whose prompt opens the new context (a sub-agent), if any."""
    first = next((m.content for m in new if m.role == "user"), "")
    for m in old:
        for call in m.tool_calls:
            try:
                args = msgspec.json.decode(call.arguments)
            except msgspec.DecodeError:
                continue
            values = args.values() if isinstance(args, dict) else []
            if any(isinstance(v, str) and len(v) >= 20 and v.strip() in first for v in values):
                return call.name
    return None


def describe_break(parent: CompletionRecord, rec: CompletionRecord) -> str:
    """Which message of ``rec``'s request differs from the history ``parent`` had reached, and how."""
    old, new = _history(parent), rec.canonical.messages
    spawner = _spawned_by(old, new)
    if spawner is not None:
        return f"a sub-agent's own context, started by the parent's {spawner} tool call"
    if new == parent.canonical.messages:
        return f"the same request as call {parent.index} again (the client retried it)"
    if parent.canonical.tools and not rec.canonical.tools:
        return "a request without the tools (the harness's compaction or summary prompt)"
    if parent.canonical.tools != rec.canonical.tools:
        names = sorted({t.name for t in parent.canonical.tools} ^ {t.name for t in rec.canonical.tools})
        return "tool list changed" + (f" ({', '.join(names)})" if names else " (schemas)")
    if parent.canonical.template_kwargs != rec.canonical.template_kwargs:
        return f"template arguments changed: {parent.canonical.template_kwargs} -> {rec.canonical.template_kwargs}"
    turns_before, turns_now = (sum(1 for m in h if m.role == "assistant" and m.tool_calls) for h in (old, new))
    compacted = "compaction: earlier turns replaced; " if turns_now < turns_before else ""
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if not messages_match(a, b):
            return f"{compacted}message {i} ({a.role}): {_how(a, b)}"
    if len(new) < len(old):
        return f"history shortened from {len(old)} to {len(new)} messages (compaction or a fresh context)"
    return "same messages; the prompt tokens differ (template rendering)"


def probe_row(result: SessionResult, records: list[CompletionRecord], *, records_path: str = "",
              shard: str = "", version: str = "") -> ProbeRow:
    main = [r for r in records if not r.side_request]
    by_id = {r.completion_id: r for r in records}
    agent = result.agent
    breaks: list[ChainBreak] = []
    for tr in result.trajectory.traces:
        meta = tr.meta
        reason = meta.break_reason
        if not reason:
            continue
        first = by_id.get((meta.completion_ids or [""])[0])
        parent = by_id.get(meta.fork_completion_id or "")
        detail = describe_break(parent, first) if parent is not None and first is not None else "no parent chain"
        chain = meta.chain_index if meta.chain_index is not None else -1
        breaks.append(ChainBreak(chain=chain, reason=reason, detail=detail))
    measured = [r.divergence_tokens for r in main if r.render_mode == "continuation"]
    verdict = failure_reason(status=int(result.trajectory.status), error=result.trajectory.error,
                             evaluation=result.evaluation, reward=result.reward, accept=1.0,
                             agent=agent, finish_reasons=[r.finish_reason for r in main])
    return ProbeRow(
        harness=result.harness, version=version, status=agent.status if agent else "",
        returncode=agent.returncode if agent else None, detail=agent.detail if agent else "", reward=result.reward,
        verdict=verdict or "",
        calls=len(main), side_calls=len(records) - len(main),
        tool_calls=sum(len(r.response.tool_calls) for r in main),
        parallel_turns=sum(1 for r in main if len(r.response.tool_calls) > 1),
        chains=result.trajectory.stats.chains, breaks=breaks,
        tokens_held=sum(r.held_tokens for r in main), tokens_rendered=sum(r.rendered_tokens for r in main),
        drift_prevented=-1 if any(d < 0 for d in measured) else sum(measured),
        tokens_trainable=result.trajectory.stats.tokens_trainable,
        tools=[t.name for t in main[0].canonical.tools] if main else [], records=records_path, shard=shard)


def format_row(row: ProbeRow) -> str:
    lines = [
        f"harness        {row.harness} {row.version}".rstrip(),
        f"exit           {row.status} (exit code {row.returncode}){': ' + row.detail if row.detail else ''}",
        f"reward         {row.reward:g}{'  (' + row.verdict + ')' if row.verdict else ''}",
        f"calls          {row.calls} main-agent, {row.side_calls} side; {row.tool_calls} tool calls "
        f"({row.parallel_turns} parallel turns)",
        f"chains         {row.chains}",
    ]
    lines += [f"  break        chain {b.chain}: {b.reason}: {b.detail}" for b in row.breaks]
    drift = "not measured" if row.drift_prevented < 0 else f"{row.drift_prevented} tokens"
    lines += [
        f"tokens         {row.tokens_held} held, {row.tokens_rendered} rendered; {row.tokens_trainable} trainable",
        f"drift          a canonical re-render would have changed {drift}",
        f"tools          {', '.join(row.tools) or 'none offered'}",
        f"records        {row.records}",
        f"shard          {row.shard}",
    ]
    return "\n".join(lines)
