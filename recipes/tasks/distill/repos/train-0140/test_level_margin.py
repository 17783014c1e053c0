from level_margin import count_level, sum_margin


def test_count_level():
    assert count_level(37, 17) == 20
    assert count_level(38, 49) == 25


def test_sum_margin():
    assert sum_margin(17, 23, 35) == 23
    assert sum_margin(11, 31, 46) == 31
