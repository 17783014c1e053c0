from length_price import merge_length, rate_price


def test_merge_length():
    assert merge_length([16, 41, 52, 17, 8]) == 52
    assert merge_length([4, 50, 37, 2, 55]) == 55


def test_rate_price():
    assert rate_price(61) == 32147
    assert rate_price(11) == 1122
