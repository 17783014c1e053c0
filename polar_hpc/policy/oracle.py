"""The oracle policy of one session: which turn of its script a request is at, and the forced reply ids.

The turn is read from the request itself (how many assistant tool-call turns its history holds), so a retried
request gets the same turn and nothing is kept per call. Requests without tools, and side requests, are left to
the engine (sampled as usual). The forced ids are scored by the engine in one prefill (teacher forcing) and come
back as an ordinary :class:`GenerateResult`: the proxy parses, answers and records them like sampled ones.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import msgspec
import numpy as np

from polar_hpc.chat.parse import parse_reply
from polar_hpc.config.run import ToolParser
from polar_hpc.engine.forcing import ForcedResult
from polar_hpc.engine.result import GenerateResult
from polar_hpc.log import get_logger
from polar_hpc.policy.render import tool_calls_text
from polar_hpc.policy.script import (
    SUBAGENT_MARKER,
    OracleError,
    OracleScript,
    Turn,
    delegate_turns,
    summary,
    turns,
)
from polar_hpc.policy.text_actions import checked_action_text, text_turn
from polar_hpc.policy.tools import ShellTool, WriteTool, agent_tool, pick_tool
from polar_hpc.providers import provider_api
from polar_hpc.providers.side import is_side_request
from polar_hpc.wire.calls import CanonicalRequest, ChatMessage, Provider, ToolSpec

log = get_logger("policy")

THINK_CLOSE_PREFIX = "</think>\n\n"


@runtime_checkable
class ForcingEngine(Protocol):
    async def teacher_force(self, input_ids: list[int], forced_ids: list[int], *, session_id: str | None = None,
                            deadline: float | None = None) -> ForcedResult: ...


class TemplateLike(Protocol):
    @property
    def end_of_turn_id(self) -> int | None: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: Sequence[int]) -> str: ...

    def render_request(self, messages: Sequence[ChatMessage], tools: Sequence[ToolSpec],
                       add_generation_prompt: bool = True, **template_kwargs: Any) -> str: ...


class _Parallel(msgspec.Struct):
    parallel_tool_calls: bool | None = None
    tool_choice: Any = None


_PARALLEL = msgspec.json.Decoder(_Parallel)


def accepts_parallel(raw_request: bytes, provider: Provider) -> bool:
    """Whether the harness takes several tool calls in one turn (the providers' default, unless switched off)."""
    try:
        body = _PARALLEL.decode(raw_request)
    except msgspec.DecodeError:
        return False
    if body.parallel_tool_calls is False:
        return False
    return not provider_api(provider).disables_parallel(body.tool_choice)


def parses_back(text: str, calls: list[tuple[str, dict[str, Any]]], parser: ToolParser,
                tools: list[ToolSpec]) -> str | None:
    """None when ``text`` parses back to exactly ``calls`` (and nothing else); else what differs."""
    parsed = parse_reply(text, parser, tools)
    if parsed.parse_error:
        return parsed.parse_error
    if parsed.content:
        return f"text outside the calls: {parsed.content[:80]!r}"
    got = [(c.name, json.loads(c.arguments)) for c in parsed.tool_calls]
    if len(got) != len(calls):
        return f"{len(got)} calls parsed, {len(calls)} written"
    for (name, args), (gname, gargs) in zip(calls, got, strict=True):
        if (name, args) != (gname, gargs):
            keys = sorted(k for k in set(args) | set(gargs) if args.get(k) != gargs.get(k))
            return f"{name}: {gname} parsed back with {', '.join(keys) or 'the name'} changed"
    return None


def is_subagent(req: CanonicalRequest) -> bool:
    """A request of the sub-agent the oracle started (its prompt opens with the marker)."""
    return any(m.role == "user" and SUBAGENT_MARKER in m.content for m in req.messages)


def tool_turns_done(req: CanonicalRequest) -> int:
    return sum(1 for m in req.messages if m.role == "assistant" and m.tool_calls)


class OraclePolicy:
    """Per session; ``script`` comes from the task (``oracle.script.script_from_task``).

    The turn is the number of tool-call turns in the request's history, per context (the main agent, or the
    sub-agent it started): a retried request gets the same turn. When a history holds fewer tool-call turns than
    the one before, the harness compacted it (earlier turns replaced by a summary): the turns it dropped are
    carried over, so the script continues where it was instead of starting over."""

    def __init__(self, script: OracleScript, template: TemplateLike, tool_parser: ToolParser) -> None:
        self.script = script
        self.template = template
        self.tool_parser = tool_parser
        self.logged_tools = False
        self.dropped = {False: 0, True: 0}
        """Tool-call turns compacted away, per context (``is_subagent``)."""
        self.seen = {False: 0, True: 0}
        """Tool-call turns in the last history seen, per context."""
        self.encoded = False
        """The patch goes base64-encoded (the format could not carry it literally)."""
        self.last_trained = True
        """Whether the last forced reply trains (``Turn.trained``; the proxy copies it onto the record)."""

    def _step(self, req: CanonicalRequest) -> int:
        ctx, n = is_subagent(req), tool_turns_done(req)
        if n < self.seen[ctx]:
            self.dropped[ctx] += self.seen[ctx]
        self.seen[ctx] = n
        return self.dropped[ctx] + n

    def turn(self, req: CanonicalRequest, raw_request: bytes,
             provider: Provider) -> tuple[Turn, ShellTool | WriteTool | None] | None:
        """The script's turn for this request, with the tool it uses; None when the engine samples it (a side
        request, or a tool-less one before the agent started). A tool-less agent request after that (Codex's
        compaction) gets a plain summary of the progress."""
        if is_side_request(req):
            return None
        if self.script.actions.kind == "text":  # the harness reads actions from the reply's text
            return text_turn(self.script, req), None
        if not req.tools:
            ctx = is_subagent(req)
            if not self.dropped[ctx] + self.seen[ctx]:
                return None
            done = self._step(req)
            return Turn(label="summary", answer=summary(self.script, done)), None
        tool = pick_tool(req.tools)
        if not self.logged_tools:
            self.logged_tools = True
            log.info("oracle: %s request offers tools %s; shell tool %s", provider,
                     [t.name for t in req.tools], msgspec.json.encode(tool).decode())
        if isinstance(tool, WriteTool):
            raise OracleError(f"the request offers no shell tool, only the file-writing tool {tool.name!r}; the oracle "
                              "applies patches and commands through a shell")
        plan = turns(self.script, parallel=accepts_parallel(raw_request, provider), encoded=self.encoded)
        if self.script.delegate and not is_subagent(req) and agent_tool(req.tools) is not None:
            plan = delegate_turns()
        return plan[min(self._step(req), len(plan) - 1)], tool

    def forced_text(self, req: CanonicalRequest, raw_request: bytes, provider: Provider) -> str | None:
        found = self._reply(req, raw_request, provider)
        return None if found is None else found[0]

    def reply_ids(self, req: CanonicalRequest, raw_request: bytes, provider: Provider, *,
                  in_think: bool) -> list[int] | None:
        """The forced reply's ids for this request (None: the engine samples it). A plain answer is written as
        the template renders it as the conversation's last turn (:meth:`answer_text`)."""
        found = self._reply(req, raw_request, provider)
        if found is None:
            return None
        text, answer = found
        if answer and not in_think:
            text = self.answer_text(req, text)
        return self.forced_ids(text, in_think=in_think)

    def _reply(self, req: CanonicalRequest, raw_request: bytes, provider: Provider) -> tuple[str, bool] | None:
        """(the reply's text, whether it is a plain answer rather than tool calls); None: the engine samples."""
        found = self.turn(req, raw_request, provider)
        if found is None:
            return None
        turn, tool = found
        self.last_trained = turn.trained
        if self.script.actions.kind == "text":  # only the final turn is the conversation's last
            text = checked_action_text(turn, self.script.actions, self.tool_parser, req.tools, self.script.task)
            return text, turn.label == "answer"
        if turn.label == "delegate":
            sub = agent_tool(req.tools)
            assert sub is not None
            task = next((m.content for m in reversed(req.messages) if m.role == "user"), "")
            args = sub.arguments(f"{SUBAGENT_MARKER}\n{task}", "oracle: solve the task")
            text = tool_calls_text([(sub.name, args)], self.tool_parser)
            why = parses_back(text, [(sub.name, args)], self.tool_parser, req.tools)
            if why is not None:
                raise OracleError(f"task {self.script.task or '(unnamed)'}: the oracle's delegate tool call does not "
                                  f"parse back ({why})")
            return text, False
        if not turn.commands:
            return turn.answer, True
        assert isinstance(tool, ShellTool)
        calls = [(tool.name, tool.arguments(c, f"oracle: {turn.label}")) for c in turn.commands]
        text = tool_calls_text(calls, self.tool_parser)
        why = parses_back(text, calls, self.tool_parser, req.tools)
        if why is None:
            return text, False
        if turn.label == "apply" and not self.encoded:
            log.info("oracle: task %s: the %s format cannot carry the solution literally (%s); sending it base64",
                     self.script.task, self.tool_parser, why)
            self.encoded = True
            return self._reply(req, raw_request, provider)
        raise OracleError(f"task {self.script.task or '(unnamed)'}: the oracle's {turn.label} tool call does not parse "
                          f"back as written in the {self.tool_parser} format ({why}); the session cannot go on")

    def answer_text(self, req: CanonicalRequest, text: str) -> str:
        """``text`` as the chat template writes it as an assistant's last turn after this request's messages, so that
        a render of the finished conversation (the SFT corpus's chat variant, tokenized by a trainer) gives the very
        ids the engine scored: Qwen3's template puts an empty reasoning block before the answer of the last turn.
        ``text`` itself where the render of that turn does not continue the request's own (generation prompt)."""
        eot = self.template.end_of_turn_id
        kw = req.template_kwargs
        try:
            prompt = self.template.render_request(req.messages, req.tools, True, **kw)
            full = self.template.render_request([*req.messages, ChatMessage(role="assistant", content=text)],
                                                req.tools, False, **kw)
        except ValueError:  # a template that refuses this history ends it as it is (TemplateError is one)
            return text
        turn = full[len(prompt):] if full.startswith(prompt) else ""
        end = turn.find(self.template.decode([eot])) if eot is not None else -1
        return turn[:end] if end >= 0 and turn[:end].endswith(text) else text

    def forced_ids(self, text: str, *, in_think: bool) -> list[int]:
        eot = self.template.end_of_turn_id
        if eot is None:
            raise OracleError("the oracle ends each reply with the template's end-of-turn token; "
                              "this template has none")
        return [*self.template.encode((THINK_CLOSE_PREFIX if in_think else "") + text), eot]

    async def score(self, engine: object, prompt: list[int], forced: list[int], *, session_id: str,
                    deadline: float | None) -> GenerateResult:
        if not isinstance(engine, ForcingEngine):
            raise OracleError(f"the engine ({type(engine).__name__}) cannot teacher-force; the oracle needs "
                              "SGLangEngine.teacher_force (SGLang or the reference server)")
        res = await engine.teacher_force(prompt, forced, session_id=session_id, deadline=deadline)
        return GenerateResult(output_ids=np.asarray(forced, dtype=np.int32), output_logprobs=res.logprobs,
                              finish_reason="stop", matched_stop=forced[-1],
                              prompt_tokens=res.prompt_tokens - len(forced),
                              completion_tokens=len(forced), cached_tokens=res.cached_tokens,
                              weight_version=res.weight_version, server=res.server, rid=res.rid, attempts=res.attempts)
