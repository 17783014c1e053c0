from __future__ import annotations

import pytest

from polar_hpc.launch.partition import parse_partitions, parse_slurm_minutes


@pytest.mark.parametrize(("text", "minutes"), [
    ("UNLIMITED", None), ("30", 30), ("30:00", 30), ("30:01", 31), ("01:00:00", 60), ("2-00:00:00", 2880),
    ("1-12", 2160), ("1-00:30", 1470),
])
def test_slurm_time_formats_in_minutes(text: str, minutes: int | None) -> None:
    assert parse_slurm_minutes(text) == minutes


def test_partitions_from_scontrol_one_line_each() -> None:
    text = ("PartitionName=debug AllowGroups=ALL Default=YES MaxTime=UNLIMITED Nodes=vm State=UP TotalCPUs=16\n"
            "PartitionName=short Default=NO MaxTime=00:10:00 Nodes=vm State=DOWN\n")
    parts = parse_partitions(text)
    assert [(p.name, p.default, p.state, p.max_time_min) for p in parts.values()] == [
        ("debug", True, "UP", None), ("short", False, "DOWN", 10)]
