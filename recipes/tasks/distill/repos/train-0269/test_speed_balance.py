from speed_balance import scale_balance, scale_speed


def test_scale_speed():
    assert scale_speed(37, 22) == 952
    assert scale_speed(61, 34) == 1540


def test_scale_balance():
    assert scale_balance(10, 25) == 345
    assert scale_balance(17, 40) == 584
