from weight_budget import adjust_weight, total_budget


def test_adjust_weight():
    assert adjust_weight(13, 22) == 516
    assert adjust_weight(28, 22) == 1086


def test_total_budget():
    assert total_budget(26, 55, 56) == 55
    assert total_budget(29, 25, 50) == 29
