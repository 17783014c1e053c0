from budget_weight import get_budget, sum_weight


def test_get_budget():
    assert get_budget(61, 61) == 0
    assert get_budget(61, 59) == 2


def test_sum_weight():
    assert sum_weight(52, 16, 58) == 52
    assert sum_weight(56, 37, 44) == 44
