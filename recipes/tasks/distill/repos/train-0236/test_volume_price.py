from volume_price import bound_volume, mix_price


def test_bound_volume():
    assert bound_volume(53) == 11448
    assert bound_volume(4) == 80


def test_mix_price():
    assert mix_price(49) == 50225
    assert mix_price(40) == 33620
