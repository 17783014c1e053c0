from speed_price import merge_price, rate_speed


def test_rate_speed():
    assert rate_speed([52, 22, 17, 22]) == 52
    assert rate_speed([34, 59, 20, 4]) == 59


def test_merge_price():
    assert merge_price(35, 49) == 38
    assert merge_price(52, 50) == 2
