"""A scripted agent session driven through the real PromptBuilder and the real Qwen3 template.

The "model" writes scripted replies; its sampled ids are the reply text encoded in small pieces (so they are a
valid but non-canonical tokenization, as sampled ids often are), closed by ``<|im_end|>``. The "client" echoes
each reply back the way harnesses do (optionally dropping reasoning and rewriting tool-call ids), then appends
tool results or a new user message. Every call yields a CompletionRecord as the proxy would record it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from polar_hpc.config.run import RenderMode
from polar_hpc.proxy.prompt import PromptBuilder
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, CompletionRecord, ToolCall, ToolSpec

TOOLS = [ToolSpec(name="bash", description="Run a shell command",
                  parameters={"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]})]


@dataclass
class Turn:
    reasoning: str | None
    content: str
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    then_tool: list[str] = field(default_factory=list)
    """Tool results the client appends after this reply."""
    then_user: str | None = None
    """A new user message the client appends after this reply (after any tool results)."""
    cut: bool = False
    """The reply was cut by length: no closing end-of-turn sampled."""


def reply_text(t: Turn, thinking: bool) -> str:
    text = f"<think>\n{t.reasoning}\n</think>\n\n" if thinking and t.reasoning is not None else ""
    text += t.content
    for i, (name, args) in enumerate(t.calls):
        if i or t.content:
            text += "\n"
        text += "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"
    return text


def sample_ids(template: Any, text: str, rng: np.random.Generator, split: bool) -> list[int]:
    """Encode in pieces between special tokens so the ids differ from a canonical encode of the same text."""
    if not split:
        return list(template.encode(text))
    ids: list[int] = []
    i = 0
    while i < len(text):
        n = int(rng.integers(3, 9))
        piece = text[i:i + n]
        for special in ("<think>", "</think>", "<tool_call>", "</tool_call>"):
            j = text.find(special, i)
            if j >= 0 and j < i + n:
                piece = text[i:j] if j > i else special
                break
        ids.extend(template.encode(piece))
        i += len(piece)
    return ids


@dataclass
class Session:
    records: list[CompletionRecord]
    builds: list[Any]
    messages: list[ChatMessage]


def run_session(template: Any, mode: RenderMode, system: str, user: str, turns: list[Turn], *,
                template_kwargs: dict[str, Any] | None = None, echo_reasoning: bool = True,
                split_sampling: bool = True, seed: int = 0, session_id: str = "s#0",
                builder: PromptBuilder | None = None, start_index: int = 0,
                tools: list[ToolSpec] | None = None, history: list[ChatMessage] | None = None) -> Session:
    kw = dict(template_kwargs or {})
    thinking = kw.get("enable_thinking", True) is not False
    rng = np.random.default_rng(seed)
    pb = builder or PromptBuilder(template, mode)
    tools = TOOLS if tools is None else tools
    messages = list(history) if history is not None else [ChatMessage(role="system", content=system),
                                                         ChatMessage(role="user", content=user)]
    records: list[CompletionRecord] = []
    builds = []
    eot = template.end_of_turn_id
    for n, t in enumerate(turns):
        req = CanonicalRequest(messages=list(messages), tools=list(tools), template_kwargs=kw)
        build = pb.build(req)
        builds.append(build)
        out = sample_ids(template, reply_text(t, thinking), rng, split_sampling)
        if not t.cut:
            out.append(eot)
        calls = [ToolCall(id=f"call_{n}_{i}", name=name, arguments=json.dumps(args))
                 for i, (name, args) in enumerate(t.calls)]
        response = ChatMessage(role="assistant", content=t.content,
                               reasoning_content=t.reasoning if thinking else None, tool_calls=calls)
        finish = "length" if t.cut else "stop"
        pb.observe(req, build.ids, out, finish, response)
        records.append(CompletionRecord(
            completion_id=f"{session_id}-{start_index + n}", session_id=session_id, index=start_index + n,
            provider="openai_chat", canonical=req, prompt_ids=np.asarray(build.ids, dtype=np.int32),
            output_ids=np.asarray(out, dtype=np.int32),
            output_logprobs=-rng.exponential(0.5, len(out)).astype(np.float32), finish_reason=finish,
            response=response, render_mode=build.mode, divergence_tokens=build.divergence_tokens))
        echo_calls = [ToolCall(id=f"echo_{c.id}", name=c.name, arguments=json.dumps(json.loads(c.arguments),
                                                                                    indent=None,
                                                                                    separators=(",", ":")))
                      for c in calls]
        messages.append(ChatMessage(role="assistant", content=t.content, tool_calls=echo_calls,
                                    reasoning_content=response.reasoning_content if echo_reasoning else None))
        for i, result in enumerate(t.then_tool):
            messages.append(ChatMessage(role="tool", content=result, tool_call_id=f"echo_call_{n}_{i}"))
        if t.then_user is not None:
            messages.append(ChatMessage(role="user", content=t.then_user))
    return Session(records=records, builds=builds, messages=messages)


def tool_loop(n: int, *, final_user: bool = False) -> list[Turn]:
    turns = [Turn(reasoning=f"I should look at step {i}.\nThen decide.", content="" if i % 2 else f"Step {i}:",
                  calls=[("bash", {"cmd": f"ls -la /tmp/dir{i}"})], then_tool=[f"file_{i}.txt\nother {i}"])
             for i in range(n - 1)]
    turns.append(Turn(reasoning="All done.", content="Finished: everything is listed."))
    if final_user:
        turns[-1].then_user = "thanks"
    return turns


def multi_user(queries: int, steps: int = 2) -> list[Turn]:
    """Several user queries, each answered after ``steps`` tool calls made with reasoning."""
    turns: list[Turn] = []
    for q in range(queries):
        for i in range(steps):
            turns.append(Turn(reasoning=f"For question {q} I run step {i}.", content="",
                              calls=[("bash", {"cmd": f"cat q{q}_{i}.txt"})], then_tool=[f"value {q * 10 + i}"]))
        turns.append(Turn(reasoning=f"The answer to question {q} is clear.", content=f"Answer {q} is {q * 7}.",
                          then_user=f"And what about question {q + 1}?"))
    return turns
