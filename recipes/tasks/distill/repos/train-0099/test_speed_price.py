from speed_price import merge_speed, sum_price


def test_merge_speed():
    assert merge_speed(13, 50) == 157
    assert merge_speed(53, 28) == 699


def test_sum_price():
    assert sum_price(55, 32) == 1297
    assert sum_price(50, 2) == 1152
