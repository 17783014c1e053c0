"""Evaluator registry: a name (or ``module:Class``) to a configured Evaluator."""

from __future__ import annotations

from polar_hpc.config.base import ConfigError
from polar_hpc.config.run import EvaluatorSpec
from polar_hpc.evaluate.base import Evaluator
from polar_hpc.util.classes import load_class

EVALUATORS: dict[str, str] = {
    "session_completed": "polar_hpc.evaluate.simple:SessionCompletedEvaluator",
    "command": "polar_hpc.evaluate.simple:CommandEvaluator",
    "swebench": "polar_hpc.evaluate.patch:SWEBenchEvaluator",
    "swebench_harness": "polar_hpc.evaluate.patch:SWEBenchEvaluator",  # the Polar paper's TaskRequest name
    "harbor": "polar_hpc.evaluate.harbor:HarborEvaluator",
}


def evaluator_class(name: str) -> type[Evaluator]:
    """ConfigError for a name neither registered nor a loadable ``module:Class``."""
    cls: type[Evaluator] = load_class(name, "evaluator", EVALUATORS, Evaluator)
    return cls


def get_evaluator(spec: EvaluatorSpec) -> Evaluator:
    """ConfigError also for options of the wrong type (``Evaluator.Options``)."""
    return evaluator_class(spec.name)(spec)


def format_only(name: str) -> bool:
    """The evaluator rewards any finished session (``Evaluator.format_only``); False for an unknown name."""
    try:
        return evaluator_class(name).format_only
    except ConfigError:
        return False
