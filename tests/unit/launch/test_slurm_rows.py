"""sacct / squeue rows as Slurm 22.05 prints them (captured from the CI cluster), pending arrays included."""

from __future__ import annotations

from polar_hpc.util.slurm import expand_job_id, parse_rows


def test_pending_array_row_gives_every_task_its_state() -> None:
    rows = parse_rows("1|COMPLETED|None|vm|00:00:00|00:01:00\n"
                      "2_[0-3%4]|PENDING|JobHeldUser||0:00|2:00\n"
                      "3|RUNNING|None|vm|0:02|3:00\n"
                      "4_[1,5-6]|PENDING|Resources|None assigned|00:00:00|00:20:00\n"
                      "5_0|CANCELLED by 0|None|vm|00:00:04|00:03:00\n")
    assert {j: r.state for j, r in rows.items()} == {
        "1": "COMPLETED", "2_0": "PENDING", "2_1": "PENDING", "2_2": "PENDING", "2_3": "PENDING", "3": "RUNNING",
        "4_1": "PENDING", "4_5": "PENDING", "4_6": "PENDING", "5_0": "CANCELLED"}
    assert rows["2_3"].describe() == "job 2_3 PENDING (JobHeldUser)"
    assert rows["3"].describe() == "job 3 RUNNING on vm"
    assert rows["4_5"].node == "" and rows["4_5"].live and not rows["4_5"].failed
    assert rows["5_0"].failed and not rows["5_0"].live
    assert (rows["3"].elapsed, rows["3"].time_limit) == ("0:02", "3:00")


def test_expand_job_id() -> None:
    assert expand_job_id("123_[0-7%8]") == [f"123_{i}" for i in range(8)]
    assert expand_job_id("123_4") == ["123_4"]
    assert expand_job_id("123") == ["123"]
    assert expand_job_id("123_[x]") == ["123_[x]"]
