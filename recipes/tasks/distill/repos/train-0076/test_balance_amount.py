from balance_amount import mix_balance, sum_amount


def test_mix_balance():
    assert mix_balance(43, 46) == 56
    assert mix_balance(26, 40) == 56


def test_sum_amount():
    assert sum_amount(22) == 2783
    assert sum_amount(23) == 3036
