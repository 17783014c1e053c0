"""Published image names of SWE task instances (verified against the sources named below)."""

from __future__ import annotations

SWEBENCH_NAMESPACE = "swebench"
SWEGYM_NAMESPACE = "xingyaoww"


def swebench_image(instance_id: str, namespace: str = SWEBENCH_NAMESPACE) -> str:
    """SWE-bench's official instance image: ``swebench/sweb.eval.x86_64.<id>:latest``, lower-case, ``__`` →
    ``_1776_`` (swebench ``harness/test_spec/test_spec.py`` ``instance_image_key`` in 4.x; ``task/checks.py``
    ``expected_image`` in 5.x)."""
    key = f"sweb.eval.x86_64.{instance_id}:latest".lower()
    return f"{namespace}/{key}".replace("__", "_1776_")


def swegym_image(instance_id: str, namespace: str = SWEGYM_NAMESPACE) -> str:
    """SWE-Gym's instance image as OpenHands names it: ``xingyaoww/sweb.eval.x86_64.<id>``, ``__`` → ``_s_``,
    lower-case, tag ``latest`` (OpenHands ``evaluation/benchmarks/swe_bench/run_infer.py``
    ``get_instance_docker_image``; it leaves the tag off, which means ``latest``)."""
    name = f"sweb.eval.x86_64.{instance_id}".replace("__", "_s_")
    return f"{namespace}/{name}:latest".lower()


def docker_uri(ref: str) -> str:
    """``docker://REF``: what Apptainer pulls; the docker / podman runtimes drop the scheme."""
    return ref if ref.startswith("docker://") else f"docker://{ref}"
