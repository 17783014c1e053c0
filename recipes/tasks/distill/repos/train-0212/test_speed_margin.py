from speed_margin import get_margin, grow_speed


def test_grow_speed():
    assert grow_speed(31, 31) == 0
    assert grow_speed(5, 23) == 40


def test_get_margin():
    assert get_margin(43, 35) == 1368
    assert get_margin(55, 4) == 1709
