"""The one decision of how many tokens a call may sample (the proxy and the engine client both call it)."""

from __future__ import annotations

import pytest

from polar_hpc.engine.errors import ContextOverflow
from polar_hpc.engine.limits import new_token_limit


def test_smallest_of_the_limits_and_the_room() -> None:
    assert new_token_limit(100, 1000, 50, 4096) == 50
    assert new_token_limit(100, 1000, None, 4096) == 900
    assert new_token_limit(999, 1000, 50) == 1
    assert new_token_limit(100, None, None, 64) == 64


def test_a_prompt_that_leaves_no_room_overflows() -> None:
    with pytest.raises(ContextOverflow, match="the prompt has 1000 tokens; the model's context length is 1000") as e:
        new_token_limit(1000, 1000, 5)
    assert (e.value.prompt_tokens, e.value.context_length) == (1000, 1000)


def test_nothing_to_decide_is_an_error() -> None:
    with pytest.raises(ValueError, match="neither"):
        new_token_limit(10, None, None)
