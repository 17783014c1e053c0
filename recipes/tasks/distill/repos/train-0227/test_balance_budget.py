from balance_budget import bound_balance, pick_budget


def test_bound_balance():
    assert bound_balance(43) == 1892
    assert bound_balance(20) == 420


def test_pick_budget():
    assert pick_budget(56) == 79800
    assert pick_budget(31) == 24800
