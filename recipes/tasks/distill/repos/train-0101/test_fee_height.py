from fee_height import bound_height, get_fee


def test_get_fee():
    assert get_fee(19) == 6650
    assert get_fee(61) == 66185


def test_bound_height():
    assert bound_height(19) == 1330
    assert bound_height(5) == 105
