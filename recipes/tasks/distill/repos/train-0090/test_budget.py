from budget import fold_budget, rate_budget


def test_rate_budget():
    assert rate_budget(31, 22, 44) == 31
    assert rate_budget(52, 53, 61) == 53


def test_fold_budget():
    assert fold_budget(31, 40) == 1125
    assert fold_budget(47, 10) == 1655
