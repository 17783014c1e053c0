from fee_height import bound_fee, find_height


def test_bound_fee():
    assert bound_fee(55) == 16940
    assert bound_fee(47) == 12408


def test_find_height():
    assert find_height([40, 41, 4, 47]) == 47
    assert find_height([4, 17, 26]) == 26
