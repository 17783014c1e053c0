from speed_amount import find_speed, grow_amount


def test_find_speed():
    assert find_speed(14, 16) == 408
    assert find_speed(50, 44) == 1444


def test_grow_amount():
    assert grow_amount(13, 10) == 335
    assert grow_amount(53, 7) == 1332
