from level_budget import adjust_budget, sum_level


def test_sum_level():
    assert sum_level(31, 49) == 114
    assert sum_level(4, 26) == 2


def test_adjust_budget():
    assert adjust_budget(23) == 552
    assert adjust_budget(28) == 812
