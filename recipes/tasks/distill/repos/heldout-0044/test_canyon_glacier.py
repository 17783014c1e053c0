from canyon_glacier import probe_canyon, rank_glacier


def test_probe_canyon():
    assert probe_canyon([48, 6, 39]) == 48
    assert probe_canyon([45, 18, 51, 18, 51]) == 51


def test_rank_glacier():
    assert rank_glacier(27, 42) == 21
    assert rank_glacier(9, 57) == 21
