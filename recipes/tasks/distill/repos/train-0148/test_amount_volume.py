from amount_volume import bound_amount, make_volume


def test_bound_amount():
    assert bound_amount(2, 53) == -4
    assert bound_amount(28, 2) == 541


def test_make_volume():
    assert make_volume(40, 14) == 2094
    assert make_volume(47, 52) == 2496
