"""Cheap classifier for side requests: calls that are not the agent's own trajectory.

Title generators, routers, memory extractors, quota probes. They are answered and recorded as usual,
flagged so builders can leave them out. Rule: no tools, and a known prompt shape (or a 1-token probe).
"""

from __future__ import annotations

import re

from polar_hpc.wire.calls import CanonicalRequest

_SHAPES = re.compile(
    "|".join(
        [
            r"you are a title generator",
            r"generate a (?:short |concise )?title",
            r"write a \d+-\d+ word title",
            r"summarize this coding conversation",
            r"managed memory directory",
            r"scan the recent conversation history",
            r"complexity_reasoning",
            r"complexity_score",
            r"you are a routing",
            r"analyze if this message indicates a new conversation topic",
            r"extract (?:the )?(?:key )?memories",
        ]
    ),
    re.IGNORECASE,
)
_HEAD = 2000


def is_side_request(req: CanonicalRequest) -> bool:
    if req.tools:
        return False
    if req.sampling.max_new_tokens is not None and req.sampling.max_new_tokens <= 1:
        return True
    for m in req.messages[:3]:
        if m.role in ("system", "user") and _SHAPES.search(m.content[:_HEAD]):
            return True
    return False
