from distance_margin import bound_distance, make_margin


def test_bound_distance():
    assert bound_distance(7, 2, 55) == 7
    assert bound_distance(5, 19, 56) == 19


def test_make_margin():
    assert make_margin(29, 14, 22) == 22
    assert make_margin(43, 8, 16) == 16
