from canyon_tide import gauge_canyon, rank_tide


def test_gauge_canyon():
    assert gauge_canyon(12, 12) == 0
    assert gauge_canyon(36, 6) == 30


def test_rank_tide():
    assert rank_tide(12) == 2574
    assert rank_tide(54) == 49005
