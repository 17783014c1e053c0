from budget_margin import count_budget, sum_margin


def test_count_budget():
    assert count_budget(14) == 3570
    assert count_budget(49) == 41650


def test_sum_margin():
    assert sum_margin(2, 52) == 44
    assert sum_margin(44, 19) == 25
