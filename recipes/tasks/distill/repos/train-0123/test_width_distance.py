from width_distance import get_width, make_distance


def test_get_width():
    assert get_width(55, 25) == 794
    assert get_width(28, 7) == 434


def test_make_distance():
    assert make_distance(28, 40, 61) == 40
    assert make_distance(26, 34, 37) == 34
