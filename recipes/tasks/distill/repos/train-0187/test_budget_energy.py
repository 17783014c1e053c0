from budget_energy import count_budget, sum_energy


def test_count_budget():
    assert count_budget([4, 20, 49, 28], 28) == 2
    assert count_budget([20, 53, 11], 20) == 2


def test_sum_energy():
    assert sum_energy(5) == 915
    assert sum_energy(58) == 104371
