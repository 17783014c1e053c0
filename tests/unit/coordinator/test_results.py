"""The coordinator's buffer of recent results: bounded by count and by bytes, oldest dropped first."""

from polar_hpc.coordinator.results import ResultBuffer
from polar_hpc.wire.results import SessionResult
from polar_hpc.wire.traces import TraceStatus, Trajectory


def result(i: int, payload: str = "") -> SessionResult:
    return SessionResult(task_id=f"t{i}", sample_index=0, trajectory=Trajectory(status=TraceStatus.COMPLETED),
                         metadata={"blob": payload})


def test_count_bound_drops_oldest_and_reads_back_equal() -> None:
    buf = ResultBuffer(max_results=2, max_bytes=1 << 20)
    for i in range(3):
        buf.add(result(i))
    assert len(buf) == 2 and result(0).key not in buf
    assert buf.get(result(2).key) == result(2)
    assert buf.get(result(0).key) is None


def test_byte_bound_keeps_memory_under_the_cap() -> None:
    big = "x" * 10_000
    buf = ResultBuffer(max_results=1000, max_bytes=35_000)
    for i in range(10):
        buf.add(result(i, big))
        assert buf.nbytes <= 35_000
    assert len(buf) == 3 and result(9).key in buf and result(6).key not in buf


def test_a_result_again_replaces_its_bytes() -> None:
    buf = ResultBuffer(max_results=10, max_bytes=1 << 20)
    buf.add(result(0, "a" * 100))
    once = buf.nbytes
    buf.add(result(0, "a" * 100))
    assert len(buf) == 1 and buf.nbytes == once
