"""Evaluator registry: a name (or ``module:Class``) to a configured Evaluator."""

from __future__ import annotations

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


def get_evaluator(spec: EvaluatorSpec) -> Evaluator:
    cls = load_class(spec.name, "evaluator", EVALUATORS, Evaluator)
    evaluator: Evaluator = cls(spec)
    return evaluator
