from budget_fee import get_budget, make_fee


def test_get_budget():
    assert get_budget(13, 17) == 628
    assert get_budget(2, 11) == 128


def test_make_fee():
    assert make_fee([26, 23, 19, 35, 47]) == 47
    assert make_fee([26, 2, 50, 46, 40]) == 50
