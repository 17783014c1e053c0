from speed_stock import merge_speed, rate_stock


def test_merge_speed():
    assert merge_speed(59) == 49560
    assert merge_speed(28) == 11368


def test_rate_stock():
    assert rate_stock(49, 7, 44) == 44
    assert rate_stock(29, 10, 14) == 14
