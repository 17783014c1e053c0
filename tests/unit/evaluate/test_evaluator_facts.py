"""An evaluator is its module plus one ``EVALUATORS`` line: its options, preflight facts and format-only flag are
the class's own."""

from __future__ import annotations

import msgspec
import pytest

from polar_hpc.config import ConfigError
from polar_hpc.config.run import EvaluatorSpec
from polar_hpc.evaluate.registry import EVALUATORS, evaluator_class, format_only, get_evaluator
from polar_hpc.evaluate.swe_spec import SPEC_KEY
from polar_hpc.wire.session import Task


def test_every_registered_evaluator_loads_with_default_options() -> None:
    for name in EVALUATORS:
        ev = get_evaluator(EvaluatorSpec(name=name))
        assert isinstance(ev.options, evaluator_class(name).Options)


def test_only_session_completed_checks_format_only() -> None:
    assert [name for name in EVALUATORS if format_only(name)] == ["session_completed"]
    assert not format_only("no_such_evaluator")


def test_options_are_typed_and_a_wrong_value_is_a_config_error() -> None:
    ev = get_evaluator(EvaluatorSpec(name="swebench", options={"apply_timeout_s": "90", "unknown": 1}))
    assert ev.options == msgspec.convert({"apply_timeout_s": 90.0}, evaluator_class("swebench").Options)
    with pytest.raises(ConfigError, match="evaluator.options"):
        get_evaluator(EvaluatorSpec(name="command", options={"parse": [1]}))


def test_swebench_names_what_it_lacks_to_grade_a_task() -> None:
    bare = Task(task_id="t", instruction="fix it")
    assert "polar-hpc tasks import" in str(get_evaluator(EvaluatorSpec(name="swebench")).cannot_grade(bare))
    assert get_evaluator(EvaluatorSpec(name="swebench", command="pytest")).cannot_grade(bare) is None
    spec = Task(task_id="t", instruction="fix it", metadata={SPEC_KEY: {}})
    assert get_evaluator(EvaluatorSpec(name="swebench")).cannot_grade(spec) is None
    assert get_evaluator(EvaluatorSpec(name="command")).cannot_grade(bare) is None
