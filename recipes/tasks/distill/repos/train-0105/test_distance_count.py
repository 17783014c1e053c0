from distance_count import grow_count, shift_distance


def test_shift_distance():
    assert shift_distance(47, 20, 37) == 37
    assert shift_distance(38, 2, 59) == 38


def test_grow_count():
    assert grow_count(35, 4, 5) == 5
    assert grow_count(52, 44, 55) == 52
