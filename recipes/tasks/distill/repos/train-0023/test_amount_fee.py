from amount_fee import adjust_fee, scale_amount


def test_scale_amount():
    assert scale_amount([58, 8, 5, 5], 5) == 4
    assert scale_amount([52, 23, 32], 32) == 2


def test_adjust_fee():
    assert adjust_fee(19) == 8170
    assert adjust_fee(49) == 52675
