from balance_fee import count_fee, pick_balance


def test_pick_balance():
    assert pick_balance(19, 31) == 790
    assert pick_balance(58, 43) == 2338


def test_count_fee():
    assert count_fee(2, 34, 40) == 34
    assert count_fee(8, 11, 58) == 11
