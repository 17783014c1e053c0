from volume_price import adjust_volume, count_price


def test_adjust_volume():
    assert adjust_volume([26, 31, 16], 31) == 1
    assert adjust_volume([25, 11, 23, 56, 17], 23) == 3


def test_count_price():
    assert count_price(19, 25) == 10
    assert count_price(47, 31) == 16
