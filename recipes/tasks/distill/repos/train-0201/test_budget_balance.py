from budget_balance import count_budget, scale_balance


def test_count_budget():
    assert count_budget(19) == 1520
    assert count_budget(43) == 7568


def test_scale_balance():
    assert scale_balance(8) == 1584
    assert scale_balance(61) == 83204
