from amount_balance import adjust_balance, scale_amount


def test_scale_amount():
    assert scale_amount(35) == 36540
    assert scale_amount(56) == 92568


def test_adjust_balance():
    assert adjust_balance(8, 47, 61) == 47
    assert adjust_balance(40, 22, 47) == 40
