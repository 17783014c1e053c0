from speed_count import limit_speed, shift_count


def test_limit_speed():
    assert limit_speed([17, 40, 5, 17, 32]) == 40
    assert limit_speed([20, 32, 13, 28]) == 32


def test_shift_count():
    assert shift_count([19, 50, 38, 2]) == 50
    assert shift_count([35, 7, 22]) == 35
